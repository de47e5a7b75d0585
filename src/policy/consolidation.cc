// Consolidation planning, part 1: eligibility, the pass over the nodes, the outcome. The search
// over targets and movers is in consolidation_search.cc (see consolidation_planner.h).
#include <algorithm>
#include <utility>

#include "gpufair/common/labels.h"
#include "gpufair/policy/admission.h"
#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/reservation.h"

#include "class_key.h"
#include "consolidation_planner.h"

namespace gpufair::policy {

const char* consolidationKindName(ConsolidationOutcome::Kind kind) {
  switch (kind) {
    case ConsolidationOutcome::Kind::kPlanned:
      return "planned";
    case ConsolidationOutcome::Kind::kNotNeeded:
      return "not-needed";
    case ConsolidationOutcome::Kind::kNotEligible:
      return "not-eligible";
    case ConsolidationOutcome::Kind::kNotFragmented:
      return "not-fragmented";
    case ConsolidationOutcome::Kind::kNoPlan:
      return "no-plan";
  }
  return "unknown";
}

std::string consolidationClassKey(const ClusterSnapshot& snapshot, const Pod& pod) {
  if (!pod.nodeName.empty() || pod.isFinished() || pod.terminating || pod.inGang() ||
      !pod.gangError.empty() || pod.queue.empty() || pod.gpus <= 0 ||
      holdsAny(pod, snapshot.reservations())) {
    return {};
  }
  // Counted in its queue's demand, as the pending pods are: then admission reads the listed fair
  // shares, the same for every pod of the queue.
  if (!countedPending(snapshot, pod)) return {};
  return detail::requestKey(pod, /*cpuMemory=*/true);  // it checks them where nodes report them
}

bool isMovable(const Pod& pod) {
  if (pod.controller.empty()) return false;
  if (pod.overQuota) return true;
  auto it = pod.labels.find(kMovableLabel);
  return it != pod.labels.end() && it->second == "true";
}

ConsolidationOutcome planConsolidation(const ClusterSnapshot& snapshot, const Pod& pod,
                                       const ConsolidationOptions& options) {
  consolidation_detail::Planner planner(snapshot, pod, options);
  return planner.run();
}

namespace consolidation_detail {

std::string gpusText(MilliGpu m) {
  return formatGpus(m) + (m == kMilliPerGpu ? " GPU" : " GPUs");
}

std::optional<Timestamp> startOf(const Pod& pod) {
  if (pod.started) return pod.started;
  return pod.created;
}

bool younger(const std::optional<Timestamp>& a, const std::optional<Timestamp>& b) {
  if (!a || !b) return a.has_value() && !b.has_value();
  return *a > *b;
}

ConsolidationOutcome Planner::outcome(ConsolidationOutcome::Kind kind, std::string reason) const {
  ConsolidationOutcome out;
  out.kind = kind;
  out.reason = std::move(reason);
  return out;
}

std::optional<ConsolidationOutcome> Planner::eligibility() const {
  using Kind = ConsolidationOutcome::Kind;
  if (pod_.gpus <= 0) return outcome(Kind::kNotEligible, "asks for no GPUs");
  if (!pod_.nodeName.empty()) return outcome(Kind::kNotEligible, "is bound already");
  if (pod_.isFinished() || pod_.terminating) return outcome(Kind::kNotEligible, "is not waiting");
  if ((pod_.inGang() && !gangMember_) || !pod_.gangError.empty()) {
    return outcome(Kind::kNotEligible, "is a gang member: its gang is planned whole");
  }
  const Admission admission = admit(snap_, pod_);
  if (!admission.status.isOk()) {
    return outcome(Kind::kNotEligible, "its queue does not admit it: " + admission.status.reason());
  }
  return std::nullopt;
}

std::optional<ConsolidationOutcome> Planner::scan() {
  if (pod_.isFractional()) return scanShare();
  using Kind = ConsolidationOutcome::Kind;
  const auto nodes = snap_.nodes();
  const int need = pod_.gpuCount();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!usable(i) || nodes[i]->allocatable() < pod_.gpus) continue;
    if (fitsPod(i, pod_)) {
      fitNode_ = i;
      return outcome(Kind::kNotNeeded, "fits on node " + nodes[i]->name() + " now");
    }
    const int whole = log_.wholeGpusFor(i, pod_);
    const MilliGpu free = static_cast<MilliGpu>(whole) * kMilliPerGpu;
    freeTotal_ += free;
    largestFree_ = std::max(largestFree_, free);
    if (whole >= need) {  // its GPUs are free here, its CPU or memory not: no GPU fragmentation
      if (cpuShortNode_.empty()) cpuShortNode_ = nodes[i]->name();
      continue;
    }
    targets_.push_back({i, need - whole, 0});
  }
  // Whole GPUs free on nodes too small for the pod count too: movers may go there.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (usable(i) && nodes[i]->allocatable() < pod_.gpus) {
      freeTotal_ += static_cast<MilliGpu>(log_.wholeGpusFor(i, pod_)) * kMilliPerGpu;
    }
  }
  if (targets_.empty() && !cpuShortNode_.empty()) {
    return outcome(Kind::kNotFragmented,
                   "its GPUs are free on node " + cpuShortNode_ +
                       " but not the CPU or memory it asks for: it waits on those, not on GPUs");
  }
  if (targets_.empty()) {
    return outcome(Kind::kNotFragmented, "no node it may use has " + gpusText(pod_.gpus) +
                                             " GPUs in all: moving pods cannot help");
  }
  if (freeTotal_ < pod_.gpus) {
    return outcome(Kind::kNotFragmented, "only " + gpusText(freeTotal_) +
                                             " free on the nodes it may use (it asks for " +
                                             gpusText(pod_.gpus) + "): moving pods cannot help");
  }
  // Fewest GPUs lacking first: those need the fewest moves, as a rule. Movers are looked at
  // lazily, in this order (run()).
  std::sort(targets_.begin(), targets_.end(), [](const Target& a, const Target& b) {
    if (a.lacking != b.lacking) return a.lacking < b.lacking;
    return a.index < b.index;  // nodes are sorted by name
  });
  return std::nullopt;
}

