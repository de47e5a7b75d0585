#include "gpufair/policy/snapshot.h"

#include <algorithm>

#include "gpufair/common/labels.h"
#include "gpufair/policy/fair_share.h"

#include "queue_lookup.h"

namespace gpufair::policy {

MilliGpu QueueState::unmetDeserved() const {
  const MilliGpu wanted = std::min(quota.gpu.deserved, allocated + pending);
  return wanted > allocated ? wanted - allocated : 0;
}

std::string resolveQueue(const QuotaConfig& config, std::string_view ns, const Labels& labels) {
  if (auto it = labels.find(kQueueLabel); it != labels.end()) {
    if (it->second == config.defaultQueue.name) return it->second;
    for (const auto& q : config.queues) {
      if (q.name == it->second) return q.name;
    }
    return {};
  }
  for (const auto& q : config.queues) {
    if (std::find(q.namespaces.begin(), q.namespaces.end(), ns) != q.namespaces.end())
      return q.name;
  }
  return config.defaultQueue.name;
}

void linkQueueTree(std::span<QueueState> queues) {
  const detail::QueueLookup lookup(queues);
  for (QueueState& q : queues) {
    q.parentIndex = -1;
    q.depth = 0;
    q.children = 0;
    if (q.quota.parent.empty()) continue;
    const std::size_t parent = lookup.find(q.quota.parent);
    if (parent != lookup.size() && parent != static_cast<std::size_t>(&q - queues.data()))
      q.parentIndex = static_cast<int>(parent);
  }
  // A parent chain that loops (config validation refuses it) makes its queues top-level.
  for (std::size_t i = 0; i < queues.size(); ++i) {
    int depth = 0;
    int p = queues[i].parentIndex;
    while (p >= 0 && depth <= static_cast<int>(queues.size())) {
      ++depth;
      p = queues[static_cast<std::size_t>(p)].parentIndex;
    }
    if (p >= 0) {
      queues[i].parentIndex = -1;
      depth = 0;
    }
    queues[i].depth = depth;
  }
  for (const QueueState& q : queues) {
    if (q.parentIndex >= 0) ++queues[static_cast<std::size_t>(q.parentIndex)].children;
  }
}

void sumQueueTree(std::span<QueueState> queues) {
  // Flat queues (no parent linked): nothing to add up, and no order to allocate.
  if (std::none_of(queues.begin(), queues.end(),
                   [](const QueueState& q) { return q.parentIndex >= 0; })) {
    return;
  }
  std::vector<std::size_t> order(queues.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return queues[a].depth > queues[b].depth; });
  for (std::size_t i : order) {
    const QueueState& q = queues[i];
    if (q.parentIndex < 0) continue;
    QueueState& p = queues[static_cast<std::size_t>(q.parentIndex)];
    p.allocated += q.allocated;
    p.overQuota += q.overQuota;
    p.pending += q.pending;
    p.pendingPods += q.pendingPods;
    p.runningPods += q.runningPods;
    p.reservedAhead += q.reservedAhead;
  }
}

std::vector<int> queueLineage(std::span<const QueueState> queues, int queue) {
  std::vector<int> out;
  for (int q = queue;
       q >= 0 && static_cast<std::size_t>(q) < queues.size() && out.size() <= queues.size();
       q = queues[static_cast<std::size_t>(q)].parentIndex) {
    out.push_back(q);
  }
  return out;
}

MilliGpu ClusterSnapshot::reservedInQueue(std::string_view queue, const Pod& pod) const {
  MilliGpu sum = 0;
  for (const auto& r : *reservations_) {
    if (r.queue == queue && !isHolder(pod, r.holder)) sum += r.gpus;
  }
  return sum;
}

MilliGpu ClusterSnapshot::reservedFor(const Pod& pod) const {
  MilliGpu sum = 0;
  for (const auto& r : *reservations_) {
    if (isHolder(pod, r.holder)) sum += r.gpus;
  }
  return sum;
}

const GangState* ClusterSnapshot::findGang(std::string_view key) const {
  auto it = std::lower_bound(gangs_->begin(), gangs_->end(), key,
                             [](const GangState& g, std::string_view k) { return g.key < k; });
  return it != gangs_->end() && it->key == key ? &*it : nullptr;
}

const NodeState* ClusterSnapshot::findNode(std::string_view name) const {
  const std::ptrdiff_t at = nodeIndex(name);
  return at < 0 ? nullptr : table_->nodes[static_cast<std::size_t>(at)];
}

std::ptrdiff_t ClusterSnapshot::nodeIndex(std::string_view name) const {
  const std::vector<Slot>& slots = index_->slots;
  const std::size_t mask = slots.size() - 1;
  const std::size_t h = std::hash<std::string_view>{}(name);
  const auto tag = static_cast<std::uint32_t>(h >> 32);
  for (std::size_t at = h & mask;; at = (at + 1) & mask) {
    const Slot slot = slots[at];
    if (slot.index1 == 0) return -1;
    if (slot.tag == tag && index_->names[slot.index1 - 1] == name) {
      return static_cast<std::ptrdiff_t>(slot.index1 - 1);
    }
  }
}

const QueueState* ClusterSnapshot::findQueue(std::string_view name) const {
  for (const auto& q : queues_) {
    if (q.quota.name == name) return &q;
  }
  return nullptr;
}

int ClusterSnapshot::nodesWithFree(MilliGpu gpus) const {
  auto it = std::lower_bound(frees_.begin(), frees_.end(), gpus,
                             [](const FreeCount& f, MilliGpu x) { return f.free < x; });
  int count = 0;
  for (; it != frees_.end(); ++it) count += it->nodes;
  return count;
}

}  // namespace gpufair::policy
