// "fgd": Fragmentation Gradient Descent (Weng et al., ATC 2023). For each candidate node, the
// growth of the node's fragmentation against the target workload if the pod went there; the least
// growth wins. For a fractional pod every GPU with room is tried and the best one is the choice.
// As in the paper's simulator, the growth dF (milli-GPUs) becomes a whole score
// floor(100 * sigmoid(-dF / 1000)), so nodes whose growth differs by a few tens of milli-GPUs tie
// and the scheduler's tie-break spreads among them; on the openb trace this is worth a point of
// allocation over ranking by the exact growth.
#include <cmath>
#include <string_view>
#include <vector>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"

#include "fgd_support.h"
#include "score_memo.h"

namespace gpufair::policy {
namespace {

// What "fgdplus" adds to fgd's -delta F (in milli-GPUs).
struct PlusTuning {
  double leftoverWeight = 0;  // per milli-GPU left free on the node after placement
  double idlePenalty = 0;     // for starting on a node whose GPUs are all free
  bool quantize = true;       // the paper's whole 0..100 score
};

using detail::paperScore;
// Chosen on openb replays (default and gpushare40 traces, 3 seeds, pods until arrivals reach the
// cluster's capacity): a fresh node costs as much as 0.3 GPU of fragmentation growth, and among
// equal growth the node left fuller wins (the weight is too small to outvote any real growth).
constexpr PlusTuning kPlus{1e-6, 300.0, false};

class FgdScorer final : public Scorer {
 public:
  FgdScorer(WorkloadPtr workload, std::string_view name, PlusTuning tuning)
      : workload_(std::move(workload)), name_(name), tuning_(tuning) {}
  std::string_view name() const override { return name_; }
  // scoreDistinct's contract: the score reads only what sameScoreInputs compares, which
  // sameNodeShape compares too.
  bool scoresByNodeShape() const override { return true; }

  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    const WorkloadPtr workload = target(snapshot, pod);
    // Reads only what detail::sameScoreInputs compares: one score per node shape.
    detail::scoreDistinct(nodes, snapshot.fitOptions(), out, [&](const NodeState& n) {
      double delta = fragmentationDelta(n, pod, workload, snapshot.fitOptions());
      if (tuning_.quantize) {
        if (tuning_.idlePenalty != 0 && n.gpuCount() > 0 && n.fullyFreeGpus() == n.gpuCount()) {
          delta += tuning_.idlePenalty;
        }
        return paperScore(delta);
      }
      double s = -delta;
      if (tuning_.leftoverWeight != 0) {
        const MilliGpu left = n.free() > pod.gpus ? n.free() - pod.gpus : 0;
        s -= tuning_.leftoverWeight * static_cast<double>(left);
      }
      if (tuning_.idlePenalty != 0 && n.gpuCount() > 0 && n.fullyFreeGpus() == n.gpuCount()) {
        s -= tuning_.idlePenalty;
      }
      return s;
    });
  }

  int chooseGpu(const ClusterSnapshot& snapshot, const Pod& pod,
                const NodeState& node) const override {
    return detail::fgdChooseGpu(workload_, snapshot, pod, node);
  }

 private:
  WorkloadPtr target(const ClusterSnapshot& snapshot, const Pod& pod) const {
    return detail::fgdTarget(workload_, snapshot, pod);
  }

  WorkloadPtr workload_;
  std::string_view name_;
  PlusTuning tuning_;
};

}  // namespace

ScorerPtr makeFgdScorer(WorkloadPtr workload) {
  return std::make_unique<FgdScorer>(std::move(workload), "fgd", PlusTuning{});
}

ScorerPtr makeFgdPlusScorer(WorkloadPtr workload) {
  return std::make_unique<FgdScorer>(std::move(workload), "fgdplus", kPlus);
}

namespace detail {

WorkloadPtr fgdTarget(const WorkloadPtr& fixed, const ClusterSnapshot& snapshot, const Pod& pod) {
  if (fixed && !fixed->empty()) return fixed;
  if (snapshot.workload() && !snapshot.workload()->empty()) return snapshot.workload();
  return std::make_shared<const Workload>(std::vector<WeightedShape>{{PodShape::of(pod), 1.0}});
}

int fgdChooseGpu(const WorkloadPtr& fixed, const ClusterSnapshot& snapshot, const Pod& pod,
                 const NodeState& node) {
  if (!pod.isFractional()) return -1;
  int chosen = -1;
  fragmentationDelta(node, pod, fgdTarget(fixed, snapshot, pod), snapshot.fitOptions(), -1,
                     &chosen);
  return chosen;
}

}  // namespace detail
}  // namespace gpufair::policy
