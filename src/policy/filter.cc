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

namespace {

// The candidates the pod fits on (their index in `candidates`), with the scorer's raw scores.
struct FittingScores {
  std::vector<const NodeState*> nodes;
  std::vector<std::size_t> where;
  std::vector<double> raw;
  bool holds = false;  // the pod (or its gang) holds reservations
};

FittingScores scoreFitting(const ClusterSnapshot& snapshot, const Pod& pod,
                           std::span<const std::string_view> candidates, const Scorer& scorer) {
  FittingScores out;
  const FitOptions& options = snapshot.fitOptions();
  if (pod.gpus == 0 && !options.checkCpuMemory) return out;
  out.nodes.reserve(candidates.size());
  out.where.reserve(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const NodeState* node = snapshot.findNode(candidates[i]);
    if (node != nullptr && nodeFits(*node, pod, options)) {
      out.nodes.push_back(node);
      out.where.push_back(i);
    }
  }
  if (out.nodes.empty()) return out;
  out.raw.resize(out.nodes.size());
  scorer.score(snapshot, pod, out.nodes, out.raw);
  out.holds = !snapshot.reservations().empty() && snapshot.reservedFor(pod) > 0;
  return out;
}

}  // namespace

std::vector<NodeScore> prioritize(const ClusterSnapshot& snapshot, const Pod& pod,
                                  std::span<const std::string_view> candidates,
                                  const Scorer& scorer) {
  std::vector<NodeScore> scores;
  scores.reserve(candidates.size());
  for (std::string_view name : candidates) scores.push_back({name, 0});
  const FittingScores fitting = scoreFitting(snapshot, pod, candidates, scorer);
  if (fitting.nodes.empty()) return scores;
  const std::vector<int> normalized = normalizeScores(fitting.raw);
  for (std::size_t j = 0; j < fitting.where.size(); ++j) {
    int score = normalized[j];
    // The holder's reserved nodes come first; its other nodes stay below them.
    if (fitting.holds) score = fitting.nodes[j]->reservedFor(pod) > 0 ? 10 : std::min(score, 9);
    scores[fitting.where[j]].score = score;
  }
  return scores;
}

std::vector<std::size_t> rankCandidates(const ClusterSnapshot& snapshot, const Pod& pod,
                                        std::span<const std::string_view> candidates,
                                        const Scorer& scorer, std::size_t limit) {
  const FittingScores fitting = scoreFitting(snapshot, pod, candidates, scorer);
  std::vector<std::size_t> order(fitting.where.size());
  for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
  auto reserved = [&](std::size_t j) {
    return fitting.holds && fitting.nodes[j]->reservedFor(pod) > 0;
  };
  // A stable sort's order: ties by position. Only the first `limit` are sorted.
  const std::size_t sorted = std::min(limit, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(sorted), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      if (reserved(a) != reserved(b)) return reserved(a);
                      if (fitting.raw[a] != fitting.raw[b]) return fitting.raw[a] > fitting.raw[b];
                      return a < b;
                    });
  std::vector<std::size_t> ranked;
  ranked.reserve(std::min(limit, candidates.size()));
  std::vector<bool> seen(candidates.size(), false);
  for (std::size_t k = 0; k < sorted; ++k) {
    ranked.push_back(fitting.where[order[k]]);
    seen[fitting.where[order[k]]] = true;
  }
  for (std::size_t i = 0; i < candidates.size() && ranked.size() < limit; ++i) {
    if (!seen[i]) ranked.push_back(i);
  }
  return ranked;
}

}  // namespace gpufair::policy
