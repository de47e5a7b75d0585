#include "gpufair/policy/snapshot.h"

#include <algorithm>
#include <unordered_map>

#include "gpufair/common/labels.h"
#include "gpufair/policy/fair_share.h"

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
  std::unordered_map<std::string_view, int> at;
  for (std::size_t i = 0; i < queues.size(); ++i)
    at.emplace(queues[i].quota.name, static_cast<int>(i));
  for (QueueState& q : queues) {
    q.parentIndex = -1;
    q.depth = 0;
    q.children = 0;
    if (q.quota.parent.empty()) continue;
    if (auto it = at.find(q.quota.parent); it != at.end() && it->second != (&q - queues.data()))
      q.parentIndex = it->second;
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

ClusterSnapshot::ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending,
                                 QuotaConfig quota, std::uint64_t generation)
    : ClusterSnapshot(std::move(nodes), std::move(pending), std::move(quota), generation, {}) {}

ClusterSnapshot::ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending,
                                 QuotaConfig quota, std::uint64_t generation,
                                 SnapshotOptions options)
    : nodes_(std::move(nodes)),
      pending_(std::move(pending)),
      quota_(std::move(quota)),
      generation_(generation),
      options_(std::move(options)) {
  auto byName = [](const NodeStatePtr& a, const NodeStatePtr& b) { return a->name() < b->name(); };
  if (!std::is_sorted(nodes_.begin(), nodes_.end(), byName)) {
    std::sort(nodes_.begin(), nodes_.end(), byName);
  }
  std::size_t slotCount = 8;
  while (slotCount < nodes_.size() * 2) slotCount *= 2;
  slots_.assign(slotCount, Slot{});
  names_.reserve(nodes_.size());
  frees_.reserve(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const NodeState& n = *nodes_[i];
    names_.push_back(n.name());
    const std::size_t h = std::hash<std::string_view>{}(n.name());
    for (std::size_t at = h & (slotCount - 1);; at = (at + 1) & (slotCount - 1)) {
      if (slots_[at].index1 == 0) {
        slots_[at] = {static_cast<std::uint32_t>(i + 1), static_cast<std::uint32_t>(h >> 32)};
        break;
      }
    }
    allocated_ += n.used();
    if (n.node().takesNewPods()) {
      capacity_ += n.allocatable();
      free_ += n.free();
      frees_.push_back(n.free());
      maxNodeGpus_ = std::max(maxNodeGpus_, n.allocatable());
      maxNodeCpu_ = std::max(maxNodeCpu_, n.node().cpuMilli);
      maxNodeMemory_ = std::max(maxNodeMemory_, n.node().memoryBytes);
    }
  }
  std::sort(frees_.begin(), frees_.end());

  queues_.reserve(quota_.queues.size() + 1);
  for (const auto& q : quota_.queues) queues_.push_back(QueueState{q});
  queues_.push_back(QueueState{quota_.defaultQueue});
  linkQueueTree(queues_);
  std::unordered_map<std::string_view, std::size_t> queueAt;
  for (std::size_t i = 0; i < queues_.size(); ++i) queueAt.emplace(queues_[i].quota.name, i);
  auto queueIndex = [&](const std::string& name) -> QueueState* {
    auto it = queueAt.find(name);
    return it == queueAt.end() ? nullptr : &queues_[it->second];
  };
  for (const auto& node : nodes_) {
    for (const auto& use : node->byQueue()) {
      if (QueueState* q = queueIndex(use.queue)) {
        q->allocated += use.allocated;
        q->overQuota += use.overQuota;
        q->runningPods += use.pods;
      }
    }
  }
  for (const auto& pod : pending_) {
    if (QueueState* q = queueIndex(pod->queue)) {
      q->pending += pod->gpus;
      ++q->pendingPods;
    }
  }
  // Reservations are demand: a gang's members not yet offered, a reclaimer's held GPUs. A holder
  // that is pending already counts its request; only what is reserved beyond it is added.
  struct Held {
    MilliGpu reserved = 0;
    MilliGpu pending = 0;
    std::string queue;
  };
  std::unordered_map<std::string, Held> held;
  for (const auto& node : nodes_) {
    for (const auto& r : node->reservations()) {
      Held& h = held[r.holder];
      h.reserved += r.gpus;
      h.queue = r.queue;
    }
  }
  if (!held.empty()) {
    for (const auto& pod : pending_) {
      auto it = held.find(pod->uid);
      if (it == held.end() && pod->inGang()) it = held.find(pod->gangKey());
      if (it != held.end()) it->second.pending += pod->gpus;
    }
    for (const auto& [holder, h] : held) {
      if (QueueState* q = queueIndex(h.queue); q != nullptr && h.reserved > h.pending) {
        q->reservedAhead += h.reserved - h.pending;
      }
    }
  }
  sumQueueTree(queues_);
  std::vector<FairShareInput> inputs;
  inputs.reserve(queues_.size());
  for (const auto& q : queues_) inputs.push_back(fairShareInput(q));
  const std::vector<MilliGpu> shares =
      computeFairShares(inputs, capacity_, fairShareGranularity(inputs, capacity_));
  for (std::size_t i = 0; i < queues_.size(); ++i) queues_[i].fairShare = shares[i];
  indexGangsAndReservations();
}

