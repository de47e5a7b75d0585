#include "gpufair/policy/filter.h"

#include <algorithm>
#include <cstdint>

#include "gpufair/policy/candidate_positions.h"
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

namespace {

// filterPod over candidates whose node states `nodeAt(i)` finds (nullptr: unknown): by name
// (filterPod) or by the positions CandidatePositions resolved, the same steps. shapeAt(i) is the
// candidate's node shape (node_shape.h; kOwnShape: check it by itself): fit is checked once per
// shape, `shapes` being how many there are.
template <class NodeAt, class ShapeAt>
FilterResult filterFound(const ClusterSnapshot& snapshot, const Pod& pod,
                         std::span<const std::string_view> candidates, NodeAt&& nodeAt,
                         std::uint32_t shapes, ShapeAt&& shapeAt) {
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
  std::vector<std::int8_t> shapeFits(shapes, -1);  // per shape: -1 not checked yet, 0 no, 1 yes
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string_view name = candidates[i];
    const NodeState* node = nodeAt(i);
    if (node == nullptr) {
      r.failed.push_back(
          {name, "node " + std::string(name) + " is not in gpufair's cluster view yet"});
      continue;
    }
    const std::uint32_t shape = shapeAt(i);
    bool fits = false;
    if (shape < shapes) {
      std::int8_t& known = shapeFits[shape];
      if (known < 0) known = nodeFits(*node, pod, options) ? 1 : 0;
      fits = known == 1;
    } else {
      fits = nodeFits(*node, pod, options);
    }
    if (fits) {
      r.feasible.push_back(name);
    } else {
      reject(r, name, fitsNode(*node, pod, options));
    }
  }
  return r;
}

}  // namespace

FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates) {
  return filterFound(
      snapshot, pod, candidates, [&](std::size_t i) { return snapshot.findNode(candidates[i]); }, 0,
      [](std::size_t) { return kOwnShape; });
}

FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates,
                       std::span<const std::ptrdiff_t> positions) {
  const auto nodes = snapshot.nodes();
  const NodeShapes* shapes = snapshot.nodeShapes();
  auto nodeAt = [&](std::size_t i) -> const NodeState* {
    const std::ptrdiff_t at = positions[i];
    return at < 0 ? nullptr : nodes[static_cast<std::size_t>(at)];
  };
  if (shapes == nullptr) {
    return filterFound(snapshot, pod, candidates, nodeAt, 0, [](std::size_t) { return kOwnShape; });
  }
  return filterFound(snapshot, pod, candidates, nodeAt, shapes->count, [&](std::size_t i) {
    return shapes->of[static_cast<std::size_t>(positions[i])];
  });
}

FilterResult filter(const ClusterSnapshot& snapshot, const Pod& pod,
                    std::span<const std::string_view> candidates,
                    std::span<const std::ptrdiff_t> positions) {
  if (pod.inGang()) return filterGangMember(snapshot, pod, candidates);
  return filterPod(snapshot, pod, candidates, positions);
}

namespace {

// The names as one stretch of memory: each begins `gap` bytes after the end of the one before,
// the same gap throughout and at most kMaxGap (a parser's string buffer puts a length and a
// terminator between strings; two separate allocations are never that close, so the stretch is
// one object's memory). Empty when they are not laid out so.
std::string_view stretchOf(std::span<const std::string_view> names, std::size_t& gap) {
  constexpr std::uintptr_t kMaxGap = 8;
  if (names.size() < 2) return {};
  auto address = [](const char* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const std::uintptr_t firstEnd = address(names[0].data()) + names[0].size();
  if (address(names[1].data()) < firstEnd || address(names[1].data()) - firstEnd > kMaxGap) {
    return {};
  }
  const std::uintptr_t step = address(names[1].data()) - firstEnd;
  for (std::size_t i = 1; i < names.size(); ++i) {
    if (address(names[i].data()) != address(names[i - 1].data()) + names[i - 1].size() + step) {
      return {};
    }
  }
  gap = static_cast<std::size_t>(step);
  const std::string_view& last = names.back();
  return {names[0].data(),
          static_cast<std::size_t>(address(last.data()) + last.size() - address(names[0].data()))};
}

}  // namespace

std::span<const std::ptrdiff_t> CandidatePositions::resolve(
    const SnapshotPtr& snapshot, std::span<const std::string_view> candidates) {
  if (indexed_ == nullptr || !snapshot->sharesNodeIndexWith(*indexed_)) {
    names_.clear();
    ends_.clear();
    previous_.clear();
    stretch_.clear();
  }
  indexed_ = snapshot;
  positions_.resize(candidates.size());
  lookedUp_ = 0;
  auto previousName = [&](std::size_t j) {
    const std::size_t begin = j == 0 ? 0 : ends_[j - 1];
    return std::string_view(names_).substr(begin, ends_[j] - begin);
  };
  // The usual request: the very list of the last call. When both lie in memory as one stretch
  // with the same gap, the same name lengths and the same bytes throughout mean the same names:
  // one comparison of the stretch instead of one per name.
  std::size_t gap = 0;
  const std::string_view stretch = stretchOf(candidates, gap);
  sameStretch_ = false;
  if (!stretch.empty() && !stretch_.empty() && gap == gap_ && candidates.size() == ends_.size() &&
      stretch.size() == stretch_.size()) {
    bool sameLengths = true;
    for (std::size_t i = 0; i < candidates.size() && sameLengths; ++i) {
      sameLengths = candidates[i].size() == ends_[i] - (i == 0 ? 0 : ends_[i - 1]);
    }
    if (sameLengths && stretch == std::string_view(stretch_)) {
      sameStretch_ = true;
      return positions_;  // what the last call found, for the same names
    }
  }
  stretch_.assign(stretch);
  gap_ = gap;
  // Walk both lists: a name equal to the next one of the previous list, or to one a little later
  // in it (nodes dropped from the list between two requests), takes its position and the walk
  // goes on after it; any other name is looked up.
  constexpr std::size_t kLookAhead = 8;
  std::size_t j = 0;
  bool same = candidates.size() == ends_.size();  // so far, name i was the previous list's i
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string_view name = candidates[i];
    std::size_t k = j;
    while (k < ends_.size() && k <= j + kLookAhead && previousName(k) != name) ++k;
    if (k < ends_.size() && k <= j + kLookAhead) {
      positions_[i] = previous_[k];
      same = same && k == i;
      j = k + 1;
      continue;
    }
    positions_[i] = snapshot->nodeIndex(name);
    ++lookedUp_;
    same = false;
  }
  // The very list of the last call: what is remembered is already this list.
  if (same) return positions_;
  names_.clear();
  ends_.clear();
  for (std::string_view name : candidates) {
    names_.append(name);
    ends_.push_back(names_.size());
  }
  previous_.assign(positions_.begin(), positions_.end());
  return positions_;
}

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

}  // namespace gpufair::policy
