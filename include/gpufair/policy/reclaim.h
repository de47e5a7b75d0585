// Reclaim planning: a pending pod whose queue is within its deserved quota (or its fair share)
// fits on no node, because other queues borrowed the GPUs. planReclaim finds the fewest borrowed
// pods to evict so that ONE node can take it:
//   - victims come only from queues above what they are owed: a victim's queue must stay at or
//     above its deserved quota (and, when the reclaimer is only owed its fair share, at or above
//     the victim queue's own fair share) after the evictions; the reclaimer's queue never gives;
//   - victim order: pods labelled borrowed (gpufair.io/over-quota) before unlabelled pods of an
//     over-quota queue (placed before gpufair, or by another scheduler); then the queue most above
//     its fair share; then the youngest pods (status.startTime, else creation time);
//   - pods that have run for less than their queue's reclaimMinRuntime are protected (a pod with
//     no known start time counts as having run long enough: cluster files may omit it);
//   - the GPU pods of a gang (label gpufair.io/gang, same namespace) are evicted together or not
//     at all;
//   - terminating pods, pods already being evicted (options.releasing) and pods spared by the
//     caller (a PodDisruptionBudget refused them) are never chosen.
// Every candidate node is worked out on an undo log (undo_log.h: checkpoint / rollback, as KAI's
// Statement does): victims are evicted virtually, and each node's what-if is rolled back; only the
// best node's victims become the plan.
// Among nodes, the plan with the fewest unlabelled victims wins, then the fewest evicted pods, then
// the one whose victims rank first in the order above, then the fewest GPUs freed, then the node
// name. Deterministic.
//
// Speed: nodes whose free GPUs plus everything reclaimable on them cannot reach the request are
// pruned from per-queue totals without looking at pods; the others are visited in order of a lower
// bound on the evictions they need, and the search stops when that bound exceeds the best plan.
// Nodes are never copied: a node without fractional pods is checked arithmetically (exactly), other
// nodes by rebuilding only that node's state without the victims.
//
// Pure: no I/O, clock or logging; `now` comes in with the options.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

struct ReclaimOptions {
  Timestamp now{};
  // Pods whose eviction was accepted but which still show in the snapshot (the watch has not
  // deleted them yet): they hold no GPUs for this plan, count for nothing in their queues, and are
  // never chosen again.
  std::vector<PodPtr> releasing;
  // Pods not to choose (uids): their eviction was refused (PodDisruptionBudget) or failed.
  std::set<std::string, std::less<>> spared;
  // Nodes not to plan on: held for another reclaimer.
  std::set<std::string, std::less<>> excludedNodes;
  // Pods that will soon hold GPUs in their queues (reclaimers waiting for the GPUs freed for
  // them): their requests count as allocated to their queues.
  std::vector<PodPtr> promised;
};

struct ReclaimVictim {
  PodPtr pod;
  // For the victim's Event: "Reclaimed by queue team-b: team-a is 20 GPUs over its fair share of
  // 20"
  std::string reason;
};

struct ReclaimPlan {
  std::string node;       // the node the reclaimer will fit on
  std::string reclaimer;  // pod key ns/name
  std::string reclaimerUid;
  std::string queue;                   // the reclaimer's queue
  MilliGpu gpus = 0;                   // what the reclaimer asks for
  std::vector<ReclaimVictim> victims;  // in eviction order (gang members next to each other)
  MilliGpu freedOnNode = 0;            // GPUs the victims free on `node`
  std::string reason;                  // one sentence for logs and the reclaimer's Event
};

struct ReclaimOutcome {
  enum class Kind {
    kPlanned,      // plan is set
    kNotNeeded,    // the pod fits on a node now
    kNotEligible,  // the pod's queue is not owed these GPUs (or the pod asks for none)
    kNoPlan,       // owed, but no node can be freed within the rules
  };
  Kind kind = Kind::kNoPlan;
  std::optional<ReclaimPlan> plan;
  std::string reason;  // why, in words (also for kPlanned: plan->reason)
};
const char* reclaimKindName(ReclaimOutcome::Kind kind);

// What a queue is owed before others may keep borrowing from it: its fair share (fair_share.h).
// Victim ordering ranks queues by how far above it they are.
MilliGpu owedGpus(const QueueState& queue);

// The pod's queue must be owed the pod's GPUs: allocated (plus promised) + pod.gpus within deserved
// or within its fair share.
ReclaimOutcome planReclaim(const ClusterSnapshot& snapshot, const Pod& pod,
                           const ReclaimOptions& options);

// Pods planReclaim cannot tell apart: on one snapshot with one set of options, pods with the same
// non-empty key get the same kind of outcome with the same reason (reasons do not name the pod),
// and plans on the same node with the same victims. The key holds what the planner reads of the
// pod: its queue, what it asks for (GPUs, share, models; CPU and memory when the snapshot's fit
// checks them) and its queue's fair share with it counted. Empty (no class) for a pod the planner
// reads more of: bound, in a gang, the holder of a reservation (it may use what is held for it), or
// among options.promised. A caller planning for many pods (the reclaim loop) plans once per key
// while nothing changes.
std::string reclaimClassKey(const ClusterSnapshot& snapshot, const Pod& pod,
                            const ReclaimOptions& options);

}  // namespace gpufair::policy
