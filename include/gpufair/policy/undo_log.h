// UndoLog: a what-if over a snapshot. Plans (preemption, reclaim, gangs, consolidation) change a
// working copy of the snapshot's mutable parts: which pods are on which node (and so each node's
// GPUs, CPU and memory in use), the reservations on nodes and the queues' usage. Each change is
// recorded, so a plan can take a checkpoint, try something, and roll back to it; checkpoints nest
// (roll back to any earlier one, and every later one is gone too). Only the caller turns the
// changes it keeps into evictions, bindings or reservations: nothing here acts on the cluster.
// After KAI-Scheduler's Statement (checkpoint / rollback / commit).
//
// What the working copy keeps, per node (by index into snapshot.nodes()):
//   - used() / cpuUsed() / memoryUsed(): exact sums, as NodeState counts them (pods that hold
//   GPUs);
//   - per-GPU use (fullyFreeGpus, wholeGpusFor): a placed pod takes GPUs the way NodeState places
//     one more pod (a whole-GPU pod the emptiest GPUs, lowest index first; a fractional pod its
//     known gpuIndex, else best fit); after a removal the node's GPUs are laid out again from its
//     remaining pods (NodeState's order), then the placements replayed in order;
//   - reservations: the node's, plus those added by reserve().
// Per queue (by index into snapshot.queues()): allocated, overQuota and runningPods as the
// snapshot counts them, in the pod's queue and every ancestor (QueueState::parentIndex); pending,
// fairShare and quota stay as they were. A pod whose queue the snapshot does not know changes no
// queue.
// nodeAfter() rebuilds a node's NodeState from its pods, as the snapshot builder would: the exact
// answer for fit checks (nodeFits) on nodes with fractional or overcommitted GPUs.
//
// Cost: construction copies the queue table; a node is copied (counters, per-GPU use) the first
// time it changes; each change is O(1) plus, for removals, a lazy O(pods) re-layout of that node
// when its per-GPU use is next asked for.
// Thread-safety: not thread-safe; one plan, one thread. The snapshot must outlive the log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpufair/policy/reservation.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

// One change still in effect, as changes() and commit() report them.
struct Change {
  enum class Kind {
    kRemoved,   // `pod` left node `node`
    kRestored,  // `pod`, removed before the range reported, came back
    kPlaced,    // `pod` (nodeName set to the node) was placed on node `node`
    kCharged,   // queue `queue` was charged `gpus` without a node (a promise)
    kReserved,  // `reservation` was added on node `node`
  };
  Kind kind = Kind::kRemoved;
  std::size_t node = 0;  // index into snapshot.nodes(); unused for kCharged
  PodPtr pod;
  int queue = -1;  // kCharged: index into snapshot.queues()
  MilliGpu gpus = 0;
  Reservation reservation;
};

class UndoLog {
 public:
  using Mark = std::size_t;

  explicit UndoLog(const ClusterSnapshot& snapshot);
  ~UndoLog();
  UndoLog(const UndoLog&) = delete;
  UndoLog& operator=(const UndoLog&) = delete;

  const ClusterSnapshot& snapshot() const { return snapshot_; }

  // --- The working copy.
  std::span<const QueueState> queues() const { return queues_; }
  const QueueState& queue(int index) const { return queues_[static_cast<std::size_t>(index)]; }
  int queueIndex(std::string_view name) const;  // -1: no such queue

  MilliGpu used(std::size_t node) const;
  MilliGpu free(std::size_t node) const;  // allocatable - used, never negative
  std::int64_t cpuUsed(std::size_t node) const;
  std::int64_t memoryUsed(std::size_t node) const;
  std::int64_t cpuFree(std::size_t node) const;  // never negative
  std::int64_t memoryFree(std::size_t node) const;
  int fullyFreeGpus(std::size_t node) const;
  // NodeState::wholeGpusFor over the working copy: fully free GPUs less those reserved for others.
  int wholeGpusFor(std::size_t node, const Pod& pod) const;
  std::span<const Reservation> reservations(std::size_t node) const;
  // Whether the node differs from the snapshot's (a change on it not rolled back).
  bool changed(std::size_t node) const;
  // Whether `pod` (by uid, on pod.nodeName) is removed in the working copy.
  bool isRemoved(const Pod& pod) const;
  // The node's pods now: the snapshot's less those removed, then those placed, in that order.
  std::vector<PodPtr> podsOn(std::size_t node) const;
  // The node rebuilt from podsOn() and reservations(), as the snapshot builder would build it.
  NodeState nodeAfter(std::size_t node) const;

  // --- Changes.
  // Takes `pod`, one of the snapshot's pods, off its node (pod->nodeName): frees what it holds
  // there and in its queue. False, changing nothing, when its node is unknown, the snapshot does
  // not have it there, or it is removed already. (A pod placed by this log leaves by rollback.)
  bool removePod(const PodPtr& pod);
  // Puts back a pod removed earlier (not necessarily the latest change). False if not removed.
  bool restorePod(const Pod& pod);
  // Places `pod` on node `node` as bound and running (a copy with nodeName and phase set when
  // they differ): it takes GPUs, CPU and memory there and counts in its queue.
  void place(std::size_t node, const PodPtr& pod);
  // Charges `gpus` to queue `queue` (an index) without a node: a pod promised GPUs elsewhere.
  void chargeQueue(int queue, MilliGpu gpus);
  // Adds a reservation on its node (reservation.node); false if the node is unknown.
  bool reserve(Reservation reservation);

  // --- Undo.
  Mark checkpoint() const { return entries_.size(); }
  // Undoes every change made after `mark` (a mark from checkpoint(), taken since the last commit).
  void rollback(Mark mark);
  // The changes in effect made after `mark`, in the order made, a removal and its restore
  // cancelling out.
  std::vector<Change> changes(Mark mark = 0) const;
  // Keeps every change: returns changes(), then forgets how to undo them (rollback only reaches
  // back to this point, and marks taken before are void).
  std::vector<Change> commit();

 private:
  struct Placed {
    PodPtr pod;
    std::vector<int> gpus;  // the GPUs it took (per-GPU layout)
  };
  struct NodeWork {
    const NodeState* base = nullptr;
    std::size_t index = 0;  // in snapshot.nodes()
    MilliGpu used = 0;
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
    std::vector<PodPtr> removed;
    std::vector<Placed> placed;
    std::vector<Reservation> reservations;
    std::vector<MilliGpu> gpuUsed;  // valid unless stale
    bool stale = false;             // a removal changed the layout; recomputed when read
  };
  enum class Op : std::uint8_t { kRemove, kRestore, kPlace, kCharge, kReserve };
  struct Entry {
    Op op;
    std::int32_t work = -1;  // index into work_
    std::size_t position = 0;
    PodPtr pod;
    int queue = -1;
    MilliGpu gpus = 0;
  };

  const NodeWork* find(std::size_t node) const;
  NodeWork& touch(std::size_t node);
  void account(NodeWork& w, const Pod& pod, int sign);
  void chargeUp(int queue, MilliGpu gpus);  // the queue and its ancestors
  void takeGpus(NodeWork& w, Placed& placed) const;
  const std::vector<MilliGpu>& layout(const NodeWork& w) const;
  void undo(const Entry& e);

  const ClusterSnapshot& snapshot_;
  std::vector<QueueState> queues_;
  std::unordered_map<std::string_view, int> queueIndex_;
  std::vector<std::int32_t> slot_;  // node index -> index into work_ + 1; empty until a change
  mutable std::vector<NodeWork> work_;
  std::vector<Entry> entries_;
};

}  // namespace gpufair::policy
