// ClusterSnapshot's construction: everything from the nodes and pending pods, or the next snapshot
// from the previous one and the nodes that changed (sharing the rest; see snapshot.h).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {
namespace {

bool sameSpec(const Node& a, const Node& b) {
  return a.takesNewPods() == b.takesNewPods() && a.allocatable == b.allocatable &&
         a.cpuMilli == b.cpuMilli && a.memoryBytes == b.memoryBytes;
}

// Whether `nodes` can be built from `previous` by the indices `changed`: same names, same order.
bool matches(const ClusterSnapshot& previous, std::span<const NodeStatePtr> nodes,
             std::span<const std::size_t> changed) {
  if (previous.nodes().size() != nodes.size()) return false;
  return std::all_of(changed.begin(), changed.end(), [&](std::size_t i) {
    return i < nodes.size() && nodes[i] != nullptr &&
           nodes[i]->name() == previous.nodes()[i]->name();
  });
}

bool holdsReservations(const NodeState& n) {
  return !n.reservations().empty();
}
bool holdsGangs(const NodeState& n) {
  return !n.gangs().empty();
}

// What `n` adds to ClusterSnapshot::gpuNodeUse(), negated when `sign` is -1.
void addGpuNodeUse(GpuNodeUse& use, const NodeState& n, std::int64_t sign) {
  if (!n.node().takesNewPods() || n.allocatable() <= 0) return;
  use.cpu += sign * n.node().cpuMilli;
  use.cpuUsed += sign * std::min(n.cpuUsed(), n.node().cpuMilli);
  use.gpu += sign * n.allocatable();
  use.gpuUsed += sign * std::min(n.used(), n.allocatable());
}

// What `n` adds to ClusterSnapshot::modelGpus(), taken away when `sign` is -1 (a model without
// nodes left is dropped).
void addModelGpus(std::vector<ModelGpus>& models, const NodeState& n, int sign) {
  if (!n.node().takesNewPods() || n.allocatable() <= 0) return;
  const std::string& model = n.node().gpuModel;
  auto it = std::lower_bound(models.begin(), models.end(), model,
                             [](const ModelGpus& m, const std::string& x) { return m.model < x; });
  if (it == models.end() || it->model != model) {
    ModelGpus added;
    added.model = model;
    it = models.insert(it, std::move(added));
  }
  it->nodes += sign;
  it->free += sign * n.free();
  it->allocatable += sign * n.allocatable();
  if (it->nodes <= 0) models.erase(it);
}

// One more (sign 1) or one fewer (sign -1) node with `free` GPUs free in the histogram `frees`
// (ascending by amount; an amount no node has any more is dropped).
template <typename FreeCount>
void countFree(std::vector<FreeCount>& frees, MilliGpu free, int sign) {
  auto it = std::lower_bound(frees.begin(), frees.end(), free,
                             [](const FreeCount& f, MilliGpu x) { return f.free < x; });
  if (it == frees.end() || it->free != free) {
    if (sign < 0) return;  // not counted: nothing to take away
    it = frees.insert(it, FreeCount{free, 0});
  }
  it->nodes += sign;
  if (it->nodes <= 0) frees.erase(it);
}

}  // namespace

ClusterSnapshot::ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending,
                                 QuotaConfig quota, std::uint64_t generation)
    : ClusterSnapshot(std::move(nodes), std::move(pending), std::move(quota), generation, {}) {}

ClusterSnapshot::ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending,
                                 QuotaConfig quota, std::uint64_t generation,
                                 SnapshotOptions options)
    : ClusterSnapshot(nullptr, nodes, {}, std::make_shared<const PendingPods>(pending),
                      std::move(quota), generation, std::move(options)) {}

