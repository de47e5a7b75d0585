#include "gpufair/policy/fgdm_scorer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fgd_support.h"
#include "score_memo.h"

namespace gpufair::policy {
namespace {

using detail::paperScore;

// Whether the cluster's CPU is allocated at least `ratio` times as much as its GPUs (nodes with
// GPUs that take new pods): CPU, not GPU, is then what runs out first. The snapshot keeps the sums
// in integers; as doubles they are the same sums a walk over the nodes adds up (exact below 2^53).
bool cpuBinds(const ClusterSnapshot& snapshot, double ratio) {
  if (ratio <= 0) return false;
  const GpuNodeUse& use = snapshot.gpuNodeUse();
  const auto cpu = static_cast<double>(use.cpu);
  const auto gpuUsed = static_cast<double>(use.gpuUsed);
  if (cpu <= 0 || gpuUsed <= 0) return false;
  return static_cast<double>(use.cpuUsed) / cpu >= ratio * (gpuUsed / static_cast<double>(use.gpu));
}

// Free milli-GPUs that `freeCpu` milli-CPU cannot feed at `ratio` milli-CPU per milli-GPU.
double stranded(double freeGpu, double freeCpu, double ratio) {
  if (ratio <= 0) return 0;
  return std::max(0.0, freeGpu - std::max(0.0, freeCpu) / ratio);
}

// What of a node the placeable capacity reads: its GPU model, free CPU and memory as the measure
// counts them (unlimited when not measured, or when an unknown allocatable is only scored), and
// each GPU's free milli-GPUs (nodes have at most kMaxGpus GPUs here; more are not counted).
constexpr int kMaxGpus = 32;
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
struct Room {
  std::int64_t cpu;
  std::int64_t memory;
  int count;
  MilliGpu gpus[kMaxGpus];
};

Room roomOf(const NodeState& n, const FitOptions& options) {
  Room r{kUnlimited, kUnlimited, std::min(n.gpuCount(), kMaxGpus), {}};
  if (options.measuresCpuMemory()) {
    if (options.checkCpuMemory || n.node().cpuMilli > 0) r.cpu = n.cpuFree();
    if (options.checkCpuMemory || n.node().memoryBytes > 0) r.memory = n.memoryFree();
  }
  for (int j = 0; j < r.count; ++j) r.gpus[j] = n.gpuFree(j);
  return r;
}

// `room` after `pod` is placed: CPU and memory less its requests, a whole-GPU pod on the lowest
// fully free GPUs, a fractional one on the node's best-fit GPU.
Room roomAfter(Room r, const NodeState& n, const Pod& pod) {
  if (r.cpu != kUnlimited) r.cpu -= pod.cpuMilli;
  if (r.memory != kUnlimited) r.memory -= pod.memoryBytes;
  if (pod.isFractional()) {
    const int j = n.bestFitGpu(pod.gpuShare);
    if (j >= 0 && j < r.count) r.gpus[j] -= pod.gpuShare;
  } else {
    MilliGpu left = pod.gpus;
    for (int j = 0; j < r.count && left > 0; ++j) {
      if (r.gpus[j] == kMilliPerGpu) {
        r.gpus[j] = 0;
        left -= kMilliPerGpu;
      }
    }
  }
  return r;
}

// How many pods of `shape` fit in `room` at once on a node of `model`.
double copies(const PodShape& shape, std::string_view model, const Room& room) {
  if (!shape.gpuModels.empty() && !shape.allowsModel(model)) return 0;
  double k = std::numeric_limits<double>::max();
  if (shape.cpuMilli > 0 && room.cpu != kUnlimited) {
    k = std::floor(static_cast<double>(std::max<std::int64_t>(0, room.cpu)) /
                   static_cast<double>(shape.cpuMilli));
  }
  if (shape.memoryBytes > 0 && room.memory != kUnlimited) {
    k = std::min(k, std::floor(static_cast<double>(std::max<std::int64_t>(0, room.memory)) /
                               static_cast<double>(shape.memoryBytes)));
  }
  double g = 0;
  if (shape.isFractional()) {
    for (int j = 0; j < room.count; ++j) {
      g += std::floor(static_cast<double>(room.gpus[j]) / static_cast<double>(shape.gpuShare));
    }
  } else {
    int whole = 0;
    for (int j = 0; j < room.count; ++j) whole += room.gpus[j] == kMilliPerGpu ? 1 : 0;
    g = std::floor(static_cast<double>(whole) / std::max(1, shape.gpuCount));
  }
  return std::min(k, g);
}

// The `limit` GPU shapes of `workload` with most weight x milli-GPUs, with that product.
struct Demand {
  const PodShape* shape;
  double milli;  // weight x milli-GPUs
};
std::vector<Demand> topDemand(const Workload& workload, int limit) {
  std::vector<Demand> top;
  for (const auto& w : workload.shapes()) {
    if (w.shape.totalGpus() <= 0) continue;
    top.push_back({&w.shape, w.weight * static_cast<double>(w.shape.totalGpus())});
  }
  const auto k = std::min(top.size(), static_cast<std::size_t>(std::max(0, limit)));
  std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(),
                    [](const Demand& a, const Demand& b) { return a.milli > b.milli; });
  top.resize(k);
  return top;
}

double capacityLoss(const NodeState& n, const Pod& pod, std::span<const Demand> top,
                    const FitOptions& options) {
  if (top.empty()) return 0;
  const Room before = roomOf(n, options);
  const Room after = roomAfter(before, n, pod);
  const std::string_view model = n.node().gpuModel;
  double loss = 0;
  for (const Demand& d : top) {
    loss += d.milli * (copies(*d.shape, model, before) - copies(*d.shape, model, after));
  }
  return loss;
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
    std::vector<Demand> top;
    const bool takesCapacity =
        pod.gpus > 0 || (tuning_.capacityGpuLess && (pod.cpuMilli > 0 || pod.memoryBytes > 0));
    if (takesCapacity && tuning_.capacityWeight != 0 &&
        (tuning_.capacityCpuBound <= 0 || cpuBinds(snapshot, tuning_.capacityCpuBound))) {
      top = topDemand(*workload, tuning_.capacityShapes);
    }
    const bool readsCpuFree = ratio > 0 || !top.empty();
    detail::scoreDistinct(
        nodes, snapshot.fitOptions(), out,
        [&](const NodeState& n) {
          double delta = fragmentationDelta(n, pod, workload, snapshot.fitOptions());
          if (!pressure.models.empty()) {
            delta += tuning_.scarcityWeight * pressure.of(n.node().gpuModel) *
                     static_cast<double>(pod.gpus);
          }
          delta += tuning_.capacityWeight * capacityLoss(n, pod, top, snapshot.fitOptions());
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
  // The snapshot's sums by model are integers: as doubles they are the sums a walk over the nodes
  // adds up (exact below 2^53).
  std::vector<double> supply;
  MilliGpu total = 0;
  for (const ModelGpus& m : snapshot.modelGpus()) {
    const MilliGpu g = byFree ? m.free : m.allocatable;
    p.models.push_back(m.model);
    supply.push_back(static_cast<double>(g));
    total += g;
  }
  const auto totalSupply = static_cast<double>(total);
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

double placeableCapacityLoss(const NodeState& node, const Pod& pod, const Workload& workload,
                             const FitOptions& options, int shapes) {
  const std::vector<Demand> top = topDemand(workload, shapes);
  return capacityLoss(node, pod, top, options);
}

ScorerPtr makeFgdmScorer(WorkloadPtr workload, FgdmTuning tuning) {
  return std::make_unique<FgdmScorer>(std::move(workload), tuning);
}

}  // namespace gpufair::policy
