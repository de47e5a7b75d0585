// ClusterSnapshot: an immutable, consistent view of nodes, the pods on them, pending demand and
// queue quotas at one generation. The engine's functions read only this. The state module's Mirror
// builds a new snapshot after changes and shares unchanged NodeStates with the previous one.
// Thread-safety: immutable after construction; share as std::shared_ptr<const ClusterSnapshot>.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpufair/common/quota.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/node_shape.h"
#include "gpufair/policy/pending_pods.h"
#include "gpufair/policy/reservation.h"

namespace gpufair::policy {

using PodPtr = std::shared_ptr<const Pod>;

class Workload;  // fragmentation.h
using WorkloadPtr = std::shared_ptr<const Workload>;

// What node fit checks besides GPUs. The GPU model is always checked. CPU and memory only when
// asked: in a cluster kube-scheduler checks them itself (and gpufair may not see every pod), while
// an offline simulation must.
struct FitOptions {
  bool checkCpuMemory = false;
  // Whether the fragmentation measure (and so fgd's scores) counts CPU and memory even when fit
  // leaves them to kube-scheduler: a shape the node's free CPU or memory cannot hold loses all
  // the node's free GPUs. Never read by fit, filter or admission. Implied by checkCpuMemory. In
  // the measure only, a node whose allocatable CPU (memory) is 0, i.e. unknown, is not limited
  // by it.
  bool scoreCpuMemory = false;
  // The measure's view of CPU and memory: checked in fit, or only scored.
  bool measuresCpuMemory() const { return checkCpuMemory || scoreCpuMemory; }
};

// A snapshot's extras beyond nodes, pods and quotas.
struct SnapshotOptions {
  FitOptions fit{};
  // The target workload fragmentation is measured against (fgd); null: none known.
  WorkloadPtr workload;
  // Seed for strategies that choose pseudo-randomly (the engine never reads global randomness).
  std::uint64_t seed = 0;
  // Pods placed provisionally, in uid order: the state layer placed them at bind and the API
  // server has not confirmed it yet. The engine counts them like any placed pod; only reports
  // and label upkeep tell them apart, by uid. Null: none.
  std::shared_ptr<const PendingPods> provisional{};
  // The shape of each node, in the order of ClusterSnapshot::nodes() (the snapshot builder numbers
  // them, node_shape.h); null: not known, and the engine checks every node by itself. Shapes
  // whose count does not match the nodes are ignored.
  std::shared_ptr<const NodeShapes> shapes{};
};

// GPUs one queue holds on one node.
struct QueueUse {
  std::string queue;
  MilliGpu allocated = 0;
  MilliGpu overQuota = 0;  // of allocated, held by borrowed pods
  int pods = 0;
};

// Members of one gang placed (bound or assumed, holding GPUs, not terminating) on one node.
struct GangUse {
  std::string key;  // Pod::gangKey
  int pods = 0;
  MilliGpu gpus = 0;
};

// A node with the pods bound (or assumed) to it and the reservations on it. Built once per node
// generation.
// Per-GPU accounting: the node has node().gpuCount() physical GPUs. Fractional pods occupy their
// gpuIndex (or, when unknown or out of range, the best-fit GPU at that point); whole-GPU pods take
// the emptiest GPUs (lowest index among equals), after fractional pods with a known index. Pods are
// placed in uid order, so the result is deterministic.
// Thread-safety: immutable, except an internal fragmentation cache that is safe to use from
// several threads.
class NodeState {
 public:
  NodeState(Node node, std::vector<PodPtr> pods, std::uint64_t generation,
            std::vector<Reservation> reservations = {});
  ~NodeState();
  NodeState(const NodeState& other);  // copies everything but the cache
  NodeState& operator=(const NodeState& other);

  const Node& node() const { return node_; }
  const std::string& name() const { return node_.name; }
  const std::vector<PodPtr>& pods() const { return pods_; }
  std::uint64_t generation() const { return generation_; }
  MilliGpu allocatable() const { return node_.allocatable; }
  // GPUs of non-terminal pods bound or assumed here. May exceed allocatable after a node shrinks.
  MilliGpu used() const { return used_; }
  MilliGpu free() const { return used_ >= node_.allocatable ? 0 : node_.allocatable - used_; }
  const std::vector<QueueUse>& byQueue() const { return byQueue_; }

