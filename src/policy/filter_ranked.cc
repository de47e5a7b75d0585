// filterRanked, prioritize and the ranking behind them: the fitting candidates scored (once per
// node shape where the scorer allows) and the first `keep` of the placement order kept.
#include <algorithm>
#include <cstdint>

#include "gpufair/policy/candidate_positions.h"
#include "gpufair/policy/filter.h"

#include "filter_detail.h"

namespace gpufair::policy {

using detail::filterAt;
using detail::reject;

namespace {

// The candidates the pod fits on (their index in `candidates`), with the scorer's raw scores.
struct FittingScores {
  std::vector<const NodeState*> nodes;
  std::vector<std::size_t> where;
  std::vector<double> raw;
  bool holds = false;  // the pod (or its gang) holds reservations
};

// Scores the nodes already in `out` (known to fit).
void scoreFound(const ClusterSnapshot& snapshot, const Pod& pod, const Scorer& scorer,
                FittingScores& out) {
  if (out.nodes.empty()) return;
  out.raw.resize(out.nodes.size());
  scorer.score(snapshot, pod, out.nodes, out.raw);
  out.holds = !snapshot.reservations().empty() && snapshot.reservedFor(pod) > 0;
}

// scoreFound for a scorer that scores nodes of one shape alike (Scorer::scoresByNodeShape): one
// node of each shape is scored, the others copy its score. at[j]: out.nodes[j]'s position.
void scoreByShape(const ClusterSnapshot& snapshot, const Pod& pod, const Scorer& scorer,
                  const NodeShapes& shapes, std::span<const std::size_t> at, FittingScores& out) {
  if (out.nodes.empty()) return;
  std::vector<std::uint32_t> scoredAs(shapes.count, kOwnShape);  // shape -> index in `scored`
  std::vector<std::uint32_t> which(out.nodes.size());            // node -> index in `scored`
  std::vector<const NodeState*> scored;
  for (std::size_t j = 0; j < out.nodes.size(); ++j) {
    const std::uint32_t shape = shapes.of[at[j]];
    if (shape < shapes.count && scoredAs[shape] != kOwnShape) {
      which[j] = scoredAs[shape];
      continue;
    }
    which[j] = static_cast<std::uint32_t>(scored.size());
    if (shape < shapes.count) scoredAs[shape] = which[j];
    scored.push_back(out.nodes[j]);
  }
  std::vector<double> raw(scored.size());
  scorer.score(snapshot, pod, scored, raw);
  out.raw.resize(out.nodes.size());
  for (std::size_t j = 0; j < out.nodes.size(); ++j) out.raw[j] = raw[which[j]];
  out.holds = !snapshot.reservations().empty() && snapshot.reservedFor(pod) > 0;
}

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
  scoreFound(snapshot, pod, scorer, out);
  return out;
}

// The holder's reserved nodes first, then the best raw score; ties, and the candidates not in
// `fitting` (last), in the candidates' order. Only the first `limit` are ordered and returned.
std::vector<std::size_t> placementOrder(const FittingScores& fitting, const Pod& pod,
                                        std::size_t candidates, std::size_t limit) {
  const std::size_t fitCount = fitting.where.size();
  auto reserved = [&](std::size_t j) {
    return fitting.holds && fitting.nodes[j]->reservedFor(pod) > 0;
  };
  // A stable sort's order: ties by position (a strict total order, so any way of finding the
  // first `limit` gives the same). Only the first `limit` are sorted.
  auto before = [&](std::size_t a, std::size_t b) {
    if (reserved(a) != reserved(b)) return reserved(a);
    if (fitting.raw[a] != fitting.raw[b]) return fitting.raw[a] > fitting.raw[b];
    return a < b;
  };
  const std::size_t sorted = std::min(limit, fitCount);
  std::vector<std::size_t> order;
  constexpr std::size_t kSelect = 8;
  if (sorted <= kSelect) {
    // A few of many (best and top-k modes): one pass keeping the best so far, in order.
    order.reserve(sorted + 1);
    for (std::size_t j = 0; j < fitCount; ++j) {
      if (order.size() == sorted && (sorted == 0 || !before(j, order.back()))) continue;
      order.insert(std::upper_bound(order.begin(), order.end(), j, before), j);
      if (order.size() > sorted) order.pop_back();
    }
  } else {
    order.resize(fitCount);
    for (std::size_t j = 0; j < fitCount; ++j) order[j] = j;
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(sorted),
                      order.end(), before);
  }
  std::vector<std::size_t> ranked;
  ranked.reserve(std::min(limit, candidates));
  for (std::size_t k = 0; k < sorted; ++k) ranked.push_back(fitting.where[order[k]]);
  if (ranked.size() == limit || ranked.size() == candidates) return ranked;
  std::vector<bool> seen(candidates, false);
  for (std::size_t i : ranked) seen[i] = true;
  for (std::size_t i = 0; i < candidates && ranked.size() < limit; ++i) {
    if (!seen[i]) ranked.push_back(i);
  }
  return ranked;
}

}  // namespace

