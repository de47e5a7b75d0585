// GPU fragmentation as "Beware of Fragmentation" (Weng et al., USENIX ATC 2023) measures it.
//
// The target workload is a distribution over pod shapes m (cpu, memory, whole GPUs or a share of
// one GPU, allowed GPU models) with popularity p_m (summing to 1). For a node n, the fragmentation
// measured by one shape, F_n(m), is the free GPU capacity on n that a task of shape m cannot use:
//   - all of n's free milli-GPUs if m cannot run on n at all (too few GPUs with enough room, a GPU
//     model m does not allow, or - when FitOptions::measuresCpuMemory() - too little CPU or
//     memory);
//   - otherwise the free milli-GPUs of the individual GPUs that have less room than m needs of one
//     GPU (its share, or a whole GPU).
// A shape without GPUs cannot use any GPU: it counts all free milli-GPUs.
// F_n = sum_m p_m * F_n(m), in milli-GPUs; the cluster's is the sum over nodes taking new pods.
// Pure; Workload and WorkloadModel are value types (not thread-safe to mutate concurrently).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

// What one task asks for: the fields of Pod that scheduling and fragmentation look at.
struct PodShape {
  int gpuCount = 0;       // whole GPUs (0 for a fractional or GPU-less task)
  MilliGpu gpuShare = 0;  // share of one GPU in (0, 1000) for a fractional task, else 0
  std::int64_t cpuMilli = 0;
  std::int64_t memoryBytes = 0;
  std::vector<std::string> gpuModels;  // allowed models, sorted; empty: any

  static PodShape of(const Pod& pod);
  bool isFractional() const { return gpuShare > 0; }
  // Needed of each GPU used (share or 1000; 0 without GPUs) and how many GPUs.
  MilliGpu perGpu() const { return gpuShare > 0 ? gpuShare : (gpuCount > 0 ? kMilliPerGpu : 0); }
  int gpusUsed() const { return gpuShare > 0 ? 1 : gpuCount; }
  MilliGpu totalGpus() const { return gpuShare > 0 ? gpuShare : gpuCount * kMilliPerGpu; }
  bool allowsModel(std::string_view model) const;

  auto operator<=>(const PodShape&) const = default;
  bool operator==(const PodShape&) const = default;
};

struct WeightedShape {
  PodShape shape;
  double weight = 0;  // popularity p_m; sums to 1 over a Workload
};

// A target workload: identical shapes grouped, non-positive weights dropped, weights normalized
// to sum to 1, ordered by shape. Immutable once built; precomputes what fragmentation needs.
class Workload {
 public:
  Workload() = default;
  explicit Workload(std::vector<WeightedShape> shapes);
  // Each pod counts once (weight 1) with its shape; pods without GPUs are left out (as the paper's
  // typical pods leave CPU-only tasks out).
  static Workload fromPods(std::span<const Pod> pods);

  std::span<const WeightedShape> shapes() const { return shapes_; }
  bool empty() const { return shapes_.empty(); }

  // Precomputed for speed: the distinct per-GPU needs (ascending) and, per shape, which of them it
  // uses; the distinct GPU models shapes name and, per shape, a mask of the allowed ones.
  std::span<const MilliGpu> perGpuNeeds() const { return needs_; }
  int needIndex(std::size_t shape) const { return needIndex_[shape]; }
  // Bit i set: the shape allows models()[i]; all bits set: any model. A node's model that no shape
  // names has no bit: only shapes allowing any model run there.
  std::uint64_t modelMask(std::size_t shape) const { return modelMask_[shape]; }
  std::span<const std::string> models() const { return models_; }
  std::uint64_t modelBit(std::string_view model) const;

 private:
  std::vector<WeightedShape> shapes_;
  std::vector<MilliGpu> needs_;
  std::vector<int> needIndex_;  // per shape: index into needs_, -1 for a GPU-less shape
  std::vector<std::string> models_;
  std::vector<std::uint64_t> modelMask_;
};

// The popularity of shapes learned online with exponential decay. observe(shape, steps) first
// multiplies every weight by decay^steps, then adds 1 to the shape's weight: with steps = 1 per
// observed pod, a pod seen k pods ago weighs decay^k. Shapes whose weight falls below
// `forgetBelow` are dropped. Pure: the caller decides what a step is (pods, seconds, ...).
class WorkloadModel {
 public:
  explicit WorkloadModel(double decay = 0.999, double forgetBelow = 1e-3);
  void observe(const PodShape& shape, double steps = 1.0);
  void observe(const Pod& pod, double steps = 1.0) { observe(PodShape::of(pod), steps); }
  // The normalized distribution (empty before any observation) of the most popular shapes, kept
  // until they cover `coverage` of the total weight (1: all; ties in shape order).
  Workload distribution(double coverage = 1.0) const;
  double totalWeight() const;
  std::size_t size() const { return weights_.size(); }

 private:
  double decay_;
  double forgetBelow_;
  std::vector<WeightedShape> weights_;  // unnormalized, sorted by shape
};

// What is free on a node, the input of the fragmentation math: cheap to copy and to change for a
// what-if ("after placing this pod on GPU i").
struct FreeResources {
  std::string_view gpuModel;
  std::int64_t cpuMilli = 0;      // free
  std::int64_t memoryBytes = 0;   // free
  std::vector<MilliGpu> gpuFree;  // free milli-GPUs per physical GPU

  static FreeResources of(const NodeState& node);
  MilliGpu totalGpuFree() const;
  // Takes `pod` off what is free: a fractional pod from GPU `gpuIndex` (-1: best fit), a whole-GPU
  // pod from its fully free GPUs (lowest indexes). Assumes it fits.
  void take(const Pod& pod, int gpuIndex = -1);
};

// F_n(m) for one shape, and F_n summed over the workload, in milli-GPUs.
double shapeFragmentation(const FreeResources& node, const PodShape& shape,
                          const FitOptions& options = {});
double nodeFragmentation(const FreeResources& node, const Workload& workload,
                         const FitOptions& options = {});
double nodeFragmentation(const NodeState& node, const Workload& workload,
                         const FitOptions& options = {});
// Cached per NodeState and workload (NodeStates are immutable).
double nodeFragmentation(const NodeState& node, const WorkloadPtr& workload,
                         const FitOptions& options = {});

struct ClusterFragmentation {
  double fragmented = 0;  // milli-GPUs: sum of F_n over nodes taking new pods
  MilliGpu free = 0;      // milli-GPUs free on those nodes
  // The share of free GPU capacity that is fragmented (0 when nothing is free).
  double ratio() const { return free > 0 ? fragmented / static_cast<double>(free) : 0.0; }
};
ClusterFragmentation clusterFragmentation(const ClusterSnapshot& snapshot,
                                          const Workload& workload);
// Against the snapshot's own workload (all zero when it has none), with its fit options.
ClusterFragmentation clusterFragmentation(const ClusterSnapshot& snapshot);

// Fragmentation growth of placing `pod` on `node` (on GPU gpuIndex for a fractional pod; -1: the
// GPU that grows it least, returned in *chosenGpu when given): F_n(after) - F_n(before).
double fragmentationDelta(const NodeState& node, const Pod& pod, const WorkloadPtr& workload,
                          const FitOptions& options, int gpuIndex = -1, int* chosenGpu = nullptr);

}  // namespace gpufair::policy
