// NodeState: one node's pods, per-GPU use and reservations (snapshot.h), and the per-GPU layout it
// shares with UndoLog (gpu_layout.h).
#include <algorithm>
#include <atomic>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/snapshot.h"

#include "gpu_layout.h"

namespace gpufair::policy {
namespace layout_detail {

int bestFitGpu(std::span<const MilliGpu> used, MilliGpu share) {
  int best = -1;
  MilliGpu bestFree = 0;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const MilliGpu free = used[i] >= kMilliPerGpu ? 0 : kMilliPerGpu - used[i];
    if (free >= share && (best < 0 || free < bestFree)) {
      best = static_cast<int>(i);
      bestFree = free;
    }
  }
  return best;
}

int leastUsedGpu(std::span<const MilliGpu> used) {
  return static_cast<int>(std::min_element(used.begin(), used.end()) - used.begin());
}

void emptiestGpus(std::span<const MilliGpu> used, int count, std::vector<int>& order) {
  order.resize(used.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  const int take = std::min(count, static_cast<int>(used.size()));
  std::partial_sort(order.begin(), order.begin() + take, order.end(), [&](int a, int b) {
    const MilliGpu ua = used[static_cast<std::size_t>(a)];
    const MilliGpu ub = used[static_cast<std::size_t>(b)];
    return ua != ub ? ua < ub : a < b;
  });
  order.resize(static_cast<std::size_t>(take));
}

void layoutGpus(std::span<const PodPtr> pods, std::vector<MilliGpu>& used) {
  const int gpuCount = static_cast<int>(used.size());
  if (gpuCount == 0) return;
  auto knownIndex = [&](const Pod& p) { return p.gpuIndex >= 0 && p.gpuIndex < gpuCount; };
  for (const auto& pod : pods) {
    if (pod->holdsGpus() && pod->isFractional() && knownIndex(*pod))
      used[static_cast<std::size_t>(pod->gpuIndex)] += pod->gpuShare;
  }
  std::vector<int> order;
  for (const auto& pod : pods) {
    if (!pod->holdsGpus() || pod->isFractional() || pod->gpus <= 0) continue;
    emptiestGpus(used, pod->gpuCount(), order);
    for (int g : order) used[static_cast<std::size_t>(g)] += kMilliPerGpu;
  }
  for (const auto& pod : pods) {
    if (!pod->holdsGpus() || !pod->isFractional() || knownIndex(*pod)) continue;
    int at = bestFitGpu(used, pod->gpuShare);
    if (at < 0) at = leastUsedGpu(used);
    used[static_cast<std::size_t>(at)] += pod->gpuShare;
  }
}

}  // namespace layout_detail

// One cached F_n: for which workload (by identity: a freed workload never matches a new one) and
// fit options. Replaced atomically as a whole, so readers on other threads see a consistent entry.
struct NodeState::FragSlot {
  struct Entry {
    std::weak_ptr<const Workload> workload;
    bool checkCpuMemory = false;
    bool scoreCpuMemory = false;
    double value = 0;
  };
  std::atomic<std::shared_ptr<const Entry>> entry;
};

NodeState::~NodeState() = default;

NodeState::NodeState(const NodeState& other)
    : node_(other.node_),
      pods_(other.pods_),
      generation_(other.generation_),
      used_(other.used_),
      byQueue_(other.byQueue_),
      gpuUsed_(other.gpuUsed_),
      fullyFree_(other.fullyFree_),
      largestGpuFree_(other.largestGpuFree_),
      cpuUsed_(other.cpuUsed_),
      memoryUsed_(other.memoryUsed_),
      reservations_(other.reservations_),
      reserved_(other.reserved_),
      largestPartialFree_(other.largestPartialFree_),
      gangs_(other.gangs_),
      cache_(std::make_unique<FragSlot>()) {}

NodeState& NodeState::operator=(const NodeState& other) {
  if (this == &other) return *this;
  node_ = other.node_;
  pods_ = other.pods_;
  generation_ = other.generation_;
  used_ = other.used_;
  byQueue_ = other.byQueue_;
  gpuUsed_ = other.gpuUsed_;
  fullyFree_ = other.fullyFree_;
  largestGpuFree_ = other.largestGpuFree_;
  cpuUsed_ = other.cpuUsed_;
  memoryUsed_ = other.memoryUsed_;
  reservations_ = other.reservations_;
  reserved_ = other.reserved_;
  largestPartialFree_ = other.largestPartialFree_;
  gangs_ = other.gangs_;
  cache_ = std::make_unique<FragSlot>();
  return *this;
}

NodeState::NodeState(Node node, std::vector<PodPtr> pods, std::uint64_t generation,
                     std::vector<Reservation> reservations)
    : node_(std::move(node)),
      pods_(std::move(pods)),
      generation_(generation),
      gpuUsed_(static_cast<std::size_t>(std::max(0, node_.gpuCount())), 0),
      reservations_(std::move(reservations)),
      cache_(std::make_unique<FragSlot>()) {
  std::erase_if(reservations_, [](const Reservation& r) { return r.gpus <= 0; });
  std::sort(reservations_.begin(), reservations_.end(),
            [](const Reservation& a, const Reservation& b) { return a.holder < b.holder; });
  for (auto& r : reservations_) {
    r.node = node_.name;
    reserved_ += r.gpus;
  }
  std::sort(pods_.begin(), pods_.end(),
            [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
  if (!gpuUsed_.empty()) {
    layout_detail::layoutGpus(pods_, gpuUsed_);
    for (std::size_t i = 0; i < gpuUsed_.size(); ++i) {
      if (gpuUsed_[i] == 0) ++fullyFree_;
      largestGpuFree_ = std::max(largestGpuFree_, gpuFree(static_cast<int>(i)));
      if (gpuUsed_[i] > 0) {
        largestPartialFree_ = std::max(largestPartialFree_, gpuFree(static_cast<int>(i)));
      }
    }
  }
  for (const auto& pod : pods_) {
    if (!pod->holdsGpus()) continue;
    if (pod->inGang() && !pod->terminating) {
      std::string key = pod->gangKey();
      auto g = std::find_if(gangs_.begin(), gangs_.end(),
                            [&](const GangUse& u) { return u.key == key; });
      if (g == gangs_.end()) g = gangs_.insert(gangs_.end(), GangUse{std::move(key), 0, 0});
      ++g->pods;
      g->gpus += pod->gpus;
    }
    cpuUsed_ += pod->cpuMilli;
    memoryUsed_ += pod->memoryBytes;
    if (pod->gpus == 0) continue;
    used_ += pod->gpus;
    auto it = std::find_if(byQueue_.begin(), byQueue_.end(),
                           [&](const QueueUse& u) { return u.queue == pod->queue; });
    if (it == byQueue_.end()) it = byQueue_.insert(byQueue_.end(), QueueUse{pod->queue, 0, 0, 0});
    it->allocated += pod->gpus;
    if (pod->overQuota) it->overQuota += pod->gpus;
    ++it->pods;
  }
}

int NodeState::bestFitGpu(MilliGpu share) const {
  return layout_detail::bestFitGpu(gpuUsed_, share);
}

MilliGpu NodeState::reservedAgainst(const Pod& pod) const {
  MilliGpu sum = 0;
  for (const auto& r : reservations_) {
    if (!isHolder(pod, r.holder)) sum += r.gpus;
  }
  return sum;
}

MilliGpu NodeState::reservedFor(const Pod& pod) const {
  return reserved_ - reservedAgainst(pod);
}

int NodeState::wholeGpusFor(const Pod& pod) const {
  if (reservations_.empty()) return fullyFree_;
  const auto held = static_cast<int>((reservedAgainst(pod) + kMilliPerGpu - 1) / kMilliPerGpu);
  return fullyFree_ > held ? fullyFree_ - held : 0;
}

double NodeState::cachedFragmentation(const WorkloadPtr& workload,
                                      const FitOptions& options) const {
  if (!workload) return 0;
  auto sameOwner = [&](const std::weak_ptr<const Workload>& w) {
    return !w.owner_before(workload) && !workload.owner_before(w);
  };
  std::shared_ptr<const FragSlot::Entry> e = cache_->entry.load(std::memory_order_acquire);
  if (e && e->checkCpuMemory == options.checkCpuMemory &&
      e->scoreCpuMemory == options.scoreCpuMemory && sameOwner(e->workload)) {
    return e->value;
  }
  auto fresh = std::make_shared<FragSlot::Entry>();
  fresh->workload = workload;
  fresh->checkCpuMemory = options.checkCpuMemory;
  fresh->scoreCpuMemory = options.scoreCpuMemory;
  fresh->value = nodeFragmentation(*this, *workload, options);
  const double value = fresh->value;
  cache_->entry.store(std::move(fresh), std::memory_order_release);
  return value;
}

}  // namespace gpufair::policy
