// Consolidation planning: repairs fragmentation that already happened. A pending pod whose queue
// admits it waits although enough GPUs are free in total, because no single node has them (jobs
// left in any order, pods placed before gpufair, reclaim). planConsolidation finds the fewest
// moves of movable pods that make room for it on ONE node, such that every moved pod fits again
// elsewhere:
//   - movable: pods labelled gpufair.io/movable: "true" (the workload resumes from a checkpoint)
//     and borrowed pods (gpufair.io/over-quota), that have a controller to recreate them
//     (Pod::controller: a Job or ReplicaSet; a bare pod evicted would be gone). Nothing else ever
//     moves, so no pod within its queue's quota is touched unless its workload says it may be;
//   - a move keeps every quota as it is (the pod comes back in the same queue); pods that have
//     run for less than their queue's reclaimMinRuntime, terminating pods, pods already being
//     moved (options.releasing) and pods spared by the caller (a PodDisruptionBudget refused
//     them) never move; the GPU pods of a gang (label gpufair.io/gang) move together or not at
//     all;
//   - the waiting pod must be admitted by its queue now (admission.h: admit) and must fit on no
//     node now; the target node must take new pods and have a GPU model it allows; movers fit
//     again (GPU model, reservations) on other nodes, never on the target and never on excluded
//     nodes;
//   - CPU and memory: the waiting pod on its target and every mover on its destination must fit
//     by CPU and memory too, after the moves. Always when the snapshot's fit options check them
//     (offline); else (serve leaves them to kube-scheduler) wherever the node's allocatable CPU
//     (memory) is known, i.e. non-zero, counting the pods the snapshot holds, so that a mover's
//     replacement is not steered to a node kube-scheduler would refuse. A pod whose GPUs are free
//     on a node that lacks its CPU or memory does not wait on GPU fragmentation (kNotFragmented,
//     when no node lacks GPUs for it);
//   - preference: the fewest pods moved, then the fewest GPUs moved, then the youngest movers
//     (least work lost), then the target node's name. Deterministic.
// A pod asking for a share of one GPU is planned too: it waits on fragmentation when the GPUs it
// may use have its share free in total but no one GPU has; moves free room on one GPU of a target.
// Gang members waiting are not planned one by one here (a gang is admitted whole by gang.h):
// planGangConsolidation plans the gang. Reclaim (reclaim.h) is the caller's first resort:
// consolidation moves pods only when reclaim cannot serve the pod.
//
// Every what-if runs on an undo log (undo_log.h): movers are taken off, the waiting pod's GPUs
// reserved on the target, movers placed best fit elsewhere; each try is rolled back.
//
// Speed (bounded search): one pass over the nodes finds whether the pod fits, what is free in
// total, and for every possible target the GPUs it lacks. Targets are taken in order of the GPUs
// they lack (fewest first), their movable pods looked at only then: a lower bound on the movers
// needed (largest first) skips targets that cannot beat the best plan, and subsets of movers are
// tried best first until one cannot beat it. The search stops after maxScreened targets looked
// at, maxTargets worked out exactly or maxTries what-ifs; so at scale the plan is the best among
// the targets lacking the least, not always the best in the cluster. Subsets hold at most
// maxMoves pods.
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

struct ConsolidationOptions {
  Timestamp now{};
  // Pods being moved (evicted, still shown until the watch deletes them): they hold no GPUs for
  // this plan and never move again.
  std::vector<PodPtr> releasing;
  // Pods not to move (uids): their eviction was refused (PodDisruptionBudget) or failed.
  std::set<std::string, std::less<>> spared;
  // Nodes held for other plans: neither a target nor a destination.
  std::set<std::string, std::less<>> excludedNodes;
  int maxMoves = 4;       // pods moved by one plan (a gang counts all its members)
  int maxScreened = 512;  // target nodes whose movable pods are looked at
  int maxTargets = 256;   // target nodes worked out exactly
  int maxTries = 20000;   // exact what-ifs (subsets of movers) over all targets
};

