#include "gpufair/policy/reclaim.h"

#include <algorithm>
#include <map>

#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/reservation.h"

#include "class_key.h"
#include "reclaim_planner.h"

namespace gpufair::policy {
namespace reclaim_detail {

MilliGpu Planner::consumed(int queue) const {
  return queues_[static_cast<std::size_t>(queue)].allocated - log_.queue(queue).allocated;
}

MilliGpu Planner::consumedUnlabelled(int queue) const {
  const QueueState& now = log_.queue(queue);
  return queues_[static_cast<std::size_t>(queue)].unlabelledBase - (now.allocated - now.overQuota);
}

MilliGpu Planner::excessNow(int queue) const {
  return queues_[static_cast<std::size_t>(queue)].excess() - consumed(queue);
}

bool Planner::canEvict(const Unit& unit) const {
  for (const auto& [q, amount] : unit.cost) {
    const QueueInfo& info = queues_[static_cast<std::size_t>(q)];
    if (!info.victim || consumed(q) + amount > info.headroom()) return false;
  }
  for (const auto& [q, amount] : unit.unlabelledCost) {
    const QueueInfo& info = queues_[static_cast<std::size_t>(q)];
    if (consumedUnlabelled(q) + amount > info.unlabelledHeadroom()) return false;
  }
  return true;
}

void Planner::evict(const Unit& unit) {
  for (const auto& m : unit.members) log_.removePod(m);
}

void Planner::restore(const Unit& unit) {
  for (const auto& m : unit.members) log_.restorePod(*m);
}

bool Planner::fitsNow(const Candidate& c) const {
  const NodeState& node = *c.node;
  if (c.simple) {
    // Every GPU is whole-used or free: fully free GPUs = free / 1000, and the largest free share of
    // one GPU is a whole GPU when any is free. Whole GPUs reserved here for other holders are not
    // free for this pod.
    const MilliGpu free = log_.free(c.index) - c.blocked;
    const MilliGpu need =
        pod_.isFractional()
            ? kMilliPerGpu
            : std::max(pod_.gpus, static_cast<MilliGpu>(pod_.gpuCount()) * kMilliPerGpu);
    if (free < need) return false;
    if (snap_.fitOptions().checkCpuMemory) {
      const Node& n = node.node();
      if (pod_.cpuMilli > 0 && n.cpuMilli - log_.cpuUsed(c.index) < pod_.cpuMilli) return false;
      if (pod_.memoryBytes > 0 && n.memoryBytes - log_.memoryUsed(c.index) < pod_.memoryBytes)
        return false;
    }
    return true;
  }
  if (!log_.changed(c.index)) return nodeFits(node, pod_, snap_.fitOptions());
  // Rebuild only this node without the victims and the pods being evicted, and ask nodeFits.
  return nodeFits(log_.nodeAfter(c.index), pod_, snap_.fitOptions());
}

// Greedy on the undo log: by victim order (bySize false) or by GPUs freed here first (bySize
// true), until the pod fits; then drops every victim not needed, least preferred first. The log is
// rolled back before returning.
std::optional<NodePlan> Planner::evaluate(const Candidate& c, bool bySize) {
  const UndoLog::Mark start = log_.checkpoint();
  std::vector<char> taken(c.units.size(), 0);
  std::vector<const Unit*> order;
  while (!fitsNow(c)) {
    int pick = -1;
    Rank pickRank;
    for (std::size_t i = 0; i < c.units.size(); ++i) {
      const Unit& u = c.units[i];
      if (taken[i] || !canEvict(u)) continue;
      const int by = rankQueue(u);
      const QueueInfo& q = queues_[static_cast<std::size_t>(by)];
      const Rank r{u.borrowed, q.priority, excessNow(by),
                   q.name,     u.youngest, u.members.front()->uid};
      const Unit* best = pick < 0 ? nullptr : &c.units[static_cast<std::size_t>(pick)];
      const bool first = best == nullptr ||
                         (bySize && u.here.gpus != best->here.gpus ? u.here.gpus > best->here.gpus
                                                                   : ranksBefore(r, pickRank));
      if (first) {
        pick = static_cast<int>(i);
        pickRank = r;
      }
    }
    if (pick < 0) {
      log_.rollback(start);
      return std::nullopt;
    }
    taken[static_cast<std::size_t>(pick)] = 1;
    evict(c.units[static_cast<std::size_t>(pick)]);
    order.push_back(&c.units[static_cast<std::size_t>(pick)]);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UndoLog::Mark mark = log_.checkpoint();
    restore(**it);
    if (!fitsNow(c)) log_.rollback(mark);
  }
  NodePlan plan;
  plan.candidate = &c;
  for (const Unit* u : order) {
    if (log_.isRemoved(*u->members.front())) plan.units.push_back(u);
  }
  log_.rollback(start);
  std::sort(plan.units.begin(), plan.units.end(), [this](const Unit* a, const Unit* b) {
    return ranksBefore(staticRank(*a), staticRank(*b));
  });
  for (const Unit* u : plan.units) {
    plan.pods += static_cast<int>(u->members.size());
    if (!u->borrowed) plan.unlabelled += static_cast<int>(u->members.size());
    plan.freed += u->here;
  }
  return plan;
}

bool Planner::better(const NodePlan& a, const NodePlan& b) const {
  if (a.unlabelled != b.unlabelled) return a.unlabelled < b.unlabelled;
  if (a.pods != b.pods) return a.pods < b.pods;
  for (std::size_t i = 0; i < a.units.size() && i < b.units.size(); ++i) {
    const Rank ra = staticRank(*a.units[i]);
    const Rank rb = staticRank(*b.units[i]);
    if (ranksBefore(ra, rb)) return true;
    if (ranksBefore(rb, ra)) return false;
  }
  if (a.units.size() != b.units.size()) return a.units.size() < b.units.size();
  if (a.freed.gpus != b.freed.gpus) return a.freed.gpus < b.freed.gpus;
  return a.candidate->node->name() < b.candidate->node->name();
}

std::string Planner::victimReason(const Pod& victim) const {
  const int q = queueOf(victim);
  const std::string by = "Reclaimed by queue " + pod_.queue + ": ";
  if (q < 0) return by + "queue " + victim.queue + " is above what it is owed";
  const QueueInfo& info = queues_[static_cast<std::size_t>(q)];
  if (info.excess() > 0) {
    return by + std::string(info.name) + " is " + gpusText(info.excess()) + " over its " +
           "fair share of " + formatGpus(info.owed);
  }
  return by + std::string(info.name) + " holds " + gpusText(info.allocated) +
         ", above its deserved quota of " + formatGpus(info.state->quota.gpu.deserved);
}

ReclaimPlan Planner::commit(const NodePlan& chosen) const {
  ReclaimPlan plan;
  plan.node = chosen.candidate->node->name();
  plan.reclaimer = pod_.key();
  plan.reclaimerUid = pod_.uid;
  plan.queue = pod_.queue;
  plan.gpus = pod_.gpus;
  plan.freedOnNode = chosen.freed.gpus;
  std::map<std::string, int> perQueue;
  for (const Unit* u : chosen.units) {
    for (const auto& m : u->members) {
      plan.victims.push_back({m, victimReason(*m)});
      ++perQueue[m->queue];
    }
  }
  const QueueInfo& mine = queues_[static_cast<std::size_t>(reclaimer_)];
  std::string from;
  for (const auto& [queue, count] : perQueue) {
    from += (from.empty() ? "" : ", ") + std::to_string(count) + (count == 1 ? " pod" : " pods") +
            " of " + queue;
  }
  plan.reason = "queue " + pod_.queue + " (" + formatGpus(mine.allocated) + "/" +
                formatGpus(inQuota_ ? mine.state->quota.gpu.deserved : mine.owed) + " GPUs " +
                (inQuota_ ? "deserved" : "fair share") + ") reclaims " + gpusText(pod_.gpus) +
                " on " + plan.node + " for " + pod_.key() + " by evicting " + from;
  return plan;
}

std::optional<ReclaimOutcome> Planner::prepare() {
  using Kind = ReclaimOutcome::Kind;
  if (pod_.gpus <= 0) return outcome(Kind::kNotEligible, "the pod requests no GPUs");
  buildQueues();
  reclaimer_ = queueOf(pod_);
  if (reclaimer_ < 0) {
    return outcome(Kind::kNotEligible, "its queue " + pod_.queue + " does not exist");
  }
  QueueInfo& mine = queues_[static_cast<std::size_t>(reclaimer_)];
  mine.owed = fairShareCounting(snap_, pod_);  // with the pod counted, pending or not
  const MilliGpu after = mine.allocated + pod_.gpus;
  const MilliGpu deserved = mine.state->quota.gpu.deserved;
  inQuota_ = after <= deserved;
  const auto all = snap_.queues();
  for (int up : queueLineage(all, reclaimer_)) {
    const QueueState& level = all[static_cast<std::size_t>(up)];
    const MilliGpu levelAfter = queues_[static_cast<std::size_t>(up)].allocated + pod_.gpus;
    if (level.quota.gpu.limit && levelAfter > *level.quota.gpu.limit) {
      return outcome(Kind::kNotEligible,
                     "queue " + level.quota.name + " would hold " + gpusText(levelAfter) +
                         " with this pod, above its limit " + formatGpus(*level.quota.gpu.limit) +
                         (up == reclaimer_ ? std::string() : ", parent of " + pod_.queue));
    }
  }
  if (!inQuota_ && after > mine.owed) {
    return outcome(Kind::kNotEligible, "queue " + pod_.queue + " would hold " + gpusText(after) +
                                           " with this pod, above its deserved " +
                                           formatGpus(deserved) + " and its fair share " +
                                           formatGpus(mine.owed) +
                                           ": it may borrow idle GPUs but not reclaim them");
  }
  noteReleasing();
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    const QueueState& now = log_.queue(static_cast<int>(i));
    queues_[i].unlabelledBase = now.allocated - now.overQuota;
  }
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    QueueInfo& q = queues_[i];
    q.floor =
        inQuota_ ? q.state->quota.gpu.deserved : std::max(q.state->quota.gpu.deserved, q.owed);
    q.victim = static_cast<int>(i) != reclaimer_ && q.allocated > q.floor;
  }
  linkTree();
  for (const QueueInfo& q : queues_) {
    // A queue gives only when it and every level it gives from is above its floor.
    const bool gives = q.victim && q.state->children == 0 &&
                       std::all_of(q.gives.begin(), q.gives.end(), [&](int level) {
                         return queues_[static_cast<std::size_t>(level)].victim;
                       });
    anyVictimQueue_ = anyVictimQueue_ || gives;
  }
  return std::nullopt;
}