ClusterSnapshot::ClusterSnapshot(const ClusterSnapshot* previous,
                                 std::span<const NodeStatePtr> nodes,
                                 std::span<const std::size_t> changed,
                                 std::shared_ptr<const PendingPods> pending, QuotaConfig quota,
                                 std::uint64_t generation, SnapshotOptions options)
    : pending_(pending ? std::move(pending) : std::make_shared<const PendingPods>()),
      quota_(std::move(quota)),
      generation_(generation),
      options_(std::move(options)) {
  std::vector<std::size_t> distinct(changed.begin(), changed.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (previous != nullptr && !matches(*previous, nodes, distinct)) previous = nullptr;
  // Shapes are numbered for these nodes: the previous snapshot's say nothing of changed nodes.
  if (previous != nullptr && options_.shapes != nullptr &&
      options_.shapes == previous->options_.shapes && !distinct.empty()) {
    options_.shapes = nullptr;
  }
  if (previous == nullptr) {
    distinct.clear();
    indexNodes(nodes);
  } else {
    updateNodes(*previous, nodes, distinct);
  }
  const bool reservationsShared = indexReservations(previous, distinct);
  sumQueues(previous, distinct);
  indexGangs(previous, distinct, reservationsShared);
}

void ClusterSnapshot::addTotals(const NodeState& n) {
  allocated_ += n.used();
  addGpuNodeUse(gpuNodeUse_, n, 1);
  if (!n.node().takesNewPods()) return;
  capacity_ += n.allocatable();
  free_ += n.free();
  maxNodeGpus_ = std::max(maxNodeGpus_, n.allocatable());
  maxNodeCpu_ = std::max(maxNodeCpu_, n.node().cpuMilli);
  maxNodeMemory_ = std::max(maxNodeMemory_, n.node().memoryBytes);
}

void ClusterSnapshot::indexNodes(std::span<const NodeStatePtr> nodes) {
  auto byName = [](const NodeStatePtr& a, const NodeStatePtr& b) { return a->name() < b->name(); };
  std::vector<NodeStatePtr> sorted(nodes.begin(), nodes.end());
  if (!std::is_sorted(sorted.begin(), sorted.end(), byName)) {
    std::sort(sorted.begin(), sorted.end(), byName);
    options_.shapes = nullptr;  // given in the order the nodes came in, not this one
  }
  auto table = std::make_shared<NodeTable>();
  std::vector<const NodeState*>& list = table->nodes;
  list.reserve(sorted.size());
  table->owners.reserve((sorted.size() + kNodeChunk - 1) / kNodeChunk);
  for (std::size_t begin = 0; begin < sorted.size(); begin += kNodeChunk) {
    const std::size_t end = std::min(sorted.size(), begin + kNodeChunk);
    auto chunk = std::make_shared<NodeChunk>();
    chunk->reserve(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
      list.push_back(sorted[i].get());
      chunk->push_back(std::move(sorted[i]));
    }
    table->owners.push_back(std::move(chunk));
  }
  auto index = std::make_shared<NodeIndex>();
  std::size_t slotCount = 8;
  while (slotCount < list.size() * 2) slotCount *= 2;
  index->slots.assign(slotCount, Slot{});
  index->names.reserve(list.size());
  std::vector<MilliGpu> frees;
  frees.reserve(list.size());
  auto models = std::make_shared<std::vector<ModelGpus>>();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const NodeState& n = *list[i];
    index->names.push_back(n.name());
    const std::size_t h = std::hash<std::string_view>{}(n.name());
    for (std::size_t at = h & (slotCount - 1);; at = (at + 1) & (slotCount - 1)) {
      if (index->slots[at].index1 == 0) {
        index->slots[at] = {static_cast<std::uint32_t>(i + 1), static_cast<std::uint32_t>(h >> 32)};
        break;
      }
    }
    addTotals(n);
    addModelGpus(*models, n, 1);
    if (n.node().takesNewPods()) frees.push_back(n.free());
  }
  modelGpus_ = std::move(models);
  std::sort(frees.begin(), frees.end());
  for (MilliGpu free : frees) {
    if (frees_.empty() || frees_.back().free != free) frees_.push_back(FreeCount{free, 0});
    ++frees_.back().nodes;
  }
  index_ = std::move(index);
  table_ = std::move(table);
}

void ClusterSnapshot::updateNodes(const ClusterSnapshot& previous,
                                  std::span<const NodeStatePtr> nodes,
                                  std::span<const std::size_t> changed) {
  if (changed.empty()) {
    table_ = previous.table_;
  } else {
    auto table = std::make_shared<NodeTable>(*previous.table_);
    std::size_t copied = table->owners.size();  // the chunk last copied (`changed` is sorted)
    std::shared_ptr<NodeChunk> chunk;
    for (std::size_t i : changed) {
      const std::size_t c = i / kNodeChunk;
      if (c != copied) {
        chunk = std::make_shared<NodeChunk>(*table->owners[c]);
        table->owners[c] = chunk;
        copied = c;
      }
      (*chunk)[i % kNodeChunk] = nodes[i];
      table->nodes[i] = nodes[i].get();
    }
    table_ = std::move(table);
  }
  const std::vector<const NodeState*>& list = table_->nodes;
  const std::vector<const NodeState*>& before = previous.table_->nodes;
  index_ = previous.index_;
  capacity_ = previous.capacity_;
  allocated_ = previous.allocated_;
  free_ = previous.free_;
  gpuNodeUse_ = previous.gpuNodeUse_;
  modelGpus_ = previous.modelGpus_;
  std::shared_ptr<std::vector<ModelGpus>> models;
  frees_ = previous.frees_;
  maxNodeGpus_ = previous.maxNodeGpus_;
  maxNodeCpu_ = previous.maxNodeCpu_;
  maxNodeMemory_ = previous.maxNodeMemory_;
  bool specChanged = false;
  for (std::size_t i : changed) {
    const NodeState& was = *before[i];
    const NodeState& now = *list[i];
    allocated_ += now.used() - was.used();
    addGpuNodeUse(gpuNodeUse_, was, -1);
    addGpuNodeUse(gpuNodeUse_, now, 1);
    if (models == nullptr) {
      models = std::make_shared<std::vector<ModelGpus>>(*previous.modelGpus_);
      modelGpus_ = models;
    }
    addModelGpus(*models, was, -1);
    addModelGpus(*models, now, 1);
    if (was.node().takesNewPods()) {
      capacity_ -= was.allocatable();
      free_ -= was.free();
      countFree(frees_, was.free(), -1);
    }
    if (now.node().takesNewPods()) {
      capacity_ += now.allocatable();
      free_ += now.free();
      countFree(frees_, now.free(), 1);
    }
    specChanged = specChanged || !sameSpec(was.node(), now.node());
  }
  if (!specChanged) return;
  // A node's size changed: the largest sizes are found again over every node.
  maxNodeGpus_ = 0;
  maxNodeCpu_ = 0;
  maxNodeMemory_ = 0;
  for (const NodeState* n : list) {
    if (!n->node().takesNewPods()) continue;
    maxNodeGpus_ = std::max(maxNodeGpus_, n->allocatable());
    maxNodeCpu_ = std::max(maxNodeCpu_, n->node().cpuMilli);
    maxNodeMemory_ = std::max(maxNodeMemory_, n->node().memoryBytes);
  }
}

