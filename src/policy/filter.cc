#include "gpufair/policy/filter.h"

#include <algorithm>

#include "gpufair/policy/gang.h"

namespace gpufair::policy {
namespace {

void reject(FilterResult& r, std::string_view node, Status status) {
  auto& verdicts = status.code() == Code::kUnschedulableAndUnresolvable ? r.unresolvable : r.failed;
  verdicts.push_back({node, status.takeReason()});
}

}  // namespace

FilterResult filter(const ClusterSnapshot& snapshot, const Pod& pod,
                    std::span<const std::string_view> candidates) {
  if (pod.inGang()) return filterGangMember(snapshot, pod, candidates);
  return filterPod(snapshot, pod, candidates);
}

FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates) {
  FilterResult r;
  const FitOptions& options = snapshot.fitOptions();
  if (pod.gpus == 0 && !options.checkCpuMemory) {
    r.feasible.assign(candidates.begin(), candidates.end());
    r.admission.queue = pod.queue;
    return r;
  }
  r.admission = admit(snapshot, pod);
  if (!r.admission.status.isOk()) {
    for (std::string_view name : candidates) reject(r, name, r.admission.status);
    return r;
  }
  r.feasible.reserve(candidates.size());
  for (std::string_view name : candidates) {
    const NodeState* node = snapshot.findNode(name);
    if (node == nullptr) {
      r.failed.push_back(
          {name, "node " + std::string(name) + " is not in gpufair's cluster view yet"});
      continue;
    }
    if (nodeFits(*node, pod, options)) {
      r.feasible.push_back(name);
    } else {
      reject(r, name, fitsNode(*node, pod, options));
    }
  }
  return r;
}

std::vector<NodeScore> prioritize(const ClusterSnapshot& snapshot, const Pod& pod,
                                  std::span<const std::string_view> candidates,
                                  const Scorer& scorer) {
  std::vector<NodeScore> scores;
  scores.reserve(candidates.size());
  for (std::string_view name : candidates) scores.push_back({name, 0});
  const FitOptions& options = snapshot.fitOptions();
  if (pod.gpus == 0 && !options.checkCpuMemory) return scores;

  std::vector<const NodeState*> fitting;
  std::vector<std::size_t> where;
  fitting.reserve(candidates.size());
  where.reserve(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const NodeState* node = snapshot.findNode(candidates[i]);
    if (node != nullptr && nodeFits(*node, pod, options)) {
      fitting.push_back(node);
      where.push_back(i);
    }
  }
  if (fitting.empty()) return scores;
  std::vector<double> raw(fitting.size());
  scorer.score(snapshot, pod, fitting, raw);
  const std::vector<int> normalized = normalizeScores(raw);
  const bool holds = !snapshot.reservations().empty() && snapshot.reservedFor(pod) > 0;
  for (std::size_t j = 0; j < where.size(); ++j) {
    int score = normalized[j];
    // The holder's reserved nodes come first; its other nodes stay below them.
    if (holds) score = fitting[j]->reservedFor(pod) > 0 ? 10 : std::min(score, 9);
    scores[where[j]].score = score;
  }
  return scores;
}

}  // namespace gpufair::policy