// A share of one GPU: fragmented when the GPUs it may use have that much free in total but no one
// GPU has. Every node with a GPU is a target lacking one move at least (a pod off one of its
// GPUs); those with the most free GPU share first.
std::optional<ConsolidationOutcome> Planner::scanShare() {
  using Kind = ConsolidationOutcome::Kind;
  const auto nodes = snap_.nodes();
  std::vector<std::pair<MilliGpu, std::size_t>> byFree;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!usable(i) || nodes[i]->gpuCount() == 0) continue;
    if (fitsPod(i, pod_)) {
      fitNode_ = i;
      return outcome(Kind::kNotNeeded, "fits on node " + nodes[i]->name() + " now");
    }
    MilliGpu most = 0;
    for (int g = 0; g < nodes[i]->gpuCount(); ++g)
      most = std::max(most, kMilliPerGpu - nodes[i]->gpuUsed(g));
    freeTotal_ += log_.free(i);
    largestFree_ = std::max(largestFree_, most);
    byFree.emplace_back(most, i);
  }
  if (freeTotal_ < pod_.gpus) {
    return outcome(Kind::kNotFragmented, "only " + gpusText(freeTotal_) +
                                             " free on the GPUs it may use (it asks for " +
                                             gpusText(pod_.gpus) + "): moving pods cannot help");
  }
  std::stable_sort(byFree.begin(), byFree.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [most, i] : byFree) targets_.push_back({i, 1, 0});
  return std::nullopt;
}

