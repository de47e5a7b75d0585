// The loop behind filter (filter.cc) and filterRanked (filter_ranked.cc): each candidate's node
// found, its fit checked (once per node shape), a reason kept for each node that does not fit.
// Internal to the policy module. Pure: no I/O, clock or logging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/node_shape.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::detail {

inline void reject(FilterResult& r, std::string_view node, Status status) {
  auto& verdicts = status.code() == Code::kUnschedulableAndUnresolvable ? r.unresolvable : r.failed;
  verdicts.push_back({node, status.takeReason()});
}

// filterPod over candidates whose node states `nodeAt(i)` finds (nullptr: unknown): by name
// (filterPod) or by the positions CandidatePositions resolved, the same steps. shapeAt(i) is the
// candidate's node shape (node_shape.h; kOwnShape: check it by itself): fit is checked once per
// shape, `shapes` being how many there are. onFit(r, i, node): candidate i fits (keepName adds its
// name to r.feasible).
template <class NodeAt, class ShapeAt, class OnFit>
FilterResult filterFound(const ClusterSnapshot& snapshot, const Pod& pod,
                         std::span<const std::string_view> candidates, NodeAt&& nodeAt,
                         std::uint32_t shapes, ShapeAt&& shapeAt, OnFit&& onFit) {
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
      onFit(r, i, node);
    } else {
      reject(r, name, fitsNode(*node, pod, options));
    }
  }
  return r;
}

inline auto keepName(std::span<const std::string_view> candidates) {
  return [candidates](FilterResult& r, std::size_t i, const NodeState*) {
    if (r.feasible.empty()) r.feasible.reserve(candidates.size());
    r.feasible.push_back(candidates[i]);
  };
}

// filterFound over the candidates' positions in snapshot.nodes().
template <class OnFit>
FilterResult filterAt(const ClusterSnapshot& snapshot, const Pod& pod,
                      std::span<const std::string_view> candidates,
                      std::span<const std::ptrdiff_t> positions, OnFit&& onFit) {
  const auto nodes = snapshot.nodes();
  const NodeShapes* shapes = snapshot.nodeShapes();
  auto nodeAt = [&](std::size_t i) -> const NodeState* {
    const std::ptrdiff_t at = positions[i];
    return at < 0 ? nullptr : nodes[static_cast<std::size_t>(at)];
  };
  if (shapes == nullptr) {
    return filterFound(
        snapshot, pod, candidates, nodeAt, 0, [](std::size_t) { return kOwnShape; }, onFit);
  }
  return filterFound(
      snapshot, pod, candidates, nodeAt, shapes->count,
      [&](std::size_t i) { return shapes->of[static_cast<std::size_t>(positions[i])]; }, onFit);
}

}  // namespace gpufair::policy::detail
