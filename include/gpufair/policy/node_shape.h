// Node shapes: classes of nodes that fit and score alike. Most nodes of a large cluster look like
// many others (idle, full, k of 8 GPUs used, same model and CPU/memory use), and what nodeFits and
// the fgd scorers read of a node is the same for all nodes of one shape. The state module's
// snapshot builder numbers the shapes of the nodes it builds (NodeShapeInterner) and publishes one
// id per node with each snapshot (ClusterSnapshot::nodeShapes), so /filter checks fit once per
// shape and ranks by scoring one node per shape: per candidate, an array read and a compare.
// Pure: no I/O, clock or logging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpufair/common/quantity.h"

namespace gpufair::policy {

class NodeState;  // snapshot.h

// The shape id of a node that is a class of its own: it holds reservations (which other pods
// may not use, so fit depends on who asks).
inline constexpr std::uint32_t kOwnShape = 0xffffffffu;

// One snapshot's shapes: of[i] is the shape of ClusterSnapshot::nodes()[i], in 0..count-1 or
// kOwnShape. Two nodes of one snapshot with the same id (not kOwnShape) agree on everything
// sameNodeShape compares.
struct NodeShapes {
  std::vector<std::uint32_t> of;
  std::uint32_t count = 0;
};

// Whether nodeFits (admission.h) and the fgd scorers (score_memo.h) see no difference between
// `a` and `b`: both take new pods or neither; same GPU model, allocatable and used GPUs, per-GPU
// use (so free, fully free and the largest free GPU), allocatable and used CPU and memory; and
// neither holds reservations.
bool sameNodeShape(const NodeState& a, const NodeState& b);

// Numbers node shapes: equal shapes get equal ids (exact comparison, not a hash), new shapes the
// next id. Ids stay valid until clear(); count() grows with every shape ever seen, so callers
// clear and renumber every node when it grows much beyond their node count.
// Not thread-safe: one owner (the snapshot builder, under the mirror's lock).
class NodeShapeInterner {
 public:
  // kOwnShape for a node holding reservations.
  std::uint32_t shapeOf(const NodeState& node);
  std::uint32_t count() const { return static_cast<std::uint32_t>(keys_.size()); }
  void clear();

 private:
  struct Key {
    bool takesNewPods = false;
    std::string gpuModel;
    MilliGpu allocatable = 0;
    MilliGpu used = 0;
    std::vector<MilliGpu> gpuUsed;
    std::int64_t cpuMilli = 0;
    std::int64_t cpuUsed = 0;
    std::int64_t memoryBytes = 0;
    std::int64_t memoryUsed = 0;
  };
  static Key keyOf(const NodeState& node);
  static std::uint64_t hashOf(const Key& key);
  static bool equal(const Key& a, const Key& b);

  std::vector<Key> keys_;                                      // by id
  std::unordered_multimap<std::uint64_t, std::uint32_t> ids_;  // hash -> ids with that hash
};

}  // namespace gpufair::policy