std::optional<ReclaimOutcome> Planner::findCandidates(std::vector<Candidate>& candidates,
                                                      MilliGpu* reachable) {
  using Kind = ReclaimOutcome::Kind;
  for (std::size_t index = 0; index < snap_.nodes().size(); ++index) {
    const NodeState& node = *snap_.nodes()[index];
    if (!node.node().takesNewPods() || !pod_.allowsModel(node.node().gpuModel) ||
        node.allocatable() < pod_.gpus ||
        (!options_.excludedNodes.empty() && options_.excludedNodes.count(node.name()) > 0)) {
      continue;
    }
    Candidate c;
    c.node = &node;
    c.index = index;
    if (auto it = releasingByNode_.find(node.name()); it != releasingByNode_.end()) {
      c.releasingPods = it->second;
      for (const auto& p : c.releasingPods) c.releasing += freedBy(*p);
      if (nodeFits(log_.nodeAfter(index), pod_, snap_.fitOptions())) {
        return outcome(Kind::kNotNeeded, "it fits on node " + node.name() +
                                             " once pods being evicted there are gone");
      }
    } else if (nodeFits(node, pod_, snap_.fitOptions())) {
      return outcome(Kind::kNotNeeded, "it fits on node " + node.name() + " now");
    }
    // GPUs reserved here for another pod or gang are not the reclaimer's to free.
    if (!node.reservations().empty()) {
      c.blocked = (node.reservedAgainst(pod_) + kMilliPerGpu - 1) / kMilliPerGpu * kMilliPerGpu;
    }
    // Prune on per-queue totals before looking at pods.
    MilliGpu upper = node.free() + c.releasing.gpus - c.blocked;
    for (const QueueUse& use : node.byQueue()) {
      auto q = queueIndex_.find(use.queue);
      if (q != queueIndex_.end() && queues_[static_cast<std::size_t>(q->second)].victim)
        upper += use.allocated;
    }
    if (upper < pod_.gpus) {
      *reachable = std::max(*reachable, std::min(std::max<MilliGpu>(0, upper), node.allocatable()));
      continue;
    }
    if (screen(c, reachable)) candidates.push_back(std::move(c));
  }
  return std::nullopt;
}

