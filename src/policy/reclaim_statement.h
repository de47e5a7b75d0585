// Internals of reclaim planning (reclaim.cc): the queue table, victim units and the statement on
// which one node's evictions are tried, checkpointed, rolled back and committed.
// Thread-safety: single-threaded helpers of one planReclaim call.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::reclaim_detail {

struct QueueInfo {
  const QueueState* state = nullptr;
  std::string_view name;
  MilliGpu allocated = 0;  // allocated, less pods being evicted, plus promised reclaimers
  MilliGpu owed = 0;       // fair share, else deserved
  MilliGpu floor = 0;      // as a victim, the queue may not drop below this
  bool victim = false;     // may give GPUs in this plan
  std::chrono::seconds minRuntime{0};

  // GPUs held by pods labelled borrowed. Unlabelled pods of the queue may give only what its
  // excess over the floor leaves beyond those: the labeller keeps the label on exactly the pods
  // beyond deserved, so unlabelled pods are the in-quota ones, unless the queue's pods were placed
  // without gpufair (no labels at all).
  MilliGpu labelled = 0;

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
  int queue = -1;                     // the queue it ranks by (the largest cost)
  bool borrowed = true;               // every member is labelled over-quota
  MilliGpu gpus = 0;                  // GPUs of all members
};

// The rank of a unit in victim order: pods labelled borrowed (gpufair.io/over-quota, set at bind
// and removed once a pod fits within deserved) first, then the queue most above what it is owed,
// then the youngest, then uid. `excess` is passed in because it changes as the statement evicts.
struct Rank {
  bool borrowed = false;
  MilliGpu excess = 0;
  std::string_view queue;
  std::optional<Timestamp> youngest;
  std::string_view uid;
};
// true when a goes before b.
bool ranksBefore(const Rank& a, const Rank& b);

// A what-if on one node: units are evicted virtually; checkpoint() and rollback() undo them;
// commit() freezes the chosen units. Nodes without fractional pods (and not overcommitted) are
// checked arithmetically, exactly as nodeFits would; others by rebuilding the node's state.
class Statement {
 public:
  // simple: every GPU of the node is whole-used or free and it is not overcommitted (then fit is
  // decided on totals); false always works (the node's state is rebuilt to decide).
  Statement(const NodeState& node, bool simple, const Freed& releasing,
            std::span<const PodPtr> releasingPods, const std::vector<QueueInfo>& queues,
            const FitOptions& fit);

  bool canEvict(const Unit& unit) const;  // within every queue's headroom
  void evict(const Unit& unit);
  void restore(const Unit& unit);  // undoes an earlier evict of this unit
  std::size_t checkpoint() const { return log_.size(); }
  void rollback(std::size_t checkpoint);
  bool fits(const Pod& pod) const;
  MilliGpu excessNow(int queue) const;  // the queue's excess after this statement's evictions
  // The units evicted now, in the order they were evicted.
  std::vector<const Unit*> commit() const;
  const Freed& freed() const { return freed_; }

 private:
  struct Op {
    const Unit* unit;
    bool evicted;
  };
  void apply(const Unit& unit, bool evicted);
  static MilliGpu amountOf(const std::vector<std::pair<int, MilliGpu>>& list, int queue);
  static void add(std::vector<std::pair<int, MilliGpu>>& list, int queue, MilliGpu amount);

  const NodeState& node_;
  std::span<const PodPtr> releasingPods_;
  const std::vector<QueueInfo>& queues_;
  FitOptions fit_;
  bool simple_;
  Freed freed_;                                     // by releasing pods and evicted units
  std::vector<std::pair<int, MilliGpu>> consumed_;  // per queue touched
  std::vector<std::pair<int, MilliGpu>> consumedUnlabelled_;
  std::vector<Op> log_;
};

}  // namespace gpufair::policy::reclaim_detail
