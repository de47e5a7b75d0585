#include "gpufair/policy/fgdm_scorer.h"

#include <algorithm>
#include <cmath>

#include "fgd_support.h"
#include "score_memo.h"

namespace gpufair::policy {
namespace {

using detail::paperScore;

// Whether the cluster's CPU is allocated at least `ratio` times as much as its GPUs (nodes with
// GPUs that take new pods): CPU, not GPU, is then what runs out first.
bool cpuBinds(const ClusterSnapshot& snapshot, double ratio) {
  if (ratio <= 0) return false;
  double cpuUsed = 0;
  double cpu = 0;
  double gpuUsed = 0;
  double gpu = 0;
  for (const auto& n : snapshot.nodes()) {
    if (!n->node().takesNewPods() || n->allocatable() <= 0) continue;
    cpuUsed += static_cast<double>(std::min(n->cpuUsed(), n->node().cpuMilli));
    cpu += static_cast<double>(n->node().cpuMilli);
    gpuUsed += static_cast<double>(std::min(n->used(), n->allocatable()));
    gpu += static_cast<double>(n->allocatable());
  }
  if (cpu <= 0 || gpuUsed <= 0) return false;
  return cpuUsed / cpu >= ratio * (gpuUsed / gpu);
}

// Free milli-GPUs that `freeCpu` milli-CPU cannot feed at `ratio` milli-CPU per milli-GPU.
double stranded(double freeGpu, double freeCpu, double ratio) {
  if (ratio <= 0) return 0;
  return std::max(0.0, freeGpu - std::max(0.0, freeCpu) / ratio);
}

class FgdmScorer final : public Scorer {
 public:
  FgdmScorer(WorkloadPtr workload, FgdmTuning tuning)
      : workload_(std::move(workload)), tuning_(tuning) {}
  std::string_view name() const override { return "fgdm"; }
  // scoreDistinct's contract: the score reads only what sameScoreInputs compares, which
  // sameNodeShape compares too.
  bool scoresByNodeShape() const override { return true; }

  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    const WorkloadPtr workload = target(snapshot, pod);
    ModelPressure pressure;
    if (tuning_.scarcityWeight != 0 && !workload->models().empty()) {
      pressure = modelPressure(snapshot, *workload, true);
    }
    const bool fitTies = tuning_.bestFitTies || (pod.gpus == 0 && tuning_.gpuLessBestFitTies) ||
                         (pod.gpus > 0 && cpuBinds(snapshot, tuning_.cpuBoundRatio));
    const double ratio = pod.gpus > 0 && tuning_.cpuStrandTies ? cpuPerGpu(*workload) : 0.0;
    // Quantized growth first, then the stranding growth (in GPUs, x kStrandWeight, bounded so
    // that it stays below one quantum), then best fit (below 1).
    constexpr double kQuantum = 1e4;
    constexpr double kStrandWeight = 100;
    constexpr double kStrandBound = 0.9 * kQuantum / kStrandWeight;
    // Reads only what detail::sameScoreInputs compares (with the node's free CPU while the
    // stranding ties are on): one score per node shape.
    const bool readsCpuFree = ratio > 0;
    detail::scoreDistinct(
        nodes, snapshot.fitOptions(), out,
        [&](const NodeState& n) {
          double delta = fragmentationDelta(n, pod, workload, snapshot.fitOptions());
          if (!pressure.models.empty()) {
            delta += tuning_.scarcityWeight * pressure.of(n.node().gpuModel) *
                     static_cast<double>(pod.gpus);
          }
          double s = paperScore(delta) * kQuantum;
          if (ratio > 0) {
            const double g = static_cast<double>(n.free());
            const double c = static_cast<double>(n.cpuFree());
            const double growth = stranded(g - static_cast<double>(pod.gpus),
                                           c - static_cast<double>(pod.cpuMilli), ratio) -
                                  stranded(g, c, ratio);
            s -= kStrandWeight * std::clamp(growth / kMilliPerGpu, -kStrandBound, kStrandBound);
          }
          if (fitTies && n.allocatable() > 0) {
            const MilliGpu left = n.free() > pod.gpus ? n.free() - pod.gpus : 0;
            s -= static_cast<double>(left) / static_cast<double>(n.allocatable() + 1);
          }
          return s;
        },
        readsCpuFree);
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
  FgdmTuning tuning_;
};

}  // namespace

double ModelPressure::of(std::string_view model) const {
  const auto it = std::lower_bound(models.begin(), models.end(), model, std::less<>());
  if (it == models.end() || *it != model) return 0;
  return pressure[static_cast<std::size_t>(it - models.begin())];
}

ModelPressure modelPressure(const ClusterSnapshot& snapshot, const Workload& workload,
                            bool byFree) {
  ModelPressure p;
  std::vector<double> supply;
  double totalSupply = 0;
  for (const auto& n : snapshot.nodes()) {
    if (!n->node().takesNewPods() || n->allocatable() <= 0) continue;
    const std::string& model = n->node().gpuModel;
    auto it = std::lower_bound(p.models.begin(), p.models.end(), model);
    const auto k = static_cast<std::size_t>(it - p.models.begin());
    if (it == p.models.end() || *it != model) {
      p.models.insert(it, model);
      supply.insert(supply.begin() + static_cast<std::ptrdiff_t>(k), 0.0);
    }
    const double g = static_cast<double>(byFree ? n->free() : n->allocatable());
    supply[k] += g;
    totalSupply += g;
  }
  p.pressure.assign(p.models.size(), 0.0);
  double demand = 0;
  for (const auto& w : workload.shapes()) {
    const double gpus = w.weight * static_cast<double>(w.shape.totalGpus());
    demand += gpus;
    if (w.shape.gpuModels.empty() || gpus <= 0) continue;
    double allowed = 0;
    for (std::size_t k = 0; k < p.models.size(); ++k) {
      if (w.shape.allowsModel(p.models[k])) allowed += supply[k];
    }
    if (allowed <= 0) continue;
    for (std::size_t k = 0; k < p.models.size(); ++k) {
      if (w.shape.allowsModel(p.models[k])) p.pressure[k] += gpus / allowed;
    }
  }
  if (demand <= 0 || totalSupply <= 0) {
    p.pressure.assign(p.models.size(), 0.0);
    return p;
  }
  const double mean = demand / totalSupply;  // the workload's demand per GPU of supply
  for (double& x : p.pressure) x /= mean;
  return p;
}

double cpuPerGpu(const Workload& workload) {
  double cpu = 0;
  double gpu = 0;
  for (const auto& w : workload.shapes()) {
    const double g = static_cast<double>(w.shape.totalGpus());
    if (g <= 0) continue;
    cpu += w.weight * static_cast<double>(w.shape.cpuMilli);
    gpu += w.weight * g;
  }
  return gpu > 0 ? cpu / gpu : 0.0;
}

double cpuStrandedGpus(const NodeState& node, double ratio) {
  return stranded(static_cast<double>(node.free()), static_cast<double>(node.cpuFree()), ratio);
}

ScorerPtr makeFgdmScorer(WorkloadPtr workload, FgdmTuning tuning) {
  return std::make_unique<FgdmScorer>(std::move(workload), tuning);
}

}  // namespace gpufair::policy
