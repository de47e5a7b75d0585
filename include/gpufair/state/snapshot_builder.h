// SnapshotBuilder: the node table and what turns it, the pod cache and the reservation book into
// immutable snapshots, as kube-scheduler's cache updates its snapshot:
//
//   changes mark the DirtySet --build()--> NodeStates rebuilt only for dirty nodes (new
//   generation), every other NodeState shared with the previous snapshot --> new snapshot, which
//   also shares the previous one's name index, reservation and gang tables and pending list when
//   they did not change, and updates its totals from the changed nodes only (snapshot.h)
//   nothing dirty --build()--> the previous snapshot itself (same pointer)
//
// Each build that changes anything gets the next generation; a rebuilt NodeState carries it. The
// snapshot also publishes the target workload (learned from observed pods, or fixed with
// setWorkload), the fit options and seed, and the uids of provisionally placed (assumed) pods.
// Readers keep a snapshot as long as they like; building never touches a published one.
//
// Thread-safety: none. state::Mirror serializes every call under its mutex; the snapshots it
// returns are immutable and safe to share between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpufair/common/quota.h"
#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/dirty_set.h"
#include "gpufair/state/pod_cache.h"
#include "gpufair/state/reservation_book.h"

namespace gpufair::state {

inline constexpr double kWorkloadRepublishDistance = 0.02;

// How the target workload is learned from the pods observed (each counted once, when first seen):
// a policy::WorkloadModel of their shapes, one step of decay per pod counted.
struct WorkloadLearning {
  double decay = 0.999;
  // Whether pods without GPUs count too (the paper's typical pods include them).
  bool cpuOnlyPods = false;
  // Whether shapes leave memory out (as the paper's typical pods do), so pods that differ only
  // in memory count as one shape.
  bool ignoreMemory = false;
  // The published distribution keeps the most popular shapes until they cover this share of the
  // learned weight (1: every shape), as the paper's typical pods keep 95 % of the pod list.
  double coverage = 1.0;
};

struct SnapshotBuilderOptions {
  policy::FitOptions fit{};
  std::uint64_t seed = 0;
  WorkloadLearning learning{};
  // The learned workload is published again only once it has moved from the one published by
  // more than this total-variation distance (half the sum of |p - q| over the shapes, 0..1; a
  // published empty workload is always replaced). A new workload makes every node's cached
  // fragmentation stale, so publishing one per new pod made the next /filter compute F_n afresh
  // on every node; a node's F_n (sum of p_m f_m over shapes, 0 <= f_m <= its GPUs) is off by at
  // most 2 x distance x its GPUs from the one against the learned workload. One new pod moves
  // the workload by about 1 / the model's total weight (0.001 once 0.999's decay is at steady
  // state): a republish every 20-odd new pods of new shapes. 0: publish every change (as before).
  double workloadRepublishDistance = kWorkloadRepublishDistance;
};

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(SnapshotBuilderOptions options = {});
  SnapshotBuilder(const SnapshotBuilder&) = delete;
  SnapshotBuilder& operator=(const SnapshotBuilder&) = delete;

  // What changed since the last build; the pod cache and the reservation book mark it too.
  DirtySet& dirty() { return dirty_; }

  // The node table.
  void upsertNode(policy::Node node);
  void deleteNode(std::string_view name);
  void replaceNodes(std::vector<policy::Node> nodes);  // every node is rebuilt

  // The target workload: each pod seen for the first time (a GPU pod, or any pod with
  // learning.cpuOnlyPods; not a finished one) is one step of the learned model; setWorkload fixes
  // it instead (null: back to learning).
  void observe(const policy::Pod& pod);
  void setWorkload(policy::WorkloadPtr workload);

  // Whether build() would return `snapshot` itself: it is the last built and nothing changed.
  bool isCurrent(const policy::SnapshotPtr& snapshot) const;
  std::uint64_t generation() const { return generation_; }

  // The snapshot of the node table, `pods` and `reservations` under `quota`; rebuilds only what
  // the DirtySet names (see above) and clears it.
  policy::SnapshotPtr build(const PodCache& pods, const ReservationBook& reservations,
                            const QuotaConfig& quota);

 private:
  bool clean() const { return current_ != nullptr && dirty_.empty() && !workloadDirty_; }
  // Rebuilds one node's state in built_; returns false when built_ gained or lost a node (then
  // reindex() must run before built_ is read).
  bool buildNode(const std::string& name, const PodCache& pods,
                 std::unordered_map<std::string, std::vector<policy::Reservation>>& reserved);
  // Drops removed nodes from built_, sorts it by name and indexes it again.
  void reindex();
  // Publishes the fixed workload, or the learned one if it moved (workloadRepublishDistance).
  void publishWorkload();
  // The shapes of built_ after this build: those of the changed nodes (every node after a
  // reindex, or when the interner has grown well past the node count); the last build's list
  // itself when no node changed.
  std::shared_ptr<const policy::NodeShapes> buildShapes(bool inPlace);

  SnapshotBuilderOptions options_;
  DirtySet dirty_;
  std::unordered_map<std::string, policy::Node> nodes_;
  std::uint64_t generation_ = 0;
  // Kept sorted by name so a snapshot's node list needs no sort; a changed node is replaced in
  // place (builtIndex_: name -> position), so a build costs one copy of this vector, not a walk
  // over a tree of every node.
  std::vector<policy::NodeStatePtr> built_;
  std::unordered_map<std::string, std::size_t> builtIndex_;
  std::vector<std::size_t> changed_;  // positions in built_ replaced by this build
  policy::NodeShapeInterner shapes_;
  std::vector<std::uint32_t> shapeOf_;  // shape of built_[i], published with each snapshot
  std::shared_ptr<const policy::NodeShapes> builtShapes_;  // the last published copy of shapeOf_
  std::shared_ptr<const policy::PendingPods> builtPending_;
  std::shared_ptr<const policy::PendingPods> builtProvisional_;
  policy::SnapshotPtr current_;
  policy::WorkloadModel learned_;
  policy::WorkloadPtr fixedWorkload_;
  policy::WorkloadPtr publishedWorkload_;
  bool publishedLearned_ = false;  // publishedWorkload_ is a distribution of learned_
  bool workloadDirty_ = false;
};

}  // namespace gpufair::state
