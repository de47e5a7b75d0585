#include "gpufair/k8s/decision_events.h"

namespace gpufair::k8s {

void DecisionEvents::rejected(const policy::Pod& pod, const std::string& reason) {
  recorder_.record({"Pod", "v1", pod.ns, pod.name, pod.uid, ""}, EventType::kWarning,
                   events::kUnschedulable, reason);
}

void DecisionEvents::borrowed(const policy::Pod& pod, const std::string& node,
                              const std::string& queue) {
  recorder_.record({"Pod", "v1", pod.ns, pod.name, pod.uid, ""}, EventType::kNormal,
                   events::kBorrowed,
                   "admitted over quota on " + node + ": queue " + queue +
                       " borrows idle GPUs beyond its deserved share; they may be reclaimed");
}

}  // namespace gpufair::k8s
