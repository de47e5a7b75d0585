#include "gpufair/policy/node_shape.h"

#include <algorithm>
#include <functional>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

bool sameNodeShape(const NodeState& a, const NodeState& b) {
  const Node& x = a.node();
  const Node& y = b.node();
  return a.reservations().empty() && b.reservations().empty() &&
         x.takesNewPods() == y.takesNewPods() && x.gpuModel == y.gpuModel &&
         a.allocatable() == b.allocatable() && a.used() == b.used() &&
         std::ranges::equal(a.gpuUsedList(), b.gpuUsedList()) && x.cpuMilli == y.cpuMilli &&
         a.cpuUsed() == b.cpuUsed() && x.memoryBytes == y.memoryBytes &&
         a.memoryUsed() == b.memoryUsed();
}

NodeShapeInterner::Key NodeShapeInterner::keyOf(const NodeState& node) {
  const Node& n = node.node();
  const auto gpus = node.gpuUsedList();
  return {n.takesNewPods(),
          n.gpuModel,
          node.allocatable(),
          node.used(),
          std::vector<MilliGpu>(gpus.begin(), gpus.end()),
          n.cpuMilli,
          node.cpuUsed(),
          n.memoryBytes,
          node.memoryUsed()};
}

std::uint64_t NodeShapeInterner::hashOf(const Key& key) {
  std::uint64_t h = mix(std::hash<std::string>{}(key.gpuModel), key.takesNewPods ? 1 : 0);
  for (std::int64_t v :
       {key.allocatable, key.used, key.cpuMilli, key.cpuUsed, key.memoryBytes, key.memoryUsed}) {
    h = mix(h, static_cast<std::uint64_t>(v));
  }
  for (MilliGpu g : key.gpuUsed) h = mix(h, static_cast<std::uint64_t>(g));
  return h;
}

bool NodeShapeInterner::equal(const Key& a, const Key& b) {
  return a.takesNewPods == b.takesNewPods && a.allocatable == b.allocatable && a.used == b.used &&
         a.cpuMilli == b.cpuMilli && a.cpuUsed == b.cpuUsed && a.memoryBytes == b.memoryBytes &&
         a.memoryUsed == b.memoryUsed && a.gpuUsed == b.gpuUsed && a.gpuModel == b.gpuModel;
}

std::uint32_t NodeShapeInterner::shapeOf(const NodeState& node) {
  if (!node.reservations().empty()) return kOwnShape;
  Key key = keyOf(node);
  const std::uint64_t hash = hashOf(key);
  const auto [begin, end] = ids_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    if (equal(keys_[it->second], key)) return it->second;
  }
  const auto id = static_cast<std::uint32_t>(keys_.size());
  keys_.push_back(std::move(key));
  ids_.emplace(hash, id);
  return id;
}

void NodeShapeInterner::clear() {
  keys_.clear();
  ids_.clear();
}

}  // namespace gpufair::policy