std::optional<NodePlan> Planner::search(std::vector<Candidate>& candidates, MilliGpu* reachable) {
  // By the lower bound on evictions, then by the best rank a victim there could have.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.bound != b.bound) return a.bound < b.bound;
    if (ranksBefore(a.optimistic, b.optimistic)) return true;
    if (ranksBefore(b.optimistic, a.optimistic)) return false;
    return a.node->name() < b.node->name();
  });
  std::optional<NodePlan> best;
  for (Candidate& c : candidates) {
    // Nothing after this node can beat the best plan: it needs more evictions, or as many with a
    // first victim that ranks after the best plan's (unless the best plan had to take pods not
    // labelled borrowed).
    if (best && best->unlabelled == 0 &&
        (c.bound > best->pods ||
         (c.bound == best->pods && ranksBefore(staticRank(*best->units.front()), c.optimistic)))) {
      break;
    }
    collect(*c.node, c);
    for (bool bySize : {false, true}) {
      auto plan = evaluate(c, bySize);
      if (plan && (!best || better(*plan, *best))) best = std::move(plan);
    }
    if (!best) {
      // For the refusal: what the rules let this node free.
      const UndoLog::Mark mark = log_.checkpoint();
      for (const Unit& u : c.units) {
        if (canEvict(u)) evict(u);
      }
      const MilliGpu freed = c.node->used() - log_.used(c.index);
      *reachable = std::max(*reachable, std::min(c.node->free() + freed, c.node->allocatable()));
      log_.rollback(mark);
    }
  }
  return best;
}

