// LeaderElector: one gpufair replica at a time writes (reclaim evictions, Events, label cleanup);
// the others answer webhooks from their own mirrors. Leadership is a coordination.k8s.io/v1 Lease
// in gpufair's namespace, with client-go's semantics and kube-scheduler's defaults:
//   - a candidate takes the Lease when it is absent, when its holder is empty (released), or when
//     its record has not changed for leaseDurationSeconds as observed on the local clock (the
//     holder's clock is never trusted); taking it from another holder adds one to leaseTransitions;
//   - every write is a PUT with the resourceVersion read (optimistic concurrency): of two
//   candidates
//     only one wins; a 409 means re-read and decide again;
//   - the leader renews every retryPeriod; when it has not renewed for renewDeadline, or it sees
//     another holder, it stops leading AT ONCE: isLeader() turns false before anything else (and is
//     false as soon as renewDeadline has passed since the last renewal, even if the loop is stuck
//     in a request), then onStoppedLeading runs;
//   - release() (on SIGTERM) empties holderIdentity with leaseDurationSeconds 1, so that another
//     replica takes over at its next retry rather than after a full lease duration.
//
// Follow mode (followHolderPrefix set): the elector never writes; it reads the Lease ns/name that
// another component elects with (kube-scheduler's, whose identity is "HOSTNAME_uuid") and leads
// exactly while that Lease is held by an identity starting with the prefix (this pod's hostname
// + "_": the kube-scheduler beside it) and its record is fresh (changed within its
// leaseDurationSeconds, on the local clock). So the replica whose kube-scheduler schedules, and
// calls its own gpufair's webhooks, is the replica whose gpufair writes labels, Events and
// evictions and holds GPUs for reclaim: the two cannot lead apart. A read that fails for
// renewDeadline ends leadership as a failed renewal does.
//
// Thread-safety: run() on one thread; stop(), release(), isLeader(), leader() from any thread.
// tick() and release() are serialised. Callbacks run on the thread of run() (or of release()) and
// must not call tick() or release().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gpufair/common/clock.h"
#include "gpufair/common/status.h"
#include "gpufair/k8s/api.h"
#include "gpufair/k8s/client.h"

namespace gpufair::k8s {

struct LeaderElectorOptions {
  std::string ns = "gpufair-system";
  std::string name = "gpufair";
  std::string identity;  // empty: hostname + "_" + random
  std::chrono::milliseconds leaseDuration{15'000};
  std::chrono::milliseconds renewDeadline{10'000};
  std::chrono::milliseconds retryPeriod{2'000};
  std::function<void()> onStartedLeading;
  std::function<void()> onStoppedLeading;
  std::function<void(const std::string& holder)> onNewLeader;  // holder seen changing ("" none)
  // Non-empty: follow mode (see above) on the Lease ns/name, e.g. hostname + "_".
  std::string followHolderPrefix;
};

class LeaderElector {
 public:
  // Throws std::invalid_argument when the durations are inconsistent (start-up config error):
  // leaseDuration > renewDeadline > retryPeriod > 0 is required.
  LeaderElector(KubeClientPtr client, ClockPtr clock, LeaderElectorOptions options = {});
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Calls tick() every retryPeriod (with jitter while a candidate) until stop(). Never throws.
  void run();
  // run() on a thread of the elector's own; stop() joins it.
  void start();
  // Ends run() (within one request timeout at most). Does not release the Lease.
  void stop();
  // One round: acquire or renew. Returns isLeader() afterwards. run() calls it; tests too.
  bool tick();
  // Gives the Lease up if we hold it: isLeader() false, onStoppedLeading, then holderIdentity ""
  // and leaseDurationSeconds 1. Call after stop() on shutdown.
  Status release();

  bool isLeader() const;
  const std::string& identity() const { return options_.identity; }
  std::string leader() const;  // the holder last observed, "" when none

  // "HOSTNAME_" + 16 random hex digits.
  static std::string defaultIdentity();

 private:
  // Reads the Lease and takes or renews it when allowed. True when we hold it afterwards.
  enum class Attempt { kHeld, kHeldByOther, kFailed };
  Attempt tryAcquireOrRenew(Timestamp now);
  // Follow mode: reads the followed Lease; kHeld while its holder is ours and fresh.
  Attempt follow(Timestamp now);
  // Writes our record over `current` (nullopt: create). True on success.
  bool write(const std::optional<Lease>& current, Timestamp now, bool& conflict);
  void observe(const Lease& lease, Timestamp now);
  void becomeLeader(Timestamp now);
  void loseLeadership(const std::string& why);
  std::chrono::milliseconds requestTimeout(Timestamp now) const;
  bool renewedWithin(Timestamp now) const;

  KubeClientPtr client_;
  ClockPtr clock_;
  LeaderElectorOptions options_;

  std::atomic<bool> leading_{false};
  std::atomic<std::int64_t> lastRenew_{0};  // Timestamp of the last successful write, in ns

  std::mutex opMu_;  // serialises tick() and release(); lock order: opMu_, then infoMu_
  std::optional<Lease> observed_;  // GUARDED_BY(opMu_) the Lease as last read or written
  Timestamp observedTime_{};       // GUARDED_BY(opMu_) when its record last changed (local clock)

  mutable std::mutex infoMu_;
  std::string holder_;  // GUARDED_BY(infoMu_)

  std::mutex stopMu_;
  std::condition_variable stopCv_;
  bool stopped_ = false;  // GUARDED_BY(stopMu_)
  std::thread thread_;
};

}  // namespace gpufair::k8s
