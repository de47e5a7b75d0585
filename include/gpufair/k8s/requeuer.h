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
// spec.schedulerName is the one gpufair serves and that kube-scheduler tried and failed to place
// (condition PodScheduled False, as the pod reflector saw it: SchedulingFailures). A pod without
// that condition was not tried yet: it is in kube-scheduler's active queue and needs no write (at
// start-up in a cluster whose pods no scheduler has tried, that is every pod, and each write would
// cost a PATCH and a watch event while the first pods are scheduled). A cycle under way at the
// rise reports its failure just after it, so the pods pending at the rise without the condition
// are watched for `watchFor`: one that shows the condition within that time is touched too (a pod
// gpufair refuses just after the rise may thus be retried once more; harmless). Without a
// SchedulingFailures every pending pod counts as failed. When: every rise of `consistent` (the
// first complete view, and the end of every relist); the pods are touched a batch per tick, leader
// only (another replica's kube-scheduler does not schedule, so its gpufair does not write).
//
// Thread-safety: Requeuer: tick() from one thread (the main loop); pending() from any.
// SchedulingFailures is thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>

#include "gpufair/common/clock.h"
#include "gpufair/k8s/client.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::k8s {

inline constexpr const char* kRequeuedAtAnnotation = "gpufair.io/requeued-at";

// The uids of the pods whose latest state (from the pod reflector) has PodScheduled False.
class SchedulingFailures {
 public:
  void set(const std::string& uid, bool failed);
  void erase(const std::string& uid);
  void replace(std::unordered_set<std::string> failed);  // after a list
  bool contains(const std::string& uid) const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> failed_;  // GUARDED_BY(mu_)
};

struct RequeuerOptions {
  std::string schedulerName = "gpufair";
  std::size_t perTick = 50;  // pods touched per tick at most (the API server's fair share)
  std::chrono::milliseconds timeout{5'000};
  std::chrono::seconds watchFor{30};  // after a rise, for pods whose failure is reported late
  // Which pods kube-scheduler failed to place; null: every pending pod counts as failed.
  std::shared_ptr<const SchedulingFailures> failures;
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
  // Queues the pods that failed (not yet queued); with watch, starts watching the others.
  void enqueue(const policy::ClusterSnapshot& snapshot, bool watch);
  void queueLocked(const policy::Pod& pod);  // REQUIRES(mu_)
  bool failed(const policy::Pod& pod) const;

  KubeClientPtr client_;
  ClockPtr clock_;
  RequeuerOptions options_;
  bool wasConsistent_ = false;  // used by tick()'s thread only
  // Pods pending at the latest rise without the condition, watched until watchUntil_.
  std::unordered_set<std::string> watched_;  // used by tick()'s thread only
  Timestamp watchUntil_{};                   // used by tick()'s thread only
  mutable std::mutex mu_;
  std::deque<Target> queue_;      // GUARDED_BY(mu_)
  std::set<std::string> queued_;  // uids in queue_; GUARDED_BY(mu_)
  std::size_t touched_ = 0;       // GUARDED_BY(mu_)
};

}  // namespace gpufair::k8s