namespace {

// prioritize's answer from the scored fitting candidates: 0 for the others.
std::vector<NodeScore> scoresOf(const FittingScores& fitting, const Pod& pod,
                                std::span<const std::string_view> candidates) {
  std::vector<NodeScore> scores;
  scores.reserve(candidates.size());
  for (std::string_view name : candidates) scores.push_back({name, 0});
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

}  // namespace

std::vector<NodeScore> prioritize(const ClusterSnapshot& snapshot, const Pod& pod,
                                  std::span<const std::string_view> candidates,
                                  const Scorer& scorer) {
  return scoresOf(scoreFitting(snapshot, pod, candidates, scorer), pod, candidates);
}

std::vector<NodeScore> prioritize(const ClusterSnapshot& snapshot, const Pod& pod,
                                  std::span<const std::string_view> candidates,
                                  std::span<const std::ptrdiff_t> positions, const Scorer& scorer) {
  const NodeShapes* shapes = snapshot.nodeShapes();
  const FitOptions& options = snapshot.fitOptions();
  if (shapes == nullptr || !scorer.scoresByNodeShape() ||
      (pod.gpus == 0 && !options.checkCpuMemory))
    return prioritize(snapshot, pod, candidates, scorer);
  // scoreFitting from the positions, fit checked once per shape (a node's shape decides it).
  enum : std::uint8_t { kUnchecked, kFits, kNoFit };
  std::vector<std::uint8_t> fitOf(shapes->count, kUnchecked);
  const auto nodes = snapshot.nodes();
  FittingScores fitting;
  std::vector<std::size_t> at;  // each fitting node's position in nodes
  fitting.nodes.reserve(candidates.size());
  fitting.where.reserve(candidates.size());
  at.reserve(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (positions[i] < 0) continue;
    const auto p = static_cast<std::size_t>(positions[i]);
    const std::uint32_t shape = shapes->of[p];
    bool fits = false;
    if (shape < shapes->count) {
      if (fitOf[shape] == kUnchecked)
        fitOf[shape] = nodeFits(*nodes[p], pod, options) ? kFits : kNoFit;
      fits = fitOf[shape] == kFits;
    } else {
      fits = nodeFits(*nodes[p], pod, options);
    }
    if (!fits) continue;
    fitting.nodes.push_back(nodes[p]);
    fitting.where.push_back(i);
    at.push_back(p);
  }
  scoreByShape(snapshot, pod, scorer, *shapes, at, fitting);
  return scoresOf(fitting, pod, candidates);
}

std::vector<std::size_t> rankCandidates(const ClusterSnapshot& snapshot, const Pod& pod,
                                        std::span<const std::string_view> candidates,
                                        const Scorer& scorer, std::size_t limit) {
  return placementOrder(scoreFitting(snapshot, pod, candidates, scorer), pod, candidates.size(),
                        limit);
}

std::vector<std::size_t> rankFeasible(const ClusterSnapshot& snapshot, const Pod& pod,
                                      std::span<const std::string_view> candidates,
                                      std::span<const std::ptrdiff_t> positions,
                                      std::span<const std::string_view> feasible,
                                      const Scorer& scorer, std::size_t limit) {
  // filterPod's answer: every feasible node passed nodeFits with the snapshot's options, as
  // scoreFitting would check. The gang rules (and pods fit leaves alone) take the plain path.
  if (pod.inGang() || (pod.gpus == 0 && !snapshot.fitOptions().checkCpuMemory)) {
    return rankCandidates(snapshot, pod, feasible, scorer, limit);
  }
  const auto nodes = snapshot.nodes();
  FittingScores fitting;
  fitting.nodes.reserve(feasible.size());
  fitting.where.reserve(feasible.size());
  std::vector<std::size_t> at;  // each feasible node's position in nodes
  at.reserve(feasible.size());
  std::size_t j = 0;  // feasible is a subsequence of candidates: the same views
  for (std::size_t i = 0; i < feasible.size(); ++i) {
    const std::string_view name = feasible[i];
    while (j < candidates.size() &&
           (candidates[j].data() != name.data() || candidates[j].size() != name.size())) {
      ++j;
    }
    if (j == candidates.size() || positions[j] < 0) {
      return rankCandidates(snapshot, pod, feasible, scorer, limit);
    }
    at.push_back(static_cast<std::size_t>(positions[j++]));
    fitting.nodes.push_back(nodes[at.back()]);
    fitting.where.push_back(i);
  }
  const NodeShapes* shapes = snapshot.nodeShapes();
  if (shapes == nullptr || !scorer.scoresByNodeShape()) {
    scoreFound(snapshot, pod, scorer, fitting);
  } else {
    scoreByShape(snapshot, pod, scorer, *shapes, at, fitting);
  }
  return placementOrder(fitting, pod, feasible.size(), limit);
}

namespace {

// Keeps the feasible names at the given indexes (into r.feasible), in r.feasible's order.
void keepFeasible(FilterResult& r, std::span<const std::size_t> order) {
  std::vector<bool> kept(r.feasible.size(), false);
  for (std::size_t i : order) kept[i] = true;
  std::vector<std::string_view> feasible;
  feasible.reserve(order.size());
  for (std::size_t i = 0; i < r.feasible.size(); ++i) {
    if (kept[i]) feasible.push_back(r.feasible[i]);
  }
  r.feasible = std::move(feasible);
}

}  // namespace

namespace {

// A node answered, kube-scheduler reads no reasons: they only explain a pod that fits nowhere.
void dropReasons(FilterResult& r) {
  r.failed.clear();
  r.unresolvable.clear();
}

// filterRanked's one pass when the scorer scores nodes of one shape alike, per candidate an array
// read and a per-shape table: fit is checked once per shape, and only the first `keep` fitting
// candidates of each shape go on to the ranking. The others cannot be among the first `keep`:
// each ties with (same score, not reserved: a node holding reservations is a shape of its own)
// and comes after `keep` candidates already there, and ties go by candidate order. At least
// `keep` are kept when more than `keep` fit, so the first `keep` are the whole order's.
FilterResult filterRankedByShape(const ClusterSnapshot& snapshot, const Pod& pod,
                                 std::span<const std::string_view> candidates,
                                 std::span<const std::ptrdiff_t> positions, const Scorer& scorer,
                                 std::size_t keep, const NodeShapes& shapes) {
  FilterResult r;
  r.admission = admit(snapshot, pod);
  if (!r.admission.status.isOk()) {
    for (std::string_view name : candidates) reject(r, name, r.admission.status);
    return r;
  }
  const FitOptions& options = snapshot.fitOptions();
  const auto nodes = snapshot.nodes();
  // Per shape: kUnchecked, kNoFit, or how many of its candidates were kept (at most keep).
  constexpr std::uint32_t kNoFit = 0xffffffffu;
  constexpr std::uint32_t kUnchecked = 0xfffffffeu;
  std::vector<std::uint32_t> kept(shapes.count, kUnchecked);
  FittingScores fitting;
  std::vector<std::size_t> at;  // each kept node's position in nodes
  std::size_t fitCount = 0;
  // The candidates that do not fit, in order: given reasons only when none fits (see filterRanked
  // in candidate_positions.h).
  std::vector<std::size_t> unfit;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::ptrdiff_t position = positions[i];
    if (position < 0) {
      unfit.push_back(i);
      continue;
    }
    const auto p = static_cast<std::size_t>(position);
    const std::uint32_t shape = shapes.of[p];
    bool fits = false;
    if (shape < shapes.count) {
      std::uint32_t& state = kept[shape];
      if (state == kUnchecked) state = nodeFits(*nodes[p], pod, options) ? 0 : kNoFit;
      fits = state != kNoFit;
      if (fits) {
        ++fitCount;
        // `keep` of its shape came before: not among the first (and its node is never read).
        if (state == keep) continue;
        ++state;
      }
    } else {
      fits = nodeFits(*nodes[p], pod, options);
      if (fits) ++fitCount;
    }
    const NodeState* node = nodes[p];
    if (!fits) {
      unfit.push_back(i);
      continue;
    }
    fitting.nodes.push_back(node);
    fitting.where.push_back(i);
    at.push_back(p);
  }
  if (fitCount == 0) {
    for (std::size_t i : unfit) {
      if (positions[i] < 0) {
        r.failed.push_back({candidates[i], "node " + std::string(candidates[i]) +
                                               " is not in gpufair's cluster view yet"});
      } else {
        reject(r, candidates[i],
               fitsNode(*nodes[static_cast<std::size_t>(positions[i])], pod, options));
      }
    }
    return r;
  }
  std::vector<std::size_t> picked;
  if (fitCount <= keep) {
    picked = fitting.where;  // no shape had more than keep: every fitting candidate is kept
  } else {
    scoreByShape(snapshot, pod, scorer, shapes, at, fitting);
    picked = placementOrder(fitting, pod, candidates.size(), keep);
    std::sort(picked.begin(), picked.end());  // the answer keeps the candidates' order
  }
  r.feasible.reserve(picked.size());
  for (std::size_t i : picked) r.feasible.push_back(candidates[i]);
  return r;
}

}  // namespace

