#include <algorithm>
#include <limits>

#include "reclaim_planner.h"

namespace gpufair::policy::reclaim_detail {

std::string gpusText(MilliGpu m) {
  return formatGpus(m) + (m == kMilliPerGpu ? " GPU" : " GPUs");
}

std::optional<Timestamp> startOf(const Pod& pod) {
  if (pod.started) return pod.started;
  return pod.created;
}

Freed freedBy(const Pod& pod) {
  return {pod.gpus, pod.cpuMilli, pod.memoryBytes};
}

bool ranksBefore(const Rank& a, const Rank& b) {
  if (a.borrowed != b.borrowed) return a.borrowed;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.excess != b.excess) return a.excess > b.excess;
  if (a.queue != b.queue) return a.queue < b.queue;
  if (a.youngest != b.youngest) {
    if (!a.youngest || !b.youngest) return a.youngest.has_value();  // unknown start: oldest
    return *a.youngest > *b.youngest;
  }
  return a.uid < b.uid;
}

bool Planner::isProtected(const Pod& pod, int queue) const {
  const auto minRuntime = queues_[static_cast<std::size_t>(queue)].minRuntime;
  if (minRuntime.count() <= 0) return false;
  const auto start = startOf(pod);
  return start && options_.now - *start < minRuntime;
}

void Planner::buildQueues() {
  const auto all = snap_.queues();
  queues_.resize(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    QueueInfo& q = queues_[i];
    q.state = &all[i];
    q.name = all[i].quota.name;
    q.allocated = all[i].allocated;
    q.owed = owedGpus(all[i]);
    q.minRuntime = all[i].quota.reclaimMinRuntime;
    q.labelled = all[i].overQuota;
    q.priority = all[i].quota.priority;
    queueIndex_.emplace(q.name, static_cast<int>(i));
  }
  for (const auto& p : options_.promised) {
    if (p->uid == pod_.uid) continue;
    if (int q = queueOf(*p); q >= 0) {
      for (int up : queueLineage(all, q))
        queues_[static_cast<std::size_t>(up)].allocated += p->gpus;
      log_.chargeQueue(q, p->gpus);
    }
  }
}

// Pods being evicted that the snapshot still shows: freed for the plan, gone from their queues.
void Planner::noteReleasing() {
  for (const auto& p : options_.releasing) {
    const NodeState* node = snap_.findNode(p->nodeName);
    if (node == nullptr) continue;
    for (const auto& here : node->pods()) {
      if (here->uid != p->uid || !here->holdsGpus()) continue;
      if (!releasingUids_.insert(here->uid).second) break;
      releasingByNode_[node->name()].push_back(here);
      log_.removePod(here);
      if (int q = queueOf(*here); q >= 0) {
        for (int up : queueLineage(snap_.queues(), q))
          queues_[static_cast<std::size_t>(up)].allocated -= here->gpus;
      }
      break;
    }
  }
}

bool Planner::evictable(const Pod& pod) {
  if (!pod.holdsGpus() || pod.terminating) return false;
  if (!releasingUids_.empty() && releasingUids_.count(pod.uid) > 0) return false;
  if (!options_.spared.empty() && options_.spared.count(pod.uid) > 0) {
    sparedSeen_.insert(pod.uid);
    return false;
  }
  const int q = queueOf(pod);
  if (pod.gpus > 0 && (q < 0 || !queues_[static_cast<std::size_t>(q)].victim)) return false;
  if (q >= 0 && isProtected(pod, q)) {
    protected_.insert(pod.uid);
    return false;
  }
  return true;
}