  // Physical GPUs and milli-GPUs used on each (may exceed 1000 on an overcommitted GPU).
  int gpuCount() const { return static_cast<int>(gpuUsed_.size()); }
  MilliGpu gpuUsed(int index) const { return gpuUsed_[static_cast<std::size_t>(index)]; }
  MilliGpu gpuFree(int index) const {
    const MilliGpu u = gpuUsed(index);
    return u >= kMilliPerGpu ? 0 : kMilliPerGpu - u;
  }
  std::span<const MilliGpu> gpuUsedList() const { return gpuUsed_; }
  // GPUs nobody uses at all.
  int fullyFreeGpus() const { return fullyFree_; }
  // The most free milli-GPUs on any one GPU.
  MilliGpu largestGpuFree() const { return largestGpuFree_; }
  // Best fit for a share of one GPU: the GPU with the least free room that still has `share` free
  // (lowest index among equals); -1 if none.
  int bestFitGpu(MilliGpu share) const;

  // CPU and memory requested by pods holding resources here, and what is left of allocatable.
  std::int64_t cpuUsed() const { return cpuUsed_; }
  std::int64_t memoryUsed() const { return memoryUsed_; }
  std::int64_t cpuFree() const {
    return cpuUsed_ >= node_.cpuMilli ? 0 : node_.cpuMilli - cpuUsed_;
  }
  std::int64_t memoryFree() const {
    return memoryUsed_ >= node_.memoryBytes ? 0 : node_.memoryBytes - memoryUsed_;
  }

  // Reservations on this node (whole GPUs held for a pod or a gang), sorted by holder.
  std::span<const Reservation> reservations() const { return reservations_; }
  MilliGpu reserved() const { return reserved_; }
  // Reserved GPUs `pod` may not use: those of reservations it does not hold.
  MilliGpu reservedAgainst(const Pod& pod) const;
  // Reserved GPUs `pod` holds here.
  MilliGpu reservedFor(const Pod& pod) const;
  // Whole GPUs `pod` may take: nobody uses them and they are not reserved for someone else.
  int wholeGpusFor(const Pod& pod) const;
  // The most free milli-GPUs on any one GPU that some pod already uses (shares of these are never
  // reserved).
  MilliGpu largestPartialFree() const { return largestPartialFree_; }
  // Gang members placed here, by gang key.
  const std::vector<GangUse>& gangs() const { return gangs_; }

  // Fragmentation F_n of this node against `workload`, computed once per workload and cached
  // (see fragmentation.h; nodeFragmentation is the way to ask).
  double cachedFragmentation(const WorkloadPtr& workload, const FitOptions& options) const;

 private:
  struct FragSlot;
  Node node_;
  std::vector<PodPtr> pods_;
  std::uint64_t generation_;
  MilliGpu used_ = 0;
  std::vector<QueueUse> byQueue_;
  std::vector<MilliGpu> gpuUsed_;
  int fullyFree_ = 0;
  MilliGpu largestGpuFree_ = 0;
  std::int64_t cpuUsed_ = 0;
  std::int64_t memoryUsed_ = 0;
  std::vector<Reservation> reservations_;
  MilliGpu reserved_ = 0;
  MilliGpu largestPartialFree_ = 0;
  std::vector<GangUse> gangs_;
  std::unique_ptr<FragSlot> cache_;  // never null
};
using NodeStatePtr = std::shared_ptr<const NodeState>;

// A queue's quota and what it uses now.
struct QueueState {
  QueueQuota quota;
  MilliGpu allocated = 0;  // held by bound or assumed pods
  MilliGpu overQuota = 0;  // of allocated, held by pods admitted as borrowed
  MilliGpu pending = 0;    // requested by pending pods (kube-scheduler's queue as gpufair saw it)
  int pendingPods = 0;
  int runningPods = 0;
  // GPUs reserved for the queue's pods or gangs (reclaim, gang plans) beyond what those holders
  // have pending: members not offered yet are demand too. Counted in the fair share's demand.
  MilliGpu reservedAhead = 0;
  // Deserved (capped by demand) plus its weighted part of the idle GPUs: see fair_share.h.
  MilliGpu fairShare = 0;
  // The queue tree (QueueQuota::parent): the parent's index in ClusterSnapshot::queues() (-1: a
  // top-level queue, also when the parent is unknown or in a cycle), the depth (0: top level) and
  // how many queues name this one as parent. A parent's allocated, overQuota, pending, pod counts
  // and reservedAhead are its own plus its whole subtree's: a child's usage counts in every
  // ancestor.
  int parentIndex = -1;
  int depth = 0;
  int children = 0;