FilterResult filterRanked(const ClusterSnapshot& snapshot, const Pod& pod,
                          std::span<const std::string_view> candidates,
                          std::span<const std::ptrdiff_t> positions, const Scorer& scorer,
                          std::size_t keep) {
  // The gang rules, and pods fit leaves alone, answer by name: filter, then rank the answer.
  if (keep == 0 || pod.inGang() || (pod.gpus == 0 && !snapshot.fitOptions().checkCpuMemory)) {
    FilterResult r = filter(snapshot, pod, candidates, positions);
    if (keep == 0) return r;
    if (!r.feasible.empty()) dropReasons(r);
    if (r.feasible.size() <= keep) return r;
    keepFeasible(r, rankFeasible(snapshot, pod, candidates, positions, r.feasible, scorer, keep));
    return r;
  }
  const NodeShapes* shapes = snapshot.nodeShapes();
  if (shapes != nullptr && scorer.scoresByNodeShape() && keep < candidates.size()) {
    return filterRankedByShape(snapshot, pod, candidates, positions, scorer, keep, *shapes);
  }
  // One pass: the nodes that fit go straight to the ranking, by position (where: the candidate).
  FittingScores fitting;
  std::vector<std::size_t> at;  // each fitting node's position in snapshot.nodes()
  // At most every candidate fits: no reallocation (and copy) as they grow.
  fitting.nodes.reserve(candidates.size());
  fitting.where.reserve(candidates.size());
  at.reserve(candidates.size());
  FilterResult r = filterAt(snapshot, pod, candidates, positions,
                            [&](FilterResult&, std::size_t i, const NodeState* node) {
                              fitting.nodes.push_back(node);
                              fitting.where.push_back(i);
                              at.push_back(static_cast<std::size_t>(positions[i]));
                            });
  if (!fitting.where.empty()) dropReasons(r);
  std::vector<std::size_t> picked;
  if (fitting.where.size() <= keep) {
    picked = fitting.where;
  } else {
    const NodeShapes* shapes = snapshot.nodeShapes();
    if (shapes == nullptr || !scorer.scoresByNodeShape()) {
      scoreFound(snapshot, pod, scorer, fitting);
    } else {
      scoreByShape(snapshot, pod, scorer, *shapes, at, fitting);
    }
    // Every candidate in `fitting` and more than `keep` of them: the first `keep` are all fitting.
    picked = placementOrder(fitting, pod, candidates.size(), keep);
    std::sort(picked.begin(), picked.end());  // the answer keeps the candidates' order
  }
  r.feasible.reserve(picked.size());
  for (std::size_t i : picked) r.feasible.push_back(candidates[i]);
  return r;
}

}  // namespace gpufair::policy