struct ConsolidationMove {
  PodPtr pod;
  std::string from;
  std::string to;
  // For the mover's Event: "moved to make room for team-b/big (8 GPUs)".
  std::string reason;
};

struct ConsolidationPlan {
  std::string node;     // the node the waiting pod will fit on
  std::string waiting;  // pod key ns/name
  std::string waitingUid;
  std::string queue;                     // the waiting pod's queue
  MilliGpu gpus = 0;                     // what the waiting pod asks for
  std::vector<ConsolidationMove> moves;  // in eviction order (gang members next to each other)
  MilliGpu movedGpus = 0;
  std::string reason;  // one sentence for logs, explain and the waiting pod's Event
};

struct ConsolidationOutcome {
  enum class Kind {
    kPlanned,        // plan is set
    kNotNeeded,      // the pod fits on a node now
    kNotEligible,    // not a pod consolidation serves (no GPUs, fractional, gang member,
                     // bound) or its queue does not admit it now
    kNotFragmented,  // not enough GPUs free in total on nodes it may use: moving cannot help
    kNoPlan,         // fragmented, but no moves within the rules make room
  };
  Kind kind = Kind::kNoPlan;
  std::optional<ConsolidationPlan> plan;
  std::string reason;  // why, in words (also for kPlanned: plan->reason)

  // The pod waits on fragmentation alone: admitted, enough GPUs free in total, on no one node.
  bool fragmented() const { return kind == Kind::kPlanned || kind == Kind::kNoPlan; }
};
const char* consolidationKindName(ConsolidationOutcome::Kind kind);

// Whether consolidation may move `pod` at all (label or borrowed, and a controller), rules of the
// moment (age, gangs, PDB refusals) aside.
bool isMovable(const Pod& pod);

ConsolidationOutcome planConsolidation(const ClusterSnapshot& snapshot, const Pod& pod,
                                       const ConsolidationOptions& options);

// Pods planConsolidation cannot tell apart: on one snapshot with one set of options, pods with the
// same non-empty key get the same kind of outcome with the same reason (reasons other than a
// plan's do not name the pod). The key holds what the planner reads of the pod: its queue and what
// it asks for (GPUs, share, models, CPU, memory). Empty (no class) for a pod it reads more of:
// bound, finished or terminating, in a gang, without a queue, asking for no GPUs, the holder of a
// reservation, or not counted among the snapshot's pending pods (admission then counts it).
// A caller planning for many pods (the consolidation loop) plans once per key while nothing
// changes.
std::string consolidationClassKey(const ClusterSnapshot& snapshot, const Pod& pod);

// A waiting gang (gang.h: placed whole or not at all) that does not fit because of fragmentation:
// a plan for every member still to place, or none. The gang must be admitted whole by its queue
// (planGang's admission) and not fit now (else kNotEligible / kNotNeeded). Members are planned
// one after the other, largest first, each as planConsolidation plans a pod, on the state the
// earlier members' plans leave: their movers gone, their nodes and the movers' destinations
// excluded (so two members never share a target, which is conservative: a gang that could only
// fit two members on one freed node gets no plan). A member that fits as things are takes that
// node without moves. Members not offered yet are shaped like `member`. All the gang's moves
// together stay within options.maxMoves. Any member without a plan: kNoPlan for the gang, with
// that member's reason.
struct GangConsolidationOutcome {
  ConsolidationOutcome::Kind kind = ConsolidationOutcome::Kind::kNoPlan;
  std::string gang;                      // gang key "gang:<ns>/<name>"
  std::vector<ConsolidationPlan> plans;  // kPlanned: one per member still to place
  std::string reason;
  std::size_t moves() const;  // over all plans
};
GangConsolidationOutcome planGangConsolidation(const ClusterSnapshot& snapshot, const Pod& member,
                                               const ConsolidationOptions& options);

}  // namespace gpufair::policy
