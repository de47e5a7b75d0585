// ReclaimController: the reclaim loop. Each round (every `period`, on the leader only) it takes the
// mirror's snapshot and, for the pending pods whose queues are owed GPUs (most owed queue first,
// then the oldest pod), asks policy::planReclaim for a plan, evicts the plan's victims through an
// state::Evictor, reserves the freed GPUs on the plan's node for the reclaimer (Mirror::reserve,
// ttl holdFor), and remembers the reclaim as in flight until the reclaimer binds, disappears, or
// `holdFor` passes (then the reservation is released). Members of a gang are not reclaimers here:
// a gang is admitted whole (policy/gang.h).
//
// Rules the loop keeps:
//   - a refused eviction (PodDisruptionBudget, HTTP 429) or a failed one drops the plan: that pod
//   is
//     spared and the next plan is tried (at most maxAttempts plans per reclaimer per round);
//   - while a reclaim is in flight its node is not planned on for others, its victims count as gone
//     (they may still show, terminating, until the watch deletes them) and its reclaimer's GPUs
//     count for its queue, so nothing is evicted twice for the same need;
//   - no ping-pong: the reservation keeps every other pod, the victims' queue included, off the
//     freed GPUs while the reclaimer waits; a queue that lost pods in this round is not a
//     reclaimer again in this round;
//   - dry run: plans are made (and reported through the observer and lastDryRun()) as if executed,
//     but nothing is evicted.
//
// Life cycle: construct -> start() (a thread runs a round every period; runOnce() may also be
// called directly, as tests do, without start()) -> stop() (wakes the thread, waits for the round
// in progress, joins; idempotent; the destructor calls it). Rounds never overlap.
// Thread-safety: all public methods are thread-safe. Observer callbacks run on the round's thread,
// one at a time, with no lock of the controller's held except the round lock; they must not call
// runOnce(). Lock order: roundMu_ before mu_.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/policy/reclaim.h"
#include "gpufair/state/mirror.h"
#include "gpufair/state/ports.h"

#include "periodic_loop.h"

namespace gpufair::app {

struct ReclaimSettings {
  bool enabled = true;
  bool dryRun = false;
  std::chrono::milliseconds period{5000};
  // How long a reclaim stays in flight (its node held, its victims counted as gone) when the
  // reclaimer does not bind.
  std::chrono::seconds holdFor{120};
  int maxReclaimsPerRound = 16;  // reclaimers acted for per round
  int maxAttempts = 3;           // plans tried per reclaimer per round (refusals, failures)
};

struct ReclaimRoundStats {
  bool ran = false;  // false: disabled, or not the leader
  int owed = 0;      // pending pods whose queues are owed their GPUs
  int planned = 0;   // plans carried out (or, in dry run, made)
  int evicted = 0;   // pods evicted
  int refused = 0;   // evictions refused or failed
  int waiting = 0;   // owed pods left without a plan
  int inFlight = 0;  // reclaims in flight after the round
};

class ReclaimController {
 public:
  // isLeader null: always the leader. observer may be null; it must outlive the controller.
  ReclaimController(state::Mirror& mirror, state::Evictor& evictor, ClockPtr clock,
                    ReclaimSettings settings, std::function<bool()> isLeader = {},
                    state::ReclaimObserver* observer = nullptr);
  ~ReclaimController();
  ReclaimController(const ReclaimController&) = delete;
  ReclaimController& operator=(const ReclaimController&) = delete;

  void start();
  void stop();
  // One round now.
  ReclaimRoundStats runOnce();

  // The plans of the last dry-run round (empty outside dry run).
  std::vector<policy::ReclaimPlan> lastDryRun() const;
  ReclaimRoundStats lastRound() const;
  std::uint64_t evictionsTotal() const;
  // Pods evicted since start, by the victims' queue (for gpufair_reclaim_evictions_total{queue}).
  std::map<std::string, std::uint64_t> evictionsByQueue() const;
  const ReclaimSettings& settings() const { return settings_; }

 private:
  struct InFlight {
    policy::PodPtr reclaimer;
    std::string node;
    std::vector<policy::PodPtr> victims;
    Timestamp until{};
  };
  struct Round;

  void pruneInFlight(Timestamp now);
  enum class Result { kActed, kNotNeeded, kWaiting };
  // What a reclaimer came to. alike: it followed from its first plan alone and changed nothing
  // in the round, so every pod of its policy::reclaimClassKey comes to the same until something
  // changes (the round then plans once per class instead of once per pod).
  struct Attempt {
    Result result = Result::kNotNeeded;
    std::string reason;  // kWaiting: why, naming no pod
    bool alike = false;
  };
  // The options planReclaim sees for the round as it stands.
  static policy::ReclaimOptions optionsFor(const Round& round);
  // Tries up to maxAttempts plans for one reclaimer, starting from `options` (optionsFor).
  Attempt reclaimFor(Round& round, const policy::PodPtr& pod, policy::ReclaimOptions options);
  // Dry run: counts the plan as carried out for the rest of the round, and reports it.
  void recordDryRun(Round& round, const policy::PodPtr& pod, const policy::ReclaimPlan& plan);
  // Whether the mirror still has `pod`, unbound, not finished and not terminating.
  bool stillWaits(const policy::Pod& pod) const;
  // Evicts the plan's victims in order, adding the gone ones to `evicted`; at the first refused
  // or failed eviction, spares that victim in `options`, sets `reason` and returns false.
  bool evictVictims(Round& round, const policy::ReclaimPlan& plan, policy::ReclaimOptions& options,
                    std::vector<policy::PodPtr>& evicted, std::string& reason);
  // Reserves the plan's freed GPUs for `pod` and records the reclaim as in flight.
  void holdForReclaimer(Round& round, const policy::PodPtr& pod, const policy::ReclaimPlan& plan,
                        std::vector<policy::PodPtr> victims);

  state::Mirror& mirror_;
  state::Evictor& evictor_;
  ClockPtr clock_;
  const ReclaimSettings settings_;
  std::function<bool()> isLeader_;
  state::ReclaimObserver* observer_;

  std::mutex roundMu_;                        // held for a whole round
  std::map<std::string, InFlight> inFlight_;  // GUARDED_BY(roundMu_) by reclaimer uid
  // Pods evicted for a plan that was then dropped (a later victim was refused): still going.
  std::vector<policy::PodPtr> orphans_;  // GUARDED_BY(roundMu_)

  mutable std::mutex mu_;
  std::vector<policy::ReclaimPlan> lastDryRun_;            // GUARDED_BY(mu_)
  ReclaimRoundStats lastRound_;                            // GUARDED_BY(mu_)
  std::uint64_t evictionsTotal_ = 0;                       // GUARDED_BY(mu_)
  std::map<std::string, std::uint64_t> evictionsByQueue_;  // GUARDED_BY(mu_)
  PeriodicLoop loop_;  // last: stopped and joined before the members its rounds use go
};

}  // namespace gpufair::app
