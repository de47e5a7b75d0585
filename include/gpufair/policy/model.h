// The engine's view of Kubernetes objects: only what scheduling GPUs needs. Adapters (codec, k8s,
// config) fill these from API objects; the engine reads them and never sees JSON or YAML.
// Thread-safety: value types. Shared as std::shared_ptr<const T> once published in a snapshot.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "gpufair/common/clock.h"
#include "gpufair/common/quantity.h"

namespace gpufair::policy {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";
inline constexpr const char* kQueueLabel = "gpufair.io/queue";
inline constexpr const char* kOverQuotaLabel = "gpufair.io/over-quota";

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };
const char* phaseName(PodPhase phase);
PodPhase parsePhase(std::string_view text);  // unknown text -> kUnknown

using Labels = std::map<std::string, std::string, std::less<>>;

struct Pod {
  std::string uid;
  std::string ns;
  std::string name;
  std::string nodeName;       // spec.nodeName, or the node gpufair assumed at bind; empty: unbound
  std::string schedulerName;  // spec.schedulerName
  MilliGpu gpus = 0;  // effective nvidia.com/gpu request (see effectiveRequest in request.h)
  PodPhase phase = PodPhase::kPending;
  bool terminating = false;  // metadata.deletionTimestamp set
  bool overQuota = false;    // borrowed: label gpufair.io/over-quota=true
  bool assumed = false;      // placed by gpufair's bind, not yet confirmed by the API server
  std::optional<Timestamp> created;
  std::optional<Timestamp> started;  // status.startTime
  Labels labels;
  Labels annotations;
  // Queue name resolved by the mirror from the quota config (label gpufair.io/queue or namespace).
  std::string queue;

  std::string key() const { return ns + "/" + name; }
  // kube-scheduler's accounting: bound and not Succeeded/Failed holds resources, even terminating.
  bool holdsGpus() const {
    return !nodeName.empty() && phase != PodPhase::kSucceeded && phase != PodPhase::kFailed;
  }
  bool isFinished() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
};

struct Node {
  std::string name;
  MilliGpu allocatable = 0;    // status.allocatable["nvidia.com/gpu"] in milli-GPUs
  bool unschedulable = false;  // spec.unschedulable
  bool deleting = false;       // metadata.deletionTimestamp set
  Labels labels;

  bool takesNewPods() const { return !unschedulable && !deleting; }
};

}  // namespace gpufair::policy
