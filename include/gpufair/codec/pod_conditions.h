// What kube-scheduler wrote in a pod's status.conditions, as far as gpufair acts on it: whether it
// tried to place the pod and could not (PodScheduled False, reason Unschedulable or SchedulerError;
// the pod then waits among kube-scheduler's unschedulable pods). Kept out of policy::Pod: the
// engine never decides on it; the requeuer (k8s) does.
// Thread-safety: free functions.
#pragma once

#include <string_view>

#include <simdjson.h>

#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"

namespace gpufair::codec {

// Whether status.conditions has type PodScheduled with status "False". Malformed conditions are
// skipped (the answer is a hint, never a decode error).
bool schedulingFailed(simdjson::dom::element pod);

// decodePodJson and schedulingFailed from one parse; `failed` is set when the pod decodes.
Result<policy::Pod> decodePodJson(std::string_view json, bool& failed);

}  // namespace gpufair::codec