const std::vector<PodPtr>& Planner::gangMembers(const std::string& key) {
  if (!gangs_) {
    gangs_.emplace();
    for (const auto& node : snap_.nodes()) {
      for (const auto& p : node->pods()) {
        // Members without GPUs (a launcher, say) are left alone: they hold nothing reclaim needs.
        if (p->gpus <= 0 || !p->inGang() || !p->holdsGpus() || p->terminating) continue;
        (*gangs_)[p->gangKey()].push_back(p);
      }
    }
    for (auto& [k, members] : *gangs_) {
      std::sort(members.begin(), members.end(),
                [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
    }
  }
  return gangs_->at(key);
}

std::optional<Unit> Planner::unitFor(const PodPtr& pod, const NodeState& node) {
  Unit unit;
  if (!pod->inGang()) {
    unit.members = {pod};
  } else {
    for (const auto& m : gangMembers(pod->gangKey())) {
      if (releasingUids_.count(m->uid) > 0) continue;  // already going
      if (!evictable(*m)) return std::nullopt;         // the whole gang, or none of it
      unit.members.push_back(m);
    }
  }
  for (const auto& m : unit.members) {
    if (m->gpus > 0 && !m->overQuota) unit.borrowed = false;
    if (m->nodeName == node.name()) unit.here += freedBy(*m);
    unit.gpus += m->gpus;
    const auto start = startOf(*m);
    if (start && (!unit.youngest || *start > *unit.youngest)) unit.youngest = start;
    if (m->gpus == 0) continue;
    const int q = queueOf(*m);
    auto it = std::find_if(unit.cost.begin(), unit.cost.end(),
                           [q](const auto& c) { return c.first == q; });
    if (it == unit.cost.end()) it = unit.cost.insert(unit.cost.end(), {q, 0});
    it->second += m->gpus;
    if (!m->overQuota) {
      auto u = std::find_if(unit.unlabelledCost.begin(), unit.unlabelledCost.end(),
                            [q](const auto& c) { return c.first == q; });
      if (u == unit.unlabelledCost.end())
        u = unit.unlabelledCost.insert(unit.unlabelledCost.end(), {q, 0});
      u->second += m->gpus;
    }
  }
  if (unit.here.gpus <= 0 || unit.cost.empty()) return std::nullopt;
  unit.queue =
      std::max_element(unit.cost.begin(), unit.cost.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  if (anyTree_) {
    unit.cost = upTheTree(unit.cost);
    unit.unlabelledCost = upTheTree(unit.unlabelledCost);
  }
  return unit;
}

// Costs charged to queues also charged to the ancestors they give from (QueueInfo::gives).
std::vector<std::pair<int, MilliGpu>> Planner::upTheTree(
    const std::vector<std::pair<int, MilliGpu>>& costs) const {
  std::vector<std::pair<int, MilliGpu>> out;
  for (const auto& [q, amount] : costs) {
    for (int level : queues_[static_cast<std::size_t>(q)].gives) {
      auto it =
          std::find_if(out.begin(), out.end(), [&](const auto& c) { return c.first == level; });
      if (it == out.end()) it = out.insert(out.end(), {level, 0});
      it->second += amount;
    }
  }
  return out;
}

void Planner::collect(const NodeState& node, Candidate& candidate) {
  std::vector<std::string_view> gangsSeen;
  for (const auto& p : node.pods()) {
    if (p->gpus <= 0 || !evictable(*p)) continue;
    if (p->inGang()) {
      if (std::find(gangsSeen.begin(), gangsSeen.end(), p->gang) != gangsSeen.end()) continue;
      gangsSeen.push_back(p->gang);
    }
    if (auto unit = unitFor(p, node)) candidate.units.push_back(std::move(*unit));
  }
}

bool Planner::screen(Candidate& c, MilliGpu* reachable) {
  const NodeState& node = *c.node;
  c.simple = node.allocatable() == static_cast<MilliGpu>(node.gpuCount()) * kMilliPerGpu &&
             node.used() <= node.allocatable();
  sizes_.clear();
  bool any = false;
  for (const auto& p : node.pods()) {
    if (p->holdsGpus() && p->isFractional()) c.simple = false;
    if (p->gpus <= 0 || !evictable(*p)) continue;
    const int q = queueOf(*p);
    const QueueInfo& info = queues_[static_cast<std::size_t>(q)];
    if (p->gpus > info.headroom() || (!p->overQuota && p->gpus > info.unlabelledHeadroom()))
      continue;
    sizes_.push_back(p->gpus);
    // A gang's unit may rank before its member here (another member is younger, or its queue is
    // another): count it as ranking first.
    const bool gang = p->inGang();
    const QueueInfo& by = queues_[static_cast<std::size_t>(info.rankBy)];
    const Rank r = gang
                       ? Rank{true,
                              std::numeric_limits<int>::min(),
                              std::numeric_limits<MilliGpu>::max(),
                              {},
                              Timestamp::max(),
                              {}}
                       : Rank{p->overQuota, by.priority, by.excess(), by.name, startOf(*p), p->uid};
    if (!any || ranksBefore(r, c.optimistic)) c.optimistic = r;
    any = true;
  }
  std::sort(sizes_.rbegin(), sizes_.rend());
  MilliGpu have = node.free() + c.releasing.gpus - c.blocked;
  int k = 0;
  while (have < pod_.gpus && k < static_cast<int>(sizes_.size()))
    have += sizes_[static_cast<std::size_t>(k++)];
  c.bound = k;
  if (have >= pod_.gpus) return true;
  *reachable = std::max(*reachable, std::min(have, node.allocatable()));
  return false;
}

Rank Planner::staticRank(const Unit& unit) const {
  const QueueInfo& q = queues_[static_cast<std::size_t>(rankQueue(unit))];
  return {unit.borrowed, q.priority, q.excess(), q.name, unit.youngest, unit.members.front()->uid};
}

// Which of each queue's levels give GPUs for this reclaimer: those below the lowest ancestor it
// shares with the reclaimer's queue; the top one of them is the one it ranks by.
void Planner::linkTree() {
  const auto all = snap_.queues();
  const std::vector<int> mine = queueLineage(all, reclaimer_);
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    QueueInfo& q = queues_[i];
    q.gives.clear();
    for (int up : queueLineage(all, static_cast<int>(i))) {
      if (std::find(mine.begin(), mine.end(), up) != mine.end()) break;
      q.gives.push_back(up);
      anyTree_ = anyTree_ || up != static_cast<int>(i);
    }
    q.rankBy = q.gives.empty() ? static_cast<int>(i) : q.gives.back();
  }
}

}  // namespace gpufair::policy::reclaim_detail