bool ClusterSnapshot::indexReservations(const ClusterSnapshot* previous,
                                        std::span<const std::size_t> changed) {
  if (previous != nullptr && std::none_of(changed.begin(), changed.end(), [&](std::size_t i) {
        return holdsReservations(*previous->table_->nodes[i]) ||
               holdsReservations(*table_->nodes[i]);
      })) {
    reservations_ = previous->reservations_;
    return true;
  }
  auto all = std::make_shared<std::vector<Reservation>>();
  for (const NodeState* node : table_->nodes) {
    for (const auto& r : node->reservations()) all->push_back(r);
  }
  reservations_ = std::move(all);
  return false;
}

void ClusterSnapshot::indexGangs(const ClusterSnapshot* previous,
                                 std::span<const std::size_t> changed, bool reservationsShared) {
  if (previous != nullptr && reservationsShared &&
      std::none_of(changed.begin(), changed.end(), [&](std::size_t i) {
        return holdsGangs(*previous->table_->nodes[i]) || holdsGangs(*table_->nodes[i]);
      })) {
    nodeGangs_ = previous->nodeGangs_;
  } else {
    std::unordered_map<std::string, GangState> gangs;
    for (const auto& r : *reservations_) {
      if (r.holder.starts_with(kGangHolderPrefix)) gangs[r.holder].reserved += r.gpus;
    }
    for (const NodeState* node : table_->nodes) {
      if (!holdsGangs(*node)) continue;
      for (const auto& use : node->gangs()) {
        GangState& g = gangs[use.key];
        g.placed += use.pods;
        g.placedGpus += use.gpus;
      }
      for (const auto& pod : node->pods()) {
        if (pod->inGang() && pod->holdsGpus() && !pod->terminating) {
          GangState& g = gangs[pod->gangKey()];
          g.size = std::max(g.size, pod->gangSize);
        }
      }
    }
    auto list = std::make_shared<std::vector<GangState>>();
    list->reserve(gangs.size());
    for (auto& [key, g] : gangs) {
      g.key = key;
      list->push_back(std::move(g));
    }
    std::sort(list->begin(), list->end(),
              [](const GangState& a, const GangState& b) { return a.key < b.key; });
    nodeGangs_ = std::move(list);
  }
  // Gangs with pending members depend on those members only: unchanged when no gang member
  // joined or left the pending list.
  if (previous != nullptr && previous->nodeGangs_ == nodeGangs_) {
    const PendingChange change = previous->pending_ == pending_
                                     ? PendingChange{}
                                     : pendingChange(*previous->pending_, *pending_);
    auto gangMember = [](const Pod* pod) { return pod->inGang(); };
    if (std::none_of(change.removed.begin(), change.removed.end(), gangMember) &&
        std::none_of(change.added.begin(), change.added.end(), gangMember)) {
      gangs_ = previous->gangs_;
      return;
    }
  }
  // Pending members join their gangs (and make gangs of their own).
  std::map<std::string, GangState, std::less<>> withPending;
  for (const auto& pod : *pending_) {
    if (!pod->inGang()) continue;
    if (withPending.empty()) {
      for (const auto& g : *nodeGangs_) withPending.emplace(g.key, g);
    }
    GangState& g = withPending[pod->gangKey()];
    g.size = std::max(g.size, pod->gangSize);
    g.pending.push_back(pod);
  }
  if (withPending.empty()) {
    gangs_ = nodeGangs_;
    return;
  }
  auto list = std::make_shared<std::vector<GangState>>();
  list->reserve(withPending.size());
  for (auto& [key, g] : withPending) {
    g.key = key;
    std::sort(g.pending.begin(), g.pending.end(),
              [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
    list->push_back(std::move(g));
  }
  gangs_ = std::move(list);
}

}  // namespace gpufair::policy
