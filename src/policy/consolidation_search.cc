// Consolidation planning, part 2: movers, the subsets of them tried on the undo log, and where the
// movers go (see consolidation_planner.h).
#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include "gpufair/common/labels.h"
#include "gpufair/policy/admission.h"

#include "consolidation_planner.h"

namespace gpufair::policy::consolidation_detail {
namespace {

constexpr std::size_t kMaxChoicesPerSize = 4096;  // subsets of one size gathered on one target

bool usableFor(const NodeState& n, const Pod& pod,
               const std::set<std::string, std::less<>>& excluded) {
  return n.node().takesNewPods() && pod.allowsModel(n.node().gpuModel) &&
         excluded.count(n.name()) == 0;
}

}  // namespace

bool Planner::usable(std::size_t node) const {
  return usableFor(*snap_.nodes()[node], pod_, options_.excludedNodes);
}

bool Planner::fitsPod(std::size_t node, const Pod& pod) const {
  const NodeState& n = *snap_.nodes()[node];
  if (!n.node().takesNewPods() || !pod.allowsModel(n.node().gpuModel)) return false;
  if (!fitsCpuMemory(node, pod)) return false;
  if (pod.isFractional()) {
    const FitOptions& fit = snap_.fitOptions();
    return log_.changed(node) ? nodeFits(log_.nodeAfter(node), pod, fit) : nodeFits(n, pod, fit);
  }
  return log_.wholeGpusFor(node, pod) >= pod.gpuCount();
}

bool Planner::fitsCpuMemory(std::size_t node, const Pod& pod) const {
  const Node& n = snap_.nodes()[node]->node();
  const bool strict = snap_.fitOptions().checkCpuMemory;
  if (pod.cpuMilli > 0 && (strict || n.cpuMilli > 0) && log_.cpuFree(node) < pod.cpuMilli) {
    return false;
  }
  return pod.memoryBytes <= 0 || (!strict && n.memoryBytes <= 0) ||
         log_.memoryFree(node) >= pod.memoryBytes;
}

bool Planner::mayMove(const Pod& pod) {
  if (!isMovable(pod)) {
    const auto it = pod.labels.find(kMovableLabel);
    const bool asked = pod.overQuota || (it != pod.labels.end() && it->second == "true");
    if (asked && pod.controller.empty()) noController_.insert(pod.uid);
    return false;
  }
  if (options_.spared.count(pod.uid) > 0) {
    sparedSeen_.insert(pod.uid);
    return false;
  }
  const QueueState* q = snap_.findQueue(pod.queue);
  const std::optional<Timestamp> start = startOf(pod);
  if (q != nullptr && q->quota.reclaimMinRuntime.count() > 0 && start &&
      options_.now - *start < q->quota.reclaimMinRuntime) {
    tooYoung_.insert(pod.uid);
    return false;
  }
  ++movableSeen_;
  return true;
}

const std::vector<PodPtr>& Planner::gangMembers(const std::string& key) {
  if (!gangs_) {
    gangs_.emplace();
    for (const NodeState* n : snap_.nodes()) {
      for (const PodPtr& p : n->pods()) {
        if (p->inGang() && p->holdsGpus() && p->gpus > 0) (*gangs_)[p->gangKey()].push_back(p);
      }
    }
    for (auto& [k, members] : *gangs_) {
      std::sort(members.begin(), members.end(),
                [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
    }
  }
  auto it = gangs_->find(key);
  return it == gangs_->end() ? noMembers_ : it->second;
}

std::optional<Unit> Planner::unitFor(const PodPtr& pod, const NodeState& node) {
  Unit u;
  if (pod->inGang()) {
    u.members = gangMembers(pod->gangKey());
  } else {
    u.members = {pod};
  }
  for (const PodPtr& m : u.members) {
    if (m->terminating || releasingUids_.count(m->uid) > 0) return std::nullopt;
    if (m != pod && !mayMove(*m)) return std::nullopt;
    u.gpus += m->gpus;
    if (m->nodeName == node.name()) u.wholeHere += m->gpusUsed();
    const std::optional<Timestamp> s = startOf(*m);
    if (u.members.front() == m || younger(s, u.youngest)) u.youngest = s;
  }
  return u;
}

void Planner::screen(Target& target) {
  sizes_.clear();
  const NodeState& n = *snap_.nodes()[target.index];
  for (const PodPtr& p : n.pods()) {
    if (!p->holdsGpus() || p->gpus <= 0 || p->terminating) continue;
    if (releasingUids_.count(p->uid) > 0 || !mayMove(*p)) continue;
    sizes_.push_back(p->gpusUsed());
  }
  std::sort(sizes_.begin(), sizes_.end(), std::greater<>());
  int freed = 0;
  target.bound = 0;
  for (std::size_t i = 0; i < sizes_.size(); ++i) {
    freed += sizes_[i];
    if (freed >= target.lacking) {
      target.bound = static_cast<int>(i) + 1;
      return;
    }
  }
}

std::vector<Unit> Planner::unitsOn(std::size_t target) {
  const NodeState& n = *snap_.nodes()[target];
  std::vector<Unit> units;
  std::vector<std::string> gangsSeen;
  for (const PodPtr& p : n.pods()) {
    if (!p->holdsGpus() || p->gpus <= 0 || p->terminating) continue;
    if (releasingUids_.count(p->uid) > 0 || !mayMove(*p)) continue;
    if (p->inGang()) {
      const std::string key = p->gangKey();
      if (std::find(gangsSeen.begin(), gangsSeen.end(), key) != gangsSeen.end()) continue;
      gangsSeen.push_back(key);
    }
    if (std::optional<Unit> u = unitFor(p, n)) units.push_back(std::move(*u));
  }
  return units;
}

std::optional<NodePlan> Planner::evaluate(const Target& target, const NodePlan* best) {
  const std::vector<Unit> units = unitsOn(target.index);
  int limit = options_.maxMoves;
  if (best != nullptr) limit = std::min(limit, best->pods);
  for (int k = target.bound; k <= limit; ++k) {
    // Every subset of exactly k pods whose GPUs here could cover what the pod lacks.
    std::vector<Choice> choices;
    Choice current;
    std::function<void(std::size_t, int)> gather = [&](std::size_t from, int covered) {
      if (choices.size() >= kMaxChoicesPerSize) return;
      if (current.pods == k) {
        if (covered >= target.lacking) choices.push_back(current);
        return;
      }
      for (std::size_t i = from; i < units.size(); ++i) {
        const Unit& u = units[i];
        const int pods = static_cast<int>(u.members.size());
        if (current.pods + pods > k) continue;
        current.units.push_back(&u);
        current.pods += pods;
        current.gpus += u.gpus;
        gather(i + 1, covered + u.wholeHere);
        current.units.pop_back();
        current.pods -= pods;
        current.gpus -= u.gpus;
      }
    };
    gather(0, 0);
    for (Choice& c : choices) {
      c.youngest.reset();
      bool first = true;
      for (const Unit* u : c.units) {  // the oldest mover stands for the subset
        if (first || younger(c.youngest, u->youngest)) c.youngest = u->youngest;
        first = false;
      }
    }
    std::stable_sort(choices.begin(), choices.end(), [](const Choice& a, const Choice& b) {
      if (a.gpus != b.gpus) return a.gpus < b.gpus;
      return younger(a.youngest, b.youngest);
    });
    for (const Choice& c : choices) {
      // Choices come best first, larger k after: once one cannot beat the best plan, none can.
      if (best != nullptr) {
        NodePlan key;
        key.target = target.index;
        key.pods = c.pods;
        key.gpus = c.gpus;
        key.youngest = c.youngest;
        if (!betterPlan(key, *best, snap_)) return std::nullopt;
      }
      if (tries_ >= options_.maxTries) return std::nullopt;
      ++tries_;
      NodePlan plan;
      if (tryChoice(target, c, plan)) return plan;
    }
  }
  return std::nullopt;
}

bool Planner::tryChoice(const Target& target, const Choice& choice, NodePlan& plan) {
  const UndoLog::Mark mark = log_.checkpoint();
  std::vector<PodPtr> movers;
  for (const Unit* u : choice.units) {
    for (const PodPtr& m : u->members) {
      log_.removePod(m);
      movers.push_back(m);
    }
  }
  const NodeState& node = *snap_.nodes()[target.index];
  if (!fitsPod(target.index, pod_)) {
    if (!fitsCpuMemory(target.index, pod_)) targetCpuShort_ = true;
    log_.rollback(mark);
    return false;
  }
  if (!pod_.isFractional()) {  // movers never go to the target: the hold is for the record
    Reservation held;
    held.node = node.name();
    held.gpus = pod_.gpus;
    held.holder = pod_.uid;
    held.queue = pod_.queue;
    held.reason = "consolidation";
    held.holderName = pod_.key();
    log_.reserve(std::move(held));
  }
  // The largest movers first: they are the hardest to fit.
  std::vector<PodPtr> order = movers;
  std::stable_sort(order.begin(), order.end(),
                   [](const PodPtr& a, const PodPtr& b) { return a->gpus > b->gpus; });
  std::vector<std::pair<PodPtr, std::size_t>> placed;
  for (const PodPtr& m : order) {
    const std::optional<std::size_t> dest = destinationFor(*m, target.index);
    if (!dest) {
      refitFailed_ = true;
      log_.rollback(mark);
      return false;
    }
    log_.place(*dest, m);
    placed.emplace_back(m, *dest);
  }
  log_.rollback(mark);
  plan.target = target.index;
  plan.pods = choice.pods;
  plan.gpus = choice.gpus;
  plan.youngest = choice.youngest;
  for (const PodPtr& m : movers) {  // in eviction order: the choice's order, gangs together
    auto it =
        std::find_if(placed.begin(), placed.end(), [&](const auto& p) { return p.first == m; });
    ConsolidationMove move;
    move.pod = m;
    move.from = m->nodeName;
    move.to = snap_.nodes()[it->second]->name();
    plan.moves.push_back(std::move(move));
  }
  return true;
}

std::optional<std::size_t> Planner::destinationFor(const Pod& mover, std::size_t target) const {
  const auto nodes = snap_.nodes();
  std::optional<std::size_t> best;
  MilliGpu bestLeft = 0;
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    if (j == target || !usableFor(*nodes[j], mover, options_.excludedNodes)) continue;
    if (log_.free(j) < mover.gpus || !fitsPod(j, mover)) continue;
    const MilliGpu left = log_.free(j) - mover.gpus;  // best fit: the least left over
    if (!best || left < bestLeft) {
      best = j;
      bestLeft = left;
    }
  }
  return best;
}

bool Planner::betterPlan(const NodePlan& a, const NodePlan& b, const ClusterSnapshot& snap) {
  if (a.pods != b.pods) return a.pods < b.pods;
  if (a.gpus != b.gpus) return a.gpus < b.gpus;
  if (a.youngest != b.youngest) return younger(a.youngest, b.youngest);
  return snap.nodes()[a.target]->name() < snap.nodes()[b.target]->name();
}

}  // namespace gpufair::policy::consolidation_detail
