// Internals of consolidation planning (consolidation.h): the planner of one planConsolidation
// call. consolidation.cc has the eligibility, the pass over the nodes (fit now, free in total,
// targets and their bounds) and the outcome; consolidation_search.cc the movers of a target, the
// subsets tried on the undo log and the plan.
// Thread-safety: one Planner per call, used by one thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpufair/policy/consolidation.h"
#include "gpufair/policy/undo_log.h"

namespace gpufair::policy::consolidation_detail {

// One move decision: a pod, or every placed member of its gang.
struct Unit {
  std::vector<PodPtr> members;  // sorted by uid
  MilliGpu gpus = 0;            // GPUs of all members
  int wholeHere = 0;            // GPUs its members use on the target (an upper bound freed there)
  std::optional<Timestamp> youngest;  // latest start among members; none: unknown
};

struct Target {
  std::size_t index = 0;  // in snapshot.nodes()
  int lacking = 0;        // whole GPUs the pod lacks there
  int bound = 0;          // fewest movers that could free them (gangs aside)
};

// A subset of a target's units, as tried.
struct Choice {
  std::vector<const Unit*> units;
  int pods = 0;
  MilliGpu gpus = 0;
  std::optional<Timestamp> youngest;  // the oldest start among the movers (least lost work)
};

struct NodePlan {
  std::size_t target = 0;
  int pods = 0;
  MilliGpu gpus = 0;
  std::optional<Timestamp> youngest;
  std::vector<ConsolidationMove> moves;
};

class Planner {
 public:
  // gangMember: `pod` is planned as one member of its waiting gang (planGangConsolidation).
  Planner(const ClusterSnapshot& snapshot, const Pod& pod, const ConsolidationOptions& options,
          bool gangMember = false)
      : snap_(snapshot), pod_(pod), options_(options), log_(snapshot), gangMember_(gangMember) {}

  ConsolidationOutcome run();

 private:
  ConsolidationOutcome outcome(ConsolidationOutcome::Kind kind, std::string reason) const;
  std::optional<ConsolidationOutcome> eligibility() const;
  // The pass over the nodes: fills targets_; an outcome when the pod fits or is not fragmented.
  std::optional<ConsolidationOutcome> scan();
  std::optional<ConsolidationOutcome> scanShare();  // scan() for a share of one GPU
  std::string noPlanReason() const;

  // --- consolidation_search.cc
  bool usable(std::size_t node) const;  // takes new pods, allowed model, not excluded
  bool fitsPod(std::size_t node, const Pod& pod) const;  // on the undo log's working copy
  // CPU and memory on the working copy: always when the snapshot's fit options check them, else
  // (serve leaves them to kube-scheduler) where the node's allocatable is known (non-zero).
  bool fitsCpuMemory(std::size_t node, const Pod& pod) const;
  // Whether `pod` may move now (isMovable, and the rules of the moment); counts why not.
  bool mayMove(const Pod& pod);
  const std::vector<PodPtr>& gangMembers(const std::string& key);
  std::optional<Unit> unitFor(const PodPtr& pod, const NodeState& node);
  // The target's movable pods: GPUs they use there, sorted largest first (for the bound).
  void screen(Target& target);
  std::vector<Unit> unitsOn(std::size_t target);
  std::optional<NodePlan> evaluate(const Target& target, const NodePlan* best);
  bool tryChoice(const Target& target, const Choice& choice, NodePlan& plan);
  std::optional<std::size_t> destinationFor(const Pod& mover, std::size_t target) const;
  static bool betterPlan(const NodePlan& a, const NodePlan& b, const ClusterSnapshot& snap);
  ConsolidationPlan commit(const NodePlan& plan) const;

  const ClusterSnapshot& snap_;
  const Pod& pod_;
  const ConsolidationOptions& options_;
  UndoLog log_;
  bool gangMember_ = false;
  std::optional<std::size_t> fitNode_;  // scan(): a node the pod fits on now
  std::vector<Target> targets_;
  std::unordered_set<std::string_view> releasingUids_;
  std::optional<std::unordered_map<std::string, std::vector<PodPtr>>> gangs_;
  const std::vector<PodPtr> noMembers_;
  MilliGpu freeTotal_ = 0;    // whole GPUs free for the pod over usable nodes
  MilliGpu largestFree_ = 0;  // on one usable node
  int tries_ = 0;
  // Why pods that could free room did not move (counted once per pod uid).
  std::unordered_set<std::string_view> tooYoung_;
  std::unordered_set<std::string_view> sparedSeen_;
  std::unordered_set<std::string_view> noController_;
  int movableSeen_ = 0;
  bool refitFailed_ = false;     // movers fit on no other node (GPUs, model, CPU or memory)
  bool targetCpuShort_ = false;  // moves freed the GPUs, the target lacked CPU or memory
  std::string cpuShortNode_;     // scan(): a node with the pod's GPUs free but not its CPU/memory
  std::vector<int> sizes_;       // scratch for screen()
};

std::string gpusText(MilliGpu m);
std::optional<Timestamp> startOf(const Pod& pod);
// true when a started later than b (unknown starts count as oldest).
bool younger(const std::optional<Timestamp>& a, const std::optional<Timestamp>& b);

}  // namespace gpufair::policy::consolidation_detail
