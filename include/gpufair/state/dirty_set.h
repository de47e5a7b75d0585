// DirtySet: what changed since the last snapshot was built. The snapshot builder's node table, the
// pod cache and the reservation book mark it as they change; SnapshotBuilder::build() rebuilds only
// what it names and then clears it. A fresh set is all dirty: the first build builds everything.
// Thread-safety: none. Its owner (state::Mirror) serializes every use under its mutex.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace gpufair::state {

class DirtySet {
 public:
  // The node, its pods or its reservations changed: its NodeState is built again.
  void node(std::string_view name) { nodes_.emplace(name); }
  // The unbound pods that want GPUs (pending demand) changed.
  void pending() { pending_ = true; }
  // Everything changed (nodes replaced, quota config and so every pod's queue).
  void all() {
    all_ = true;
    pending_ = true;
  }
  // The set of pods placed provisionally (assumed, not confirmed) changed.
  void provisional() { provisional_ = true; }

  const std::set<std::string, std::less<>>& nodes() const { return nodes_; }
  bool hasPending() const { return pending_; }
  bool hasAll() const { return all_; }
  bool hasProvisional() const { return provisional_; }
  bool empty() const { return nodes_.empty() && !pending_ && !all_ && !provisional_; }
  void clear() {
    nodes_.clear();
    pending_ = false;
    all_ = false;
    provisional_ = false;
  }

 private:
  std::set<std::string, std::less<>> nodes_;
  bool pending_ = true;
  bool all_ = true;
  bool provisional_ = true;
};

}  // namespace gpufair::state