ReclaimOutcome Planner::noPlan(MilliGpu reachable) const {
  std::string why =
      "no node can be freed for the pod (" + gpusText(pod_.gpus) + ", queue " + pod_.queue + "): ";
  if (!anyVictimQueue_) {
    why += "no other queue holds more than it is owed";
  } else {
    why +=
        "evicting what the rules allow leaves at most " + gpusText(reachable) + " free on one node";
    auto count = [](std::size_t n, const char* what) {
      return std::to_string(n) + (n == 1 ? " pod is " : " pods are ") + what;
    };
    if (!protected_.empty())
      why += "; " + count(protected_.size(), "protected by reclaimMinRuntime");
    if (!sparedSeen_.empty()) why += "; " + count(sparedSeen_.size(), "refused eviction");
  }
  return outcome(ReclaimOutcome::Kind::kNoPlan, std::move(why));
}

ReclaimOutcome Planner::run() {
  if (auto refused = prepare()) return *refused;
  std::vector<Candidate> candidates;
  MilliGpu reachable = 0;
  if (auto fits = findCandidates(candidates, &reachable)) return *fits;
  const std::optional<NodePlan> best = search(candidates, &reachable);
  if (!best) return noPlan(reachable);
  ReclaimOutcome out;
  out.kind = ReclaimOutcome::Kind::kPlanned;
  out.plan = commit(*best);
  out.reason = out.plan->reason;
  return out;
}

}  // namespace reclaim_detail

const char* reclaimKindName(ReclaimOutcome::Kind kind) {
  switch (kind) {
    case ReclaimOutcome::Kind::kPlanned:
      return "planned";
    case ReclaimOutcome::Kind::kNotNeeded:
      return "not-needed";
    case ReclaimOutcome::Kind::kNotEligible:
      return "not-eligible";
    case ReclaimOutcome::Kind::kNoPlan:
      return "no-plan";
  }
  return "unknown";
}

MilliGpu owedGpus(const QueueState& queue) {
  return queue.fairShare;
}

ReclaimOutcome planReclaim(const ClusterSnapshot& snapshot, const Pod& pod,
                           const ReclaimOptions& options) {
  return reclaim_detail::Planner(snapshot, pod, options).run();
}

std::string reclaimClassKey(const ClusterSnapshot& snapshot, const Pod& pod,
                            const ReclaimOptions& options) {
  if (!pod.nodeName.empty() || pod.inGang() || holdsAny(pod, snapshot.reservations())) return {};
  for (const PodPtr& p : options.promised) {
    if (p->uid == pod.uid) return {};
  }
  // CPU and memory only when the fit checks them: else the planner reads neither.
  return detail::requestKey(pod, snapshot.fitOptions().checkCpuMemory,
                            {fairShareCounting(snapshot, pod)});
}

}  // namespace gpufair::policy