  // What the queue could still use within deserved: min(deserved, allocated + pending) - allocated.
  MilliGpu unmetDeserved() const;
};

// Sets parentIndex, depth and children of `queues` from their quotas' `parent:` names.
void linkQueueTree(std::span<QueueState> queues);
// Adds each queue's usage (allocated, overQuota, pending, pod counts, reservedAhead) to every
// ancestor's. Call once, after linkQueueTree, on queues holding only their own usage.
void sumQueueTree(std::span<QueueState> queues);
// The queue and its ancestors, nearest first: indices into `queues` (cycle-safe).
std::vector<int> queueLineage(std::span<const QueueState> queues, int queue);

// A gang as the snapshot sees it: members placed, members pending, GPUs reserved for it.
struct GangState {
  std::string key;  // "gang:<ns>/<name>"
  int size = 0;     // the largest gpufair.io/gang-size of its members
  int placed = 0;   // members holding GPUs (bound or assumed, not terminating)
  MilliGpu placedGpus = 0;
  std::vector<PodPtr> pending;  // unbound members known to want GPUs, by uid
  MilliGpu reserved = 0;        // GPUs still reserved for it over all nodes
  bool complete() const { return size > 0 && placed >= size; }
};

// Resolves a pod's queue: the label gpufair.io/queue if set, else the queue listing its namespace,
// else the default queue. Returns an empty string when the label names a queue that does not exist.
std::string resolveQueue(const QuotaConfig& config, std::string_view ns, const Labels& labels);

// CPU and GPUs over the nodes with GPUs that take new pods: allocatable, and allocated with each
// node's use capped at its allocatable (what tells whether CPU or GPUs run out first).
struct GpuNodeUse {
  std::int64_t cpu = 0;
  std::int64_t cpuUsed = 0;
  MilliGpu gpu = 0;
  MilliGpu gpuUsed = 0;
};

// One GPU model over the nodes with GPUs that take new pods: how many, their free and allocatable
// GPUs.
struct ModelGpus {
  std::string model;
  int nodes = 0;
  MilliGpu free = 0;
  MilliGpu allocatable = 0;
};

class ClusterSnapshot {
 public:
  // nodes may come in any order; they are kept sorted by name. pending: unbound pods known to want
  // GPUs.
  ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending, QuotaConfig quota,
                  std::uint64_t generation);
  ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending, QuotaConfig quota,
                  std::uint64_t generation, SnapshotOptions options);
  // The next snapshot after `previous`, sharing what did not change (what the state layer's
  // builder publishes after each change). `nodes` holds the same node names in the same (sorted)
  // order as previous->nodes(); only those at the indices `changed` differ. The name index, the
  // reservation list and the gangs' placed part are then shared with `previous` (unless a changed
  // node holds or held reservations or gang members), and the totals and queue usage are updated
  // from the changed nodes: O(changed x log nodes + queues) plus one copy of the node pointers
  // (a plain copy: no reference counting, hashing, sorting or string work; ownership is shared in
  // chunks, see NodeTable), and no copy at all when no node changed (the node table is then
  // previous's). Only the changed entries of `nodes` are read.
  // `pending` is shared as is (null: none); its queue and gang sums are previous's updated by
  // what differs between the two lists (pendingChange: O(chunks) when they share most chunks).
  // previous == nullptr, or nodes that do not match it (other names or count, out-of-range
  // indices), build everything as the constructor above does; the result is the same either way.
  // `previous` is only read during construction.
  ClusterSnapshot(const ClusterSnapshot* previous, std::span<const NodeStatePtr> nodes,
                  std::span<const std::size_t> changed, std::shared_ptr<const PendingPods> pending,
                  QuotaConfig quota, std::uint64_t generation, SnapshotOptions options);

  std::uint64_t generation() const { return generation_; }
  // Sorted by name. The snapshot owns them (see NodeTable).
  std::span<const NodeState* const> nodes() const { return table_->nodes; }
  const NodeState* findNode(std::string_view name) const;
  // The node's index in nodes(); -1 when there is no such node.
  std::ptrdiff_t nodeIndex(std::string_view name) const;
  // Unbound pods that want GPUs, by the pod cache's key (uid).
  const PendingPods& pending() const { return *pending_; }
  // Whether this snapshot's pending list is `other`'s (shared, not copied). For tests.
  bool sharesPendingWith(const ClusterSnapshot& other) const { return pending_ == other.pending_; }
  const QuotaConfig& quotaConfig() const { return quota_; }
  std::span<const QueueState> queues() const { return queues_; }  // configured queues, then default
  const QueueState* findQueue(std::string_view name) const;

  // Every reservation, by node name then holder.
  std::span<const Reservation> reservations() const { return *reservations_; }
  // GPUs reserved for `queue` by holders other than `pod` (what admission charges the queue
  // beyond its allocation).
  MilliGpu reservedInQueue(std::string_view queue, const Pod& pod) const;
  // GPUs reserved for `pod` (as a pod or as a member of its gang) over all nodes.
  MilliGpu reservedFor(const Pod& pod) const;
  // Gangs with a member placed, pending or a reservation, sorted by key.
  std::span<const GangState> gangs() const { return *gangs_; }
  const GangState* findGang(std::string_view key) const;

  MilliGpu capacity() const { return capacity_; }    // allocatable over nodes that take new pods
  MilliGpu allocated() const { return allocated_; }  // used over all nodes
  MilliGpu free() const { return free_; }            // free over nodes that take new pods
  MilliGpu largestFreeBlock() const { return frees_.empty() ? 0 : frees_.back().free; }
  // How many nodes that take new pods have at least `gpus` free.
  int nodesWithFree(MilliGpu gpus) const;
  // Kept from the change as the totals above are: O(1) to read.
  const GpuNodeUse& gpuNodeUse() const { return gpuNodeUse_; }
  // By model (sorted), kept from the change likewise: O(models) to read.
  std::span<const ModelGpus> modelGpus() const { return *modelGpus_; }

  // Whether this snapshot and `other` share one node-name index (built once, see the
  // constructor from a previous snapshot). For tests and diagnostics.
  bool sharesNodeIndexWith(const ClusterSnapshot& other) const { return index_ == other.index_; }
  // Whether this snapshot and `other` share one node table (a snapshot built from the previous one
  // with no node changed). For tests and diagnostics.
  bool sharesNodeTableWith(const ClusterSnapshot& other) const { return table_ == other.table_; }

  const SnapshotOptions& options() const { return options_; }
  const FitOptions& fitOptions() const { return options_.fit; }
  const WorkloadPtr& workload() const { return options_.workload; }  // may be null
  // SnapshotOptions::shapes when it has one shape per node; nullptr otherwise.
  const NodeShapes* nodeShapes() const {
    const auto& shapes = options_.shapes;
    return shapes != nullptr && shapes->of.size() == table_->nodes.size() ? shapes.get() : nullptr;
  }
  std::uint64_t seed() const { return options_.seed; }
  // Whether the pod with this uid is placed provisionally (SnapshotOptions::provisional).
  bool isProvisional(std::string_view uid) const {
    const auto& pods = options_.provisional;
    return pods != nullptr && pods->anyWithUid(uid, [](const Pod&) { return true; });
  }
  // The largest allocatable of any node taking new pods (normalizes bestfit and dotprod).
  MilliGpu maxNodeGpus() const { return maxNodeGpus_; }
  std::int64_t maxNodeCpu() const { return maxNodeCpu_; }
  std::int64_t maxNodeMemory() const { return maxNodeMemory_; }

 private:
  // Node names -> index: open addressing over contiguous slots (index + 1, 0 empty) with a hash
  // tag, and names copied side by side, so a lookup touches two cache lines instead of chasing a
  // hash map's nodes (the webhooks look up thousands of names per request). Shared between
  // snapshots with the same node names.
  struct Slot {
    std::uint32_t index1 = 0;
    std::uint32_t tag = 0;
  };
  struct NodeIndex {
    std::vector<Slot> slots;
    std::vector<std::string> names;
  };
  // A queue's own usage (before the tree sums): from nodes, and from pending pods.
  struct QueueOwn {
    MilliGpu allocated = 0;
    MilliGpu overQuota = 0;
    int runningPods = 0;
    MilliGpu pending = 0;
    int pendingPods = 0;
  };
  // The construction's steps (snapshot_build.cc); with `previous` null they build from scratch.
  // indexReservations returns whether the reservation list is previous's.
  void indexNodes(std::span<const NodeStatePtr> nodes);
  void updateNodes(const ClusterSnapshot& previous, std::span<const NodeStatePtr> nodes,
                   std::span<const std::size_t> changed);
  void addTotals(const NodeState& n);
  bool indexReservations(const ClusterSnapshot* previous, std::span<const std::size_t> changed);
  void sumQueues(const ClusterSnapshot* previous, std::span<const std::size_t> changed);
  void sumOwnNodeUse(const ClusterSnapshot* previous, std::span<const std::size_t> changed,
                     const std::function<QueueOwn*(const std::string&)>& queueOf);
  void indexGangs(const ClusterSnapshot* previous, std::span<const std::size_t> changed,
                  bool reservationsShared);

  // The node states are owned in chunks of kNodeChunk (by position), shared with the snapshots
  // before and after: publishing after a change copies the chunk list and the changed nodes'
  // chunks, instead of taking and later dropping a reference to every node. `nodes` holds plain
  // pointers to the same states, in the same order. The table itself is shared with the previous
  // snapshot when no node changed (a change of the pending or provisional pods only).
  static constexpr std::size_t kNodeChunk = 64;
  using NodeChunk = std::vector<NodeStatePtr>;
  struct NodeTable {
    std::vector<std::shared_ptr<const NodeChunk>> owners;
    std::vector<const NodeState*> nodes;
  };
  // How many nodes taking new pods have `free` GPUs free (ClusterSnapshot::frees_).
  struct FreeCount {
    MilliGpu free = 0;
    int nodes = 0;
  };
  std::shared_ptr<const NodeTable> table_;  // never null
  std::shared_ptr<const NodeIndex> index_;
  std::shared_ptr<const PendingPods> pending_;  // never null
  QuotaConfig quota_;
  std::vector<QueueState> queues_;
  std::vector<QueueOwn> own_;                                     // same order as queues_
  std::shared_ptr<const std::vector<Reservation>> reservations_;  // never null
  std::shared_ptr<const std::vector<GangState>> nodeGangs_;  // gangs as nodes see them; never null
  std::shared_ptr<const std::vector<GangState>> gangs_;      // with pending members; never null
  std::uint64_t generation_;
  MilliGpu capacity_ = 0;
  MilliGpu allocated_ = 0;
  MilliGpu free_ = 0;
  GpuNodeUse gpuNodeUse_;
  std::shared_ptr<const std::vector<ModelGpus>> modelGpus_;  // never null
  // The free GPUs of nodes taking new pods as a histogram, by amount ascending (no zero counts):
  // a few entries (one per amount) to copy per snapshot, not one per node.
  std::vector<FreeCount> frees_;
  SnapshotOptions options_;
  MilliGpu maxNodeGpus_ = 0;
  std::int64_t maxNodeCpu_ = 0;
  std::int64_t maxNodeMemory_ = 0;
};
using SnapshotPtr = std::shared_ptr<const ClusterSnapshot>;

}  // namespace gpufair::policy
