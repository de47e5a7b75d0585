// DecisionEvents: the state::DecisionObserver port in a cluster. The webhooks' decisions a person
// should see become pod Events (the recorder queues, de-duplicates and rate-limits them):
//   Warning GpufairUnschedulable  /filter left the pod no node (the first reason in words)
//   Normal  GpufairBorrowed       /bind placed the pod over its queue's deserved quota
// Thread-safety: thread-safe (EventRecorder::record() is); called on the server's io threads.
#pragma once

#include <string>

#include "gpufair/k8s/events.h"
#include "gpufair/state/ports.h"

namespace gpufair::k8s {

class DecisionEvents final : public state::DecisionObserver {
 public:
  // The recorder must outlive this object.
  explicit DecisionEvents(EventRecorder& recorder) : recorder_(recorder) {}

  void rejected(const policy::Pod& pod, const std::string& reason) override;
  void borrowed(const policy::Pod& pod, const std::string& node, const std::string& queue) override;

 private:
  EventRecorder& recorder_;
};

}  // namespace gpufair::k8s
