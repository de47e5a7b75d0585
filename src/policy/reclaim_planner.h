// Internals of reclaim planning: the planner of one planReclaim call. Its victim side (queues,
// pods being evicted, evictable pods, gangs, units, the first screening pass) lives in
// reclaim_victims.cc; the search over nodes and the plan in reclaim.cc.
// Thread-safety: one Planner per call, used by one thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpufair/policy/reclaim.h"

#include "reclaim_statement.h"

namespace gpufair::policy::reclaim_detail {

std::string gpusText(MilliGpu m);
std::optional<Timestamp> startOf(const Pod& pod);  // status.startTime, else creation
Freed freedBy(const Pod& pod);

struct Candidate {
  const NodeState* node = nullptr;
  bool simple = false;   // every GPU whole-used or free: fit is arithmetic (reclaim_statement.h)
  MilliGpu blocked = 0;  // whole GPUs reserved here for others (reservation.h)
  int bound = 0;         // fewest pods whose eviction could free enough (gangs and headroom aside)
  Rank optimistic;       // no unit on this node ranks before this
  Freed releasing;
  std::vector<PodPtr> releasingPods;
  std::vector<Unit> units;  // filled only when the node is evaluated
};

struct NodePlan {
  const Candidate* candidate = nullptr;
  std::vector<const Unit*> units;  // in victim order
  int pods = 0;
  int unlabelled = 0;  // pods not labelled borrowed (their queue is over, but they were not told)
  Freed freed;
};

class Planner {
 public:
  Planner(const ClusterSnapshot& snapshot, const Pod& pod, const ReclaimOptions& options)
      : snap_(snapshot), pod_(pod), options_(options) {}

  ReclaimOutcome run();

 private:
  ReclaimOutcome outcome(ReclaimOutcome::Kind kind, std::string reason) const {
    ReclaimOutcome out;
    out.kind = kind;
    out.reason = std::move(reason);
    return out;
  }
  void buildQueues();
  void noteReleasing();
  int queueOf(const Pod& pod) const {
    auto it = queueIndex_.find(pod.queue);
    return it == queueIndex_.end() ? -1 : it->second;
  }
  bool isProtected(const Pod& pod, int queue) const;
  // First pass over a node's pods: the lower bound and the optimistic rank; false when even
  // evicting everything allowed cannot free enough.
  bool screen(Candidate& c, MilliGpu* reachable);
  // Whether `pod` may be a victim on its own (gang aside); counts why not.
  bool evictable(const Pod& pod);
  std::optional<Unit> unitFor(const PodPtr& pod, const NodeState& node);
  const std::vector<PodPtr>& gangMembers(const std::string& key);
  void collect(const NodeState& node, Candidate& candidate);
  std::optional<NodePlan> evaluate(const Candidate& candidate, bool bySize) const;
  Rank staticRank(const Unit& unit) const;
  bool better(const NodePlan& a, const NodePlan& b) const;
  ReclaimPlan commit(const NodePlan& plan) const;
  std::string victimReason(const Pod& victim) const;

  const ClusterSnapshot& snap_;
  const Pod& pod_;
  const ReclaimOptions& options_;
  std::vector<QueueInfo> queues_;
  std::unordered_map<std::string_view, int> queueIndex_;
  int reclaimer_ = -1;
  bool inQuota_ = false;
  std::unordered_set<std::string_view> releasingUids_;
  std::unordered_map<std::string_view, std::vector<PodPtr>> releasingByNode_;
  std::optional<std::unordered_map<std::string, std::vector<PodPtr>>> gangs_;
  std::unordered_set<std::string_view> protected_;  // uids seen protected by reclaimMinRuntime
  std::unordered_set<std::string_view> sparedSeen_;
  std::vector<MilliGpu> sizes_;  // scratch for screen()
};

}  // namespace gpufair::policy::reclaim_detail
