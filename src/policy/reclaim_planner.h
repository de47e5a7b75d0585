// Internals of reclaim planning: the queue table, victim units and the planner of one planReclaim
// call. Its victim side (queues, pods being evicted, evictable pods, gangs, units, the first
// screening pass) lives in reclaim_victims.cc; the what-if per node (on the undo log), the search
// over nodes and the plan in reclaim.cc.
// Thread-safety: one Planner per call, used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/reclaim.h"
#include "gpufair/policy/undo_log.h"

namespace gpufair::policy::reclaim_detail {

struct QueueInfo {
  const QueueState* state = nullptr;
  std::string_view name;
  MilliGpu allocated = 0;  // allocated, less pods being evicted, plus promised reclaimers
  MilliGpu owed = 0;       // fair share, else deserved
  MilliGpu floor = 0;      // as a victim, the queue may not drop below this
  bool victim = false;     // may give GPUs in this plan
  std::chrono::seconds minRuntime{0};
  // Queue trees: the queues a pod of this queue gives from (itself and its ancestors below the
  // lowest one it shares with the reclaimer), and the one of them it ranks by: the ancestor just
  // below that common one (the queue itself when flat).
  std::vector<int> gives;
  int rankBy = -1;
  int priority = 0;

  // GPUs held by pods labelled borrowed. Unlabelled pods of the queue may give only what its
  // excess over the floor leaves beyond those: the labeller keeps the label on exactly the pods
  // beyond deserved, so unlabelled pods are the in-quota ones, unless the queue's pods were placed
  // without gpufair (no labels at all).
  MilliGpu labelled = 0;
  // allocated - overQuota in the undo log once releasing and promised pods are applied: what the
  // plan has taken from unlabelled pods is this less the log's current allocated - overQuota.
  MilliGpu unlabelledBase = 0;

  MilliGpu headroom() const { return allocated > floor ? allocated - floor : 0; }
  MilliGpu unlabelledHeadroom() const { return headroom() > labelled ? headroom() - labelled : 0; }
  MilliGpu excess() const { return allocated - owed; }  // may be negative
};

// What evicting something frees on the node being planned.
struct Freed {
  MilliGpu gpus = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;

  Freed& operator+=(const Freed& o) {
    gpus += o.gpus;
    cpu += o.cpu;
    memory += o.memory;
    return *this;
  }
  Freed& operator-=(const Freed& o) {
    gpus -= o.gpus;
    cpu -= o.cpu;
    memory -= o.memory;
    return *this;
  }
};

// One eviction decision: a pod, or every running member of its gang.
struct Unit {
  std::vector<PodPtr> members;                 // sorted by uid
  std::vector<std::pair<int, MilliGpu>> cost;  // GPUs taken from each queue (index, amount)
  std::vector<std::pair<int, MilliGpu>> unlabelledCost;  // of cost, by pods not labelled borrowed
  Freed here;                                            // freed on the node being planned
  std::optional<Timestamp> youngest;  // latest start among members; none: unknown
  int queue = -1;                     // its queue (of the largest cost); ranks by its rankBy
  bool borrowed = true;               // every member is labelled over-quota
  MilliGpu gpus = 0;                  // GPUs of all members
};

// The rank of a unit in victim order: pods labelled borrowed (gpufair.io/over-quota, set at bind
// and removed once a pod fits within deserved) first, then the lowest queue priority, then the
// queue most above what it is owed, then the youngest, then uid. Priority, excess and queue are
// those of the queue the unit ranks by (QueueInfo::rankBy). `excess` is passed in because it
// changes as the plan evicts.
struct Rank {
  bool borrowed = false;
  int priority = 0;
  MilliGpu excess = 0;
  std::string_view queue;
  std::optional<Timestamp> youngest;
  std::string_view uid;
};
// true when a goes before b.
bool ranksBefore(const Rank& a, const Rank& b);

std::string gpusText(MilliGpu m);
std::optional<Timestamp> startOf(const Pod& pod);  // status.startTime, else creation
Freed freedBy(const Pod& pod);

struct Candidate {
  const NodeState* node = nullptr;
  std::size_t index = 0;  // in snapshot.nodes()
  // Every GPU whole-used or free and not overcommitted: fit is decided on totals (exactly as
  // nodeFits would); otherwise on the node rebuilt without the victims.
  bool simple = false;
  MilliGpu blocked = 0;  // whole GPUs reserved here for others (reservation.h)
  int bound = 0;         // fewest pods whose eviction could free enough (gangs and headroom aside)
  Rank optimistic;       // no unit on this node ranks before this
  Freed releasing;
  std::vector<PodPtr> releasingPods;
  std::vector<Unit> units;  // filled only when the node is evaluated
};

struct NodePlan {
  const Candidate* candidate = nullptr;
  std::vector<const Unit*> units;  // in victim order
  int pods = 0;
  int unlabelled = 0;  // pods not labelled borrowed (their queue is over, but they were not told)
  Freed freed;
};

class Planner {
 public:
  Planner(const ClusterSnapshot& snapshot, const Pod& pod, const ReclaimOptions& options)
      : snap_(snapshot), pod_(pod), options_(options), log_(snapshot) {}

