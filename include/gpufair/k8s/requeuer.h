// Requeuer: once gpufair (re)gains a complete view of the cluster, moves the pods kube-scheduler
// parked while gpufair could not decide back into kube-scheduler's active queue.
//
// Why: the extender is not ignorable, so while gpufair starts (it refuses every node until its
// first lists are complete) or is unreachable, kube-scheduler's cycles fail and it parks the pods
// among its unschedulable pods, where they wait for a cluster event or up to 5 minutes. A change
// of the pod itself is such an event (kube-scheduler's queue moves an updated pod to its active or
// backoff queue), so the Requeuer writes one: the annotation gpufair.io/requeued-at with the time.
//
// Which pods: the pending pods of the snapshot (unbound, not finished, wanting GPUs) whose
// spec.schedulerName is the one gpufair serves. When: every rise of `consistent` (the first
// complete view, and the end of every relist); the pods are touched a batch per tick, leader only
// (another replica's kube-scheduler does not schedule, so its gpufair does not write).
//
// Thread-safety: tick() from one thread (the main loop); pending() from any.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <set>
#include <string>

#include "gpufair/common/clock.h"
#include "gpufair/k8s/client.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::k8s {

inline constexpr const char* kRequeuedAtAnnotation = "gpufair.io/requeued-at";

struct RequeuerOptions {
  std::string schedulerName = "gpufair";
  std::size_t perTick = 50;  // pods touched per tick at most (the API server's fair share)
  std::chrono::milliseconds timeout{5'000};
};

class Requeuer {
 public:
  Requeuer(KubeClientPtr client, ClockPtr clock, RequeuerOptions options = {});

  // consistent: decisions are allowed now; leader: this replica writes. Returns how many pods it
  // touched in this call.
  std::size_t tick(bool consistent, bool leader, const policy::ClusterSnapshot& snapshot);
  // Pods queued and not yet touched.
  std::size_t pending() const;
  // Pods touched since start.
  std::size_t touched() const;

 private:
  struct Target {
    std::string ns;
    std::string name;
    std::string uid;
  };
  void enqueue(const policy::ClusterSnapshot& snapshot);

  KubeClientPtr client_;
  ClockPtr clock_;
  RequeuerOptions options_;
  bool wasConsistent_ = false;  // used by tick()'s thread only
  mutable std::mutex mu_;
  std::deque<Target> queue_;      // GUARDED_BY(mu_)
  std::set<std::string> queued_;  // uids in queue_; GUARDED_BY(mu_)
  std::size_t touched_ = 0;       // GUARDED_BY(mu_)
};

}  // namespace gpufair::k8s
