// ClusterSnapshot: an immutable, consistent view of nodes, the pods on them, pending demand and
// queue quotas at one generation. The engine's functions read only this. The state module's Mirror
// builds a new snapshot after changes and shares unchanged NodeStates with the previous one.
// Thread-safety: immutable after construction; share as std::shared_ptr<const ClusterSnapshot>.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpufair/common/quota.h"
#include "gpufair/policy/model.h"

namespace gpufair::policy {

using PodPtr = std::shared_ptr<const Pod>;

// GPUs one queue holds on one node.
struct QueueUse {
  std::string queue;
  MilliGpu allocated = 0;
  MilliGpu overQuota = 0;  // of allocated, held by borrowed pods
  int pods = 0;
};

// A node with the pods bound (or assumed) to it. Built once per node generation.
class NodeState {
 public:
  NodeState(Node node, std::vector<PodPtr> pods, std::uint64_t generation);

  const Node& node() const { return node_; }
  const std::string& name() const { return node_.name; }
  const std::vector<PodPtr>& pods() const { return pods_; }
  std::uint64_t generation() const { return generation_; }
  MilliGpu allocatable() const { return node_.allocatable; }
  // GPUs of non-terminal pods bound or assumed here. May exceed allocatable after a node shrinks.
  MilliGpu used() const { return used_; }
  MilliGpu free() const { return used_ >= node_.allocatable ? 0 : node_.allocatable - used_; }
  const std::vector<QueueUse>& byQueue() const { return byQueue_; }

 private:
  Node node_;
  std::vector<PodPtr> pods_;
  std::uint64_t generation_;
  MilliGpu used_ = 0;
  std::vector<QueueUse> byQueue_;
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

  // What the queue could still use within deserved: min(deserved, allocated + pending) - allocated.
  MilliGpu unmetDeserved() const;
};

// Resolves a pod's queue: the label gpufair.io/queue if set, else the queue listing its namespace,
// else the default queue. Returns an empty string when the label names a queue that does not exist.
std::string resolveQueue(const QuotaConfig& config, std::string_view ns, const Labels& labels);

class ClusterSnapshot {
 public:
  // nodes may come in any order; they are kept sorted by name. pending: unbound pods known to want
  // GPUs.
  ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending, QuotaConfig quota,
                  std::uint64_t generation);

  std::uint64_t generation() const { return generation_; }
  std::span<const NodeStatePtr> nodes() const { return nodes_; }
  const NodeState* findNode(std::string_view name) const;
  std::span<const PodPtr> pending() const { return pending_; }
  const QuotaConfig& quotaConfig() const { return quota_; }
  std::span<const QueueState> queues() const { return queues_; }  // configured queues, then default
  const QueueState* findQueue(std::string_view name) const;

  MilliGpu capacity() const { return capacity_; }    // allocatable over nodes that take new pods
  MilliGpu allocated() const { return allocated_; }  // used over all nodes
  MilliGpu free() const { return free_; }            // free over nodes that take new pods
  MilliGpu largestFreeBlock() const { return frees_.empty() ? 0 : frees_.back(); }
  // How many nodes that take new pods have at least `gpus` free.
  int nodesWithFree(MilliGpu gpus) const;

 private:
  std::vector<NodeStatePtr> nodes_;
  std::unordered_map<std::string_view, std::size_t> index_;  // views into nodes_' names
  std::vector<PodPtr> pending_;
  QuotaConfig quota_;
  std::vector<QueueState> queues_;
  std::uint64_t generation_;
  MilliGpu capacity_ = 0;
  MilliGpu allocated_ = 0;
  MilliGpu free_ = 0;
  std::vector<MilliGpu> frees_;  // free GPUs of nodes taking new pods, ascending
};
using SnapshotPtr = std::shared_ptr<const ClusterSnapshot>;

}  // namespace gpufair::policy