void ClusterSnapshot::indexGangsAndReservations() {
  std::unordered_map<std::string, GangState> gangs;
  for (const auto& node : nodes_) {
    for (const auto& r : node->reservations()) {
      reservations_.push_back(r);
      if (r.holder.starts_with(kGangHolderPrefix)) {
        GangState& g = gangs[r.holder];
        g.reserved += r.gpus;
      }
    }
    for (const auto& use : node->gangs()) {
      GangState& g = gangs[use.key];
      g.placed += use.pods;
      g.placedGpus += use.gpus;
    }
    if (node->gangs().empty()) continue;
    for (const auto& pod : node->pods()) {
      if (pod->inGang() && pod->holdsGpus() && !pod->terminating) {
        GangState& g = gangs[pod->gangKey()];
        g.size = std::max(g.size, pod->gangSize);
      }
    }
  }
  for (const auto& pod : pending_) {
    if (!pod->inGang()) continue;
    GangState& g = gangs[pod->gangKey()];
    g.size = std::max(g.size, pod->gangSize);
    g.pending.push_back(pod);
  }
  gangs_.reserve(gangs.size());
  for (auto& [key, g] : gangs) {
    g.key = key;
    std::sort(g.pending.begin(), g.pending.end(),
              [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
    gangs_.push_back(std::move(g));
  }
  std::sort(gangs_.begin(), gangs_.end(),
            [](const GangState& a, const GangState& b) { return a.key < b.key; });
}

MilliGpu ClusterSnapshot::reservedInQueue(std::string_view queue, const Pod& pod) const {
  MilliGpu sum = 0;
  for (const auto& r : reservations_) {
    if (r.queue == queue && !isHolder(pod, r.holder)) sum += r.gpus;
  }
  return sum;
}

MilliGpu ClusterSnapshot::reservedFor(const Pod& pod) const {
  MilliGpu sum = 0;
  for (const auto& r : reservations_) {
    if (isHolder(pod, r.holder)) sum += r.gpus;
  }
  return sum;
}

const GangState* ClusterSnapshot::findGang(std::string_view key) const {
  auto it = std::lower_bound(gangs_.begin(), gangs_.end(), key,
                             [](const GangState& g, std::string_view k) { return g.key < k; });
  return it != gangs_.end() && it->key == key ? &*it : nullptr;
}

const NodeState* ClusterSnapshot::findNode(std::string_view name) const {
  const std::ptrdiff_t at = nodeIndex(name);
  return at < 0 ? nullptr : nodes_[static_cast<std::size_t>(at)].get();
}

std::ptrdiff_t ClusterSnapshot::nodeIndex(std::string_view name) const {
  const std::size_t mask = slots_.size() - 1;
  const std::size_t h = std::hash<std::string_view>{}(name);
  const auto tag = static_cast<std::uint32_t>(h >> 32);
  for (std::size_t at = h & mask;; at = (at + 1) & mask) {
    const Slot slot = slots_[at];
    if (slot.index1 == 0) return -1;
    if (slot.tag == tag && names_[slot.index1 - 1] == name) {
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
  auto it = std::lower_bound(frees_.begin(), frees_.end(), gpus);
  return static_cast<int>(frees_.end() - it);
}

}  // namespace gpufair::policy
