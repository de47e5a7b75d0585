// ConsolidationController: the consolidation loop. Each round (every `period`, on the leader only)
// it takes the mirror's snapshot and, for pending pods (oldest first) that wait on fragmentation
// alone and that reclaim cannot serve, asks policy::planConsolidation for a plan and carries it
// out:
//   - evicts the movers through a state::Evictor, in the plan's order (the Eviction API in a
//     cluster: a PodDisruptionBudget refusal spares that pod and the next plan is tried, at most
//     maxAttempts per pod per round);
//   - holds the target node's GPUs for the waiting pod (Mirror::reserve, holder its uid) and each
//     mover's destination for its replacement (holder policy::replacementHolder: the new pod its
//     Job or ReplicaSet creates, same controller and labels), for holdFor;
//   - a waiting gang (pods labelled gpufair.io/gang) gets room for every member or none
//     (policy::planGangConsolidation): all the members' movers are evicted, each member's target
//     held for the gang (holder "gang:<ns>/<name>", so the gang filter steers the members there);
//   - keeps the plan in flight until the waiting pod (every member of the gang) is placed and every
//   replacement took its
//     hold, or holdFor passes: then it gives up and releases what is still held. While in flight,
//     its target and destinations are not planned on and its movers count as gone.
// Dry run: plans are reported (observer, lastDryRun()) but nothing moves.
// The gauge "waiting on fragmentation" (lastRound().fragmented) counts pending pods admitted by
// their queue whose GPUs are free in total but on no single node, in flight or not.
// explain(): the last round's word on a pod (uid), for `gpufair explain` and logs.
//
// Life cycle and threads as ReclaimController: construct -> start() -> stop() (idempotent; the
// destructor stops); runOnce() may be called directly (tests). Rounds never overlap. All public
// methods are thread-safe; observer callbacks run on the round's thread. Lock order: roundMu_
// before mu_.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/policy/consolidation.h"
#include "gpufair/state/mirror.h"
#include "gpufair/state/ports.h"

#include "periodic_loop.h"

namespace gpufair::app {

struct ConsolidationSettings {
  bool enabled = false;
  bool dryRun = false;
  std::chrono::milliseconds period{10'000};
  // How long a plan's holds wait for the waiting pod and the replacements before it gives up.
  std::chrono::seconds holdFor{300};
  int maxPlansPerRound = 4;
  int maxAttempts = 3;
  // Reclaim runs too: pods it can serve (policy::planReclaim plans for them) are left to it.
  bool reclaimEnabled = true;
};

struct ConsolidationRoundStats {
  bool ran = false;    // false: disabled, or not the leader
  int fragmented = 0;  // pending pods waiting on fragmentation alone (in flight included)
  int planned = 0;     // plans carried out (or, in dry run, made)
  int moved = 0;       // pods evicted to be moved
  int refused = 0;     // evictions refused or failed
  int gaveUp = 0;      // plans whose holds timed out this round
  int inFlight = 0;    // plans in flight after the round
};

class ConsolidationController {
 public:
  // isLeader null: always the leader. observer may be null; it must outlive the controller.
  ConsolidationController(state::Mirror& mirror, state::Evictor& evictor, ClockPtr clock,
                          ConsolidationSettings settings, std::function<bool()> isLeader = {},
                          state::ConsolidationObserver* observer = nullptr);
  ~ConsolidationController();
  ConsolidationController(const ConsolidationController&) = delete;
  ConsolidationController& operator=(const ConsolidationController&) = delete;

  void start();
  void stop();
  ConsolidationRoundStats runOnce();

  std::vector<policy::ConsolidationPlan> lastDryRun() const;
  ConsolidationRoundStats lastRound() const;
  std::uint64_t movesTotal() const;  // pods evicted to be moved since start
  // What the last round said about the pending pod with this uid (a plan, or why none), if it
  // waited on fragmentation.
  std::optional<std::string> explain(const std::string& uid) const;
  const ConsolidationSettings& settings() const { return settings_; }
  // Called at the end of every round with its stats (on the round's thread). Set before start().
  void setRoundHook(std::function<void(const ConsolidationRoundStats&)> hook) {
    roundHook_ = std::move(hook);
  }

 private:
  struct InFlight {
    policy::ConsolidationPlan plan;      // a gang's: its first member's
    std::vector<std::string> targets;    // nodes held for the waiting pod or the gang's members
    std::vector<policy::PodPtr> movers;  // evicted, until the watch deletes them
    std::vector<std::string> holders;    // replacement holders still to be placed
    Timestamp until{};
    bool waits = true;  // the waiting pod or gang still waits (pruneInFlight)
  };
  struct Round;

  void pruneInFlight(Round& r);
  enum class Result { kActed, kSkipped, kWaiting };
  // What a waiting pod came to. alike: it followed from its first plan alone and changed nothing
  // in the round, so every pod of its policy::consolidationClassKey comes to the same until
  // something changes.
  struct Attempt {
    Result result = Result::kSkipped;
    std::string reason;       // kWaiting: why
    bool fragmented = false;  // it waits on fragmentation alone (for the round's count)
    bool alike = false;
  };
  Attempt consolidateFor(Round& r, const policy::PodPtr& pod);
  // A waiting gang (its oldest pending member): policy::planGangConsolidation, room for every
  // member or none; the targets are held for the gang (holder its gang key).
  Result consolidateGang(Round& r, const policy::PodPtr& member);
  bool waitsStill(const std::string& key) const;
  bool reclaimServes(const Round& r, const policy::Pod& pod) const;
  bool stillWaits(const policy::Pod& pod) const;
  // Evicts the plan's movers in order; at the first refusal spares that pod, sets `reason` and
  // returns false (movers already gone are in `evicted`).
  bool evictMovers(Round& r, const policy::ConsolidationPlan& plan,
                   std::vector<policy::PodPtr>& evicted, std::string& reason);
  // Holds the target for the waiting pod and the destinations of `moves` for the replacements.
  void hold(Round& r, const policy::PodPtr& pod, const policy::ConsolidationPlan& plan,
            std::vector<policy::PodPtr> evicted, bool holdTarget);

  state::Mirror& mirror_;
  state::Evictor& evictor_;
  ClockPtr clock_;
  const ConsolidationSettings settings_;
  std::function<bool()> isLeader_;
  state::ConsolidationObserver* observer_;
  std::function<void(const ConsolidationRoundStats&)> roundHook_;

  std::mutex roundMu_;  // held for a whole round
  // GUARDED_BY(roundMu_) by waiting pod uid (a gang: its gang key)
  std::map<std::string, InFlight> inFlight_;

  mutable std::mutex mu_;
  std::vector<policy::ConsolidationPlan> lastDryRun_;  // GUARDED_BY(mu_)
  ConsolidationRoundStats lastRound_;                  // GUARDED_BY(mu_)
  std::uint64_t movesTotal_ = 0;                       // GUARDED_BY(mu_)
  std::map<std::string, std::string> explained_;       // GUARDED_BY(mu_) uid -> words
  PeriodicLoop loop_;  // last: stopped and joined before the members its rounds use go
};

}  // namespace gpufair::app