  ReclaimOutcome run();

 private:
  ReclaimOutcome outcome(ReclaimOutcome::Kind kind, std::string reason) const {
    ReclaimOutcome out;
    out.kind = kind;
    out.reason = std::move(reason);
    return out;
  }
  // The steps of run(): eligibility, queues and floors (an outcome when not eligible); the
  // candidate nodes (an outcome when the pod fits already); the best plan over them; the refusal.
  std::optional<ReclaimOutcome> prepare();
  std::optional<ReclaimOutcome> findCandidates(std::vector<Candidate>& candidates,
                                               MilliGpu* reachable);
  std::optional<NodePlan> search(std::vector<Candidate>& candidates, MilliGpu* reachable);
  ReclaimOutcome noPlan(MilliGpu reachable) const;
  void buildQueues();
  void noteReleasing();
  int queueOf(const Pod& pod) const {
    auto it = queueIndex_.find(pod.queue);
    return it == queueIndex_.end() ? -1 : it->second;
  }
  bool isProtected(const Pod& pod, int queue) const;
  // First pass over a node's pods: the lower bound and the optimistic rank; false when even
  // evicting everything allowed cannot free enough.
  bool screen(Candidate& c, MilliGpu* reachable);
  // Whether `pod` may be a victim on its own (gang aside); counts why not.
  bool evictable(const Pod& pod);
  std::optional<Unit> unitFor(const PodPtr& pod, const NodeState& node);
  const std::vector<PodPtr>& gangMembers(const std::string& key);
  void collect(const NodeState& node, Candidate& candidate);
  // The what-if on one node, on the undo log: evictions are undone by rolling back to a mark.
  MilliGpu consumed(int queue) const;            // GPUs the plan took from the queue so far
  MilliGpu consumedUnlabelled(int queue) const;  // of those, from pods not labelled borrowed
  MilliGpu excessNow(int queue) const;           // the queue's excess after those
  bool canEvict(const Unit& unit) const;         // within every queue's headroom
  void evict(const Unit& unit);
  void restore(const Unit& unit);                  // undoes an earlier evict of this unit
  bool fitsNow(const Candidate& candidate) const;  // the pod fits there after the evictions
  std::optional<NodePlan> evaluate(const Candidate& candidate, bool bySize);
  Rank staticRank(const Unit& unit) const;
  int rankQueue(const Unit& unit) const {
    return queues_[static_cast<std::size_t>(unit.queue)].rankBy;
  }
  void linkTree();  // QueueInfo::gives and rankBy, once the reclaimer is known
  std::vector<std::pair<int, MilliGpu>> upTheTree(
      const std::vector<std::pair<int, MilliGpu>>& costs) const;
  bool better(const NodePlan& a, const NodePlan& b) const;
  ReclaimPlan commit(const NodePlan& plan) const;
  std::string victimReason(const Pod& victim) const;

  const ClusterSnapshot& snap_;
  const Pod& pod_;
  const ReclaimOptions& options_;
  std::vector<QueueInfo> queues_;
  std::unordered_map<std::string_view, int> queueIndex_;
  int reclaimer_ = -1;
  bool inQuota_ = false;
  bool anyVictimQueue_ = false;  // some queue other than the reclaimer's may give GPUs
  bool anyTree_ = false;         // some queue gives from an ancestor too
  std::unordered_set<std::string_view> releasingUids_;
  std::unordered_map<std::string_view, std::vector<PodPtr>> releasingByNode_;
  std::optional<std::unordered_map<std::string, std::vector<PodPtr>>> gangs_;
  std::unordered_set<std::string_view> protected_;  // uids seen protected by reclaimMinRuntime
  std::unordered_set<std::string_view> sparedSeen_;
  std::vector<MilliGpu> sizes_;  // scratch for screen()
  UndoLog log_;  // releasing pods removed and promised pods charged; each node's plan rolled back
};

}  // namespace gpufair::policy::reclaim_detail
