// Quota admission: may this pod's queue take `pod.gpus` more GPUs now?
//   within deserved            -> admitted;
//   beyond limit               -> UnschedulableAndUnresolvable (no node can help);
//   between deserved and limit -> admitted as borrowed (over quota) only while idle GPUs exist:
//                                 free GPUs not needed by other queues' unmet in-quota demand.
// Pure: reads the snapshot only.
#pragma once

#include "gpufair/common/status.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

struct Admission {
  Status status;  // Success, Unschedulable or UnschedulableAndUnresolvable, with the reason
  bool overQuota = false;  // admitted as borrowed
  std::string queue;       // the queue charged
};

// The pod is assumed not yet counted in its queue's allocation (it is pending).
Admission admit(const ClusterSnapshot& snapshot, const Pod& pod);

// Node-level fit: the node exists, takes new pods and has `pod.gpus` free.
Status fitsNode(const NodeState& node, const Pod& pod);

}  // namespace gpufair::policy
