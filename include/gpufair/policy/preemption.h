// Quota-aware preemption: which of the victims kube-scheduler proposes may go (the /preempt verb).
//
// kube-scheduler proposes, per node, the lower-priority pods whose eviction lets the preemptor fit
// there (its own reprieve already made each set minimal). gpufair narrows that down by quota:
//
//  - A victim of another queue is *in quota* when evicting it would take its queue below its
//    deserved quota (victims of one queue are counted off in order: borrowed-labelled first, then
//    youngest, so a queue 4 GPUs over deserved gives up 4 GPUs of borrowed pods at most).
//  - When the preemptor is borrowing (its queue's allocation plus the pod, after evicting its own
//    queue's victims, exceeds deserved), in-quota victims are dropped. Borrowed work never pushes
//    out a team's guaranteed GPUs.
//  - The node is kept only if, on a copy of its state with the kept victims evicted, the preemptor
//    fits there (fitsNode) and its queue admits it (admitAfter, with the preemptor counted in its
//    fair share). Otherwise the node is dropped, with the reason.
//  - Victims of the preemptor's own queue are the team's own business and stay, as do victims
//    whose queue gpufair does not know.
//  - Prefer borrowed victims: when some kept node needs no in-quota victim, nodes that would evict
//    in-quota pods (allowed only for a preemptor within its deserved) are dropped.
//  - Unknown victims (not on that node in the snapshot: pods gpufair does not mirror, such as
//    GPU-less pods, or pods its watch has not shown yet) hold no GPUs in gpufair's accounting, so
//    quota neither protects them nor counts them free; they stay, since kube-scheduler needed them
//    for something it checks itself (CPU, memory, ports).
//  - A node never comes back without victims (kube-scheduler rejects that answer), and every kept
//    UID is one kube-scheduler proposed for that node (it fails the whole preemption otherwise).
//  - A preemptor requesting no GPUs is none of gpufair's business: proposals pass unchanged.
//  - NumPDBViolations cannot be recomputed from UIDs alone: it is passed on, capped by the number
//    of kept victims.
//
// Pure: reads the snapshot only; the what-if runs on an undo log (undo_log.h), rolled back after
// each node.
// Thread-safety: a free function over caller-owned values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

// One node's victims, as kube-scheduler proposes them (UIDs) and as gpufair answers.
struct NodeVictims {
  std::string node;
  std::vector<std::string> podUids;
  std::int64_t numPdbViolations = 0;
};

struct DroppedNode {
  std::string node;
  std::string reason;  // "victim team-b/train-3 is within queue team-b's deserved 20 GPUs ..."
};

struct PreemptionPlan {
  std::vector<NodeVictims> nodes;    // kept, in request order; every one has victims
  std::vector<DroppedNode> dropped;  // in request order, then those dropped for in-quota victims
  bool preemptorBorrowing = false;   // before any of its own queue's victims leave
};

// `preemptor.queue` must be resolved (resolveQueue) by the caller.
PreemptionPlan planPreemption(const ClusterSnapshot& snapshot, const Pod& preemptor,
                              std::span<const NodeVictims> proposed);

}  // namespace gpufair::policy