ConsolidationOutcome Planner::run() {
  if (auto early = eligibility()) return *early;
  for (const PodPtr& p : options_.releasing) {
    if (p == nullptr) continue;
    releasingUids_.insert(p->uid);
    log_.removePod(p);
  }
  if (auto early = scan()) {
    if (gangMember_ && fitNode_) {  // the gang's planner places this member as things are
      early->plan = ConsolidationPlan{};
      early->plan->node = snap_.nodes()[*fitNode_]->name();
      early->plan->waiting = pod_.key();
      early->plan->waitingUid = pod_.uid;
      early->plan->queue = pod_.queue;
      early->plan->gpus = pod_.gpus;
      early->plan->reason = early->reason;
    }
    return *early;
  }

  std::optional<NodePlan> best;
  int evaluated = 0;
  int screened = 0;
  for (Target& t : targets_) {
    if (evaluated >= options_.maxTargets || screened >= options_.maxScreened ||
        tries_ >= options_.maxTries) {
      break;
    }
    ++screened;
    screen(t);
    if (t.bound <= 0 || (best && t.bound > best->pods)) continue;
    ++evaluated;
    std::optional<NodePlan> plan = evaluate(t, best ? &*best : nullptr);
    if (plan && (!best || betterPlan(*plan, *best, snap_))) best = std::move(plan);
  }
  if (!best) return outcome(ConsolidationOutcome::Kind::kNoPlan, noPlanReason());
  ConsolidationOutcome out;
  out.kind = ConsolidationOutcome::Kind::kPlanned;
  out.plan = commit(*best);
  out.reason = out.plan->reason;
  return out;
}

std::string Planner::noPlanReason() const {
  std::string text = gpusText(freeTotal_) + " free in total but at most " + gpusText(largestFree_) +
                     (pod_.isFractional() ? " on one GPU" : " on one node") +
                     " it may use (it asks for " + gpusText(pod_.gpus) + "); ";
  if (movableSeen_ == 0 && tooYoung_.empty() && sparedSeen_.empty()) {
    text += "no movable pods (label " + std::string(kMovableLabel) +
            "=true, or borrowed, with a controller to recreate them) where room could be made";
    if (!noController_.empty()) {
      text += " (" + std::to_string(noController_.size()) +
              " movable pods have no controller to recreate them)";
    }
    return text;
  }
  text += "no moves of at most " + std::to_string(options_.maxMoves) +
          " movable pods make room and fit the movers elsewhere";
  std::vector<std::string> why;
  if (!tooYoung_.empty()) {
    why.push_back(std::to_string(tooYoung_.size()) +
                  " too young to move (their queue's reclaimMinRuntime)");
  }
  if (!sparedSeen_.empty()) {
    why.push_back(std::to_string(sparedSeen_.size()) + " refused eviction (PodDisruptionBudget)");
  }
  if (!noController_.empty()) {
    why.push_back(std::to_string(noController_.size()) + " without a controller to recreate them");
  }
  if (refitFailed_) why.push_back("movers would fit on no other node");
  if (targetCpuShort_) why.push_back("the freed node would lack the pod's CPU or memory");
  for (std::size_t i = 0; i < why.size(); ++i) text += (i == 0 ? ": " : ", ") + why[i];
  return text;
}

ConsolidationPlan Planner::commit(const NodePlan& plan) const {
  ConsolidationPlan out;
  out.node = snap_.nodes()[plan.target]->name();
  out.waiting = pod_.key();
  out.waitingUid = pod_.uid;
  out.queue = pod_.queue;
  out.gpus = pod_.gpus;
  out.moves = plan.moves;
  out.movedGpus = plan.gpus;
  const std::string forWhom = pod_.key() + " (" + gpusText(pod_.gpus) + ")";
  std::string list;
  for (std::size_t i = 0; i < out.moves.size(); ++i) {
    ConsolidationMove& m = out.moves[i];
    m.reason = "moved to make room for " + forWhom + " on " + out.node + "; goes to " + m.to;
    list += (i == 0 ? "" : ", ") + m.pod->key() + " (" + gpusText(m.pod->gpus) + ") to " + m.to;
  }
  out.reason = "consolidation: move " + list + " so that " + forWhom + " fits on " + out.node;
  return out;
}

}  // namespace consolidation_detail
}  // namespace gpufair::policy
