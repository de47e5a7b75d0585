#include "reclaim_statement.h"

#include <algorithm>

namespace gpufair::policy::reclaim_detail {

bool ranksBefore(const Rank& a, const Rank& b) {
  if (a.borrowed != b.borrowed) return a.borrowed;
  if (a.excess != b.excess) return a.excess > b.excess;
  if (a.queue != b.queue) return a.queue < b.queue;
  if (a.youngest != b.youngest) {
    if (!a.youngest || !b.youngest) return a.youngest.has_value();  // unknown start: oldest
    return *a.youngest > *b.youngest;
  }
  return a.uid < b.uid;
}

Statement::Statement(const NodeState& node, bool simple, const Freed& releasing,
                     std::span<const PodPtr> releasingPods, const std::vector<QueueInfo>& queues,
                     const FitOptions& fit)
    : node_(node),
      releasingPods_(releasingPods),
      queues_(queues),
      fit_(fit),
      simple_(simple),
      freed_(releasing) {}

MilliGpu Statement::amountOf(const std::vector<std::pair<int, MilliGpu>>& list, int queue) {
  for (const auto& [q, amount] : list) {
    if (q == queue) return amount;
  }
  return 0;
}

void Statement::add(std::vector<std::pair<int, MilliGpu>>& list, int queue, MilliGpu amount) {
  auto it =
      std::find_if(list.begin(), list.end(), [queue](const auto& c) { return c.first == queue; });
  if (it == list.end()) it = list.insert(list.end(), {queue, 0});
  it->second += amount;
}

MilliGpu Statement::excessNow(int queue) const {
  return queues_[static_cast<std::size_t>(queue)].excess() - amountOf(consumed_, queue);
}

bool Statement::canEvict(const Unit& unit) const {
  for (const auto& [q, amount] : unit.cost) {
    const QueueInfo& info = queues_[static_cast<std::size_t>(q)];
    if (!info.victim || amountOf(consumed_, q) + amount > info.headroom()) return false;
  }
  for (const auto& [q, amount] : unit.unlabelledCost) {
    const QueueInfo& info = queues_[static_cast<std::size_t>(q)];
    if (amountOf(consumedUnlabelled_, q) + amount > info.unlabelledHeadroom()) return false;
  }
  return true;
}

void Statement::apply(const Unit& unit, bool evicted) {
  if (evicted) {
    freed_ += unit.here;
  } else {
    freed_ -= unit.here;
  }
  for (const auto& [q, amount] : unit.cost) add(consumed_, q, evicted ? amount : -amount);
  for (const auto& [q, amount] : unit.unlabelledCost)
    add(consumedUnlabelled_, q, evicted ? amount : -amount);
}

void Statement::evict(const Unit& unit) {
  apply(unit, true);
  log_.push_back({&unit, true});
}

void Statement::restore(const Unit& unit) {
  apply(unit, false);
  log_.push_back({&unit, false});
}

void Statement::rollback(std::size_t checkpoint) {
  while (log_.size() > checkpoint) {
    const Op op = log_.back();
    log_.pop_back();
    apply(*op.unit, !op.evicted);
  }
}

std::vector<const Unit*> Statement::commit() const {
  std::vector<const Unit*> out;
  for (const Op& op : log_) {
    if (op.evicted) {
      out.push_back(op.unit);
    } else {
      out.erase(std::find(out.begin(), out.end(), op.unit));
    }
  }
  return out;
}

bool Statement::fits(const Pod& pod) const {
  if (simple_) {
    // Every GPU is whole-used or free: fully free GPUs = free / 1000, and the largest free share of
    // one GPU is a whole GPU when any is free.
    // Whole GPUs reserved here for other holders are not free for this pod.
    const MilliGpu blocked =
        node_.reservations().empty()
            ? 0
            : (node_.reservedAgainst(pod) + kMilliPerGpu - 1) / kMilliPerGpu * kMilliPerGpu;
    const MilliGpu free = node_.free() + freed_.gpus - blocked;
    const MilliGpu need =
        pod.isFractional()
            ? kMilliPerGpu
            : std::max(pod.gpus, static_cast<MilliGpu>(pod.gpuCount()) * kMilliPerGpu);
    if (free < need) return false;
    if (fit_.checkCpuMemory) {
      const Node& n = node_.node();
      if (pod.cpuMilli > 0 && n.cpuMilli - (node_.cpuUsed() - freed_.cpu) < pod.cpuMilli)
        return false;
      if (pod.memoryBytes > 0 &&
          n.memoryBytes - (node_.memoryUsed() - freed_.memory) < pod.memoryBytes)
        return false;
    }
    return true;
  }
  if (log_.empty() && releasingPods_.empty()) return nodeFits(node_, pod, fit_);
  // Rebuild only this node without the victims and the pods being evicted, and ask nodeFits.
  std::vector<std::string_view> gone;
  for (const auto& p : releasingPods_) gone.push_back(p->uid);
  for (const Unit* unit : commit()) {
    for (const auto& m : unit->members) gone.push_back(m->uid);
  }
  std::vector<PodPtr> kept;
  kept.reserve(node_.pods().size());
  for (const auto& p : node_.pods()) {
    if (std::find(gone.begin(), gone.end(), p->uid) == gone.end()) kept.push_back(p);
  }
  const NodeState after(node_.node(), std::move(kept), node_.generation(),
                        {node_.reservations().begin(), node_.reservations().end()});
  return nodeFits(after, pod, fit_);
}

}  // namespace gpufair::policy::reclaim_detail
