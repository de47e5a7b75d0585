#include "gpufair/policy/fragmentation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "score_memo.h"

namespace gpufair::policy {
namespace {

// The node side of the math, without allocations: free GPUs as a span.
struct FreeView {
  std::string_view model;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  std::span<const MilliGpu> gpus;
};

bool shapeFitsCpuMemory(const FreeView& node, const PodShape& shape, const FitOptions& options) {
  return !options.measuresCpuMemory() ||
         (shape.cpuMilli <= node.cpu && shape.memoryBytes <= node.memory);
}

constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

// What the measure counts as free CPU and memory on `node` after `taken` more is placed: fit's
// figures, except that only scoring (not checking) an unknown (0) allocatable does not limit.
std::int64_t measuredCpu(const NodeState& node, const FitOptions& options, std::int64_t taken) {
  if (!options.checkCpuMemory && node.node().cpuMilli <= 0) return kUnlimited;
  return node.cpuFree() > taken ? node.cpuFree() - taken : 0;
}
std::int64_t measuredMemory(const NodeState& node, const FitOptions& options, std::int64_t taken) {
  if (!options.checkCpuMemory && node.node().memoryBytes <= 0) return kUnlimited;
  return node.memoryFree() > taken ? node.memoryFree() - taken : 0;
}

double fragmentationOf(const FreeView& node, const Workload& workload, const FitOptions& options) {
  MilliGpu total = 0;
  for (MilliGpu f : node.gpus) total += f;
  if (total == 0) return 0;
  // Per distinct per-GPU need r (ascending): how many GPUs have r free, and the free milli of
  // those that don't. One sweep over the GPUs sorted by free room.
  const auto needs = workload.perGpuNeeds();
  constexpr std::size_t kInline = 64;
  int countInline[kInline];
  MilliGpu fragInline[kInline];
  MilliGpu sortedInline[kInline];
  std::vector<int> countHeap;
  std::vector<MilliGpu> fragHeap;
  std::vector<MilliGpu> sortedHeap;
  int* count = countInline;
  MilliGpu* frag = fragInline;
  MilliGpu* sorted = sortedInline;
  if (needs.size() > kInline) {
    countHeap.resize(needs.size());
    fragHeap.resize(needs.size());
    count = countHeap.data();
    frag = fragHeap.data();
  }
  if (node.gpus.size() > kInline) {
    sortedHeap.resize(node.gpus.size());
    sorted = sortedHeap.data();
  }
  const std::size_t g = node.gpus.size();
  std::copy(node.gpus.begin(), node.gpus.end(), sorted);
  std::sort(sorted, sorted + g);
  std::size_t below = 0;  // GPUs with less than needs[r] free
  MilliGpu belowSum = 0;
  for (std::size_t r = 0; r < needs.size(); ++r) {
    while (below < g && sorted[below] < needs[r]) belowSum += sorted[below++];
    count[r] = static_cast<int>(g - below);
    frag[r] = belowSum;
  }
  const std::uint64_t modelBit = workload.modelBit(node.model);
  const bool byName = workload.models().size() > 63;
  double sum = 0;
  const auto shapes = workload.shapes();
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const PodShape& shape = shapes[i].shape;
    const int r = workload.needIndex(i);
    MilliGpu lost = total;
    const bool modelOk =
        byName ? shape.allowsModel(node.model) : (workload.modelMask(i) & modelBit) != 0;
    if (r >= 0 && count[r] >= shape.gpusUsed() && modelOk &&
        shapeFitsCpuMemory(node, shape, options)) {
      lost = frag[r];
    }
    sum += shapes[i].weight * static_cast<double>(lost);
  }
  return sum;
}

FreeView viewOf(const FreeResources& r) {
  return {r.gpuModel, r.cpuMilli, r.memoryBytes, r.gpuFree};
}

// The node's free GPUs into `out` (sized to the node's GPU count).
void freeGpus(const NodeState& node, std::span<MilliGpu> out) {
  for (int i = 0; i < node.gpuCount(); ++i) out[static_cast<std::size_t>(i)] = node.gpuFree(i);
}

// Takes `pod` from free GPUs in place (fractional: from `gpuIndex`; whole: lowest fully free).
void takeGpus(std::span<MilliGpu> gpus, const Pod& pod, int gpuIndex) {
  if (pod.isFractional()) {
    if (gpuIndex < 0 || gpuIndex >= static_cast<int>(gpus.size())) return;
    MilliGpu& f = gpus[static_cast<std::size_t>(gpuIndex)];
    f = f > pod.gpuShare ? f - pod.gpuShare : 0;
    return;
  }
  int left = pod.gpuCount();
  for (auto& f : gpus) {
    if (left == 0) break;
    if (f == kMilliPerGpu) {
      f = 0;
      --left;
    }
  }
}

std::int64_t minus(std::int64_t a, std::int64_t b) {
  return a > b ? a - b : 0;
}

}  // namespace

bool PodShape::allowsModel(std::string_view model) const {
  if (gpuModels.empty()) return true;
  return std::binary_search(gpuModels.begin(), gpuModels.end(), model, std::less<>());
}

PodShape PodShape::of(const Pod& pod) {
  PodShape s;
  if (pod.isFractional()) {
    s.gpuShare = pod.gpuShare;
  } else {
    s.gpuCount = pod.gpuCount();
  }
  s.cpuMilli = pod.cpuMilli;
  s.memoryBytes = pod.memoryBytes;
  s.gpuModels = pod.gpuModels;
  std::sort(s.gpuModels.begin(), s.gpuModels.end());
  s.gpuModels.erase(std::unique(s.gpuModels.begin(), s.gpuModels.end()), s.gpuModels.end());
  return s;
}

Workload::Workload(std::vector<WeightedShape> shapes) {
  std::sort(shapes.begin(), shapes.end(),
            [](const WeightedShape& a, const WeightedShape& b) { return a.shape < b.shape; });
  for (auto& w : shapes) {
    if (!(w.weight > 0) || !std::isfinite(w.weight)) continue;
    if (!shapes_.empty() && shapes_.back().shape == w.shape) {
      shapes_.back().weight += w.weight;
    } else {
      shapes_.push_back(std::move(w));
    }
  }
  double total = 0;
  for (const auto& w : shapes_) total += w.weight;
  for (auto& w : shapes_) w.weight /= total;
  for (const auto& w : shapes_) {
    if (w.shape.perGpu() > 0) needs_.push_back(w.shape.perGpu());
  }
  std::sort(needs_.begin(), needs_.end());
  needs_.erase(std::unique(needs_.begin(), needs_.end()), needs_.end());
  for (const auto& w : shapes_) {
    for (const auto& m : w.shape.gpuModels) models_.push_back(m);
  }
  std::sort(models_.begin(), models_.end());
  models_.erase(std::unique(models_.begin(), models_.end()), models_.end());
  modelMask_.reserve(shapes_.size());
  for (const auto& w : shapes_) {
    std::uint64_t mask = 0;
    if (w.shape.gpuModels.empty() || models_.size() > 63) {
      mask = ~std::uint64_t{0};  // any model (or too many models to index: checked by name)
    } else {
      for (const auto& m : w.shape.gpuModels) mask |= modelBit(m);
    }
    modelMask_.push_back(mask);
  }
  needIndex_.reserve(shapes_.size());
  for (const auto& w : shapes_) {
    const MilliGpu need = w.shape.perGpu();
    if (need == 0) {
      needIndex_.push_back(-1);
    } else {
      needIndex_.push_back(
          static_cast<int>(std::lower_bound(needs_.begin(), needs_.end(), need) - needs_.begin()));
    }
  }
}

std::uint64_t Workload::modelBit(std::string_view model) const {
  // Bit 63 stands for every model no shape names (allowed only by "any model" shapes).
  if (models_.size() > 63) return ~std::uint64_t{0};
  const auto it = std::lower_bound(models_.begin(), models_.end(), model, std::less<>());
  if (it == models_.end() || *it != model) return std::uint64_t{1} << 63;
  return std::uint64_t{1} << (it - models_.begin());
}

Workload Workload::fromPods(std::span<const Pod> pods) {
  std::vector<WeightedShape> shapes;
  shapes.reserve(pods.size());
  for (const auto& p : pods) {
    if (p.gpus > 0) shapes.push_back({PodShape::of(p), 1.0});
  }
  return Workload(std::move(shapes));
}

WorkloadModel::WorkloadModel(double decay, double forgetBelow)
    : decay_(decay), forgetBelow_(forgetBelow) {}

void WorkloadModel::observe(const PodShape& shape, double steps) {
  const double factor = std::pow(decay_, std::max(0.0, steps));
  if (factor != 1.0) {
    for (auto& w : weights_) w.weight *= factor;
    std::erase_if(weights_, [&](const WeightedShape& w) { return w.weight < forgetBelow_; });
  }
  auto it = std::lower_bound(weights_.begin(), weights_.end(), shape,
                             [](const WeightedShape& w, const PodShape& s) { return w.shape < s; });
  if (it != weights_.end() && it->shape == shape) {
    it->weight += 1.0;
  } else {
    weights_.insert(it, WeightedShape{shape, 1.0});
  }
}

Workload WorkloadModel::distribution(double coverage) const {
  if (!(coverage < 1.0)) return Workload(weights_);
  std::vector<WeightedShape> ranked = weights_;  // sorted by shape: ties stay in shape order
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const WeightedShape& a, const WeightedShape& b) { return a.weight > b.weight; });
  const double wanted = coverage * totalWeight();
  double covered = 0;
  std::size_t keep = 0;
  while (keep < ranked.size() && (keep == 0 || covered < wanted)) covered += ranked[keep++].weight;
  ranked.resize(keep);
  return Workload(std::move(ranked));
}

double WorkloadModel::totalWeight() const {
  double total = 0;
  for (const auto& w : weights_) total += w.weight;
  return total;
}

FreeResources FreeResources::of(const NodeState& node) {
  FreeResources r;
  r.gpuModel = node.node().gpuModel;
  r.cpuMilli = node.cpuFree();
  r.memoryBytes = node.memoryFree();
  r.gpuFree.resize(static_cast<std::size_t>(node.gpuCount()));
  freeGpus(node, r.gpuFree);
  return r;
}

MilliGpu FreeResources::totalGpuFree() const {
  MilliGpu total = 0;
  for (MilliGpu f : gpuFree) total += f;
  return total;
}

void FreeResources::take(const Pod& pod, int gpuIndex) {
  cpuMilli = minus(cpuMilli, pod.cpuMilli);
  memoryBytes = minus(memoryBytes, pod.memoryBytes);
  if (pod.isFractional() && gpuIndex < 0) {
    MilliGpu best = 0;
    for (std::size_t i = 0; i < gpuFree.size(); ++i) {
      if (gpuFree[i] >= pod.gpuShare && (gpuIndex < 0 || gpuFree[i] < best)) {
        gpuIndex = static_cast<int>(i);
        best = gpuFree[i];
      }
    }
  }
  takeGpus(gpuFree, pod, gpuIndex);
}

double shapeFragmentation(const FreeResources& node, const PodShape& shape,
                          const FitOptions& options) {
  return nodeFragmentation(node, Workload({{shape, 1.0}}), options);
}

double nodeFragmentation(const FreeResources& node, const Workload& workload,
                         const FitOptions& options) {
  return fragmentationOf(viewOf(node), workload, options);
}

double nodeFragmentation(const NodeState& node, const Workload& workload,
                         const FitOptions& options) {
  constexpr std::size_t kInline = 64;
  MilliGpu inlineBuf[kInline];
  std::vector<MilliGpu> heap;
  const auto n = static_cast<std::size_t>(node.gpuCount());
  std::span<MilliGpu> gpus(inlineBuf, std::min(n, kInline));
  if (n > kInline) {
    heap.resize(n);
    gpus = heap;
  }
  freeGpus(node, gpus);
  return fragmentationOf(
      {node.node().gpuModel, measuredCpu(node, options, 0), measuredMemory(node, options, 0), gpus},
      workload, options);
}

double nodeFragmentation(const NodeState& node, const WorkloadPtr& workload,
                         const FitOptions& options) {
  return node.cachedFragmentation(workload, options);
}

ClusterFragmentation clusterFragmentation(const ClusterSnapshot& snapshot,
                                          const Workload& workload) {
  ClusterFragmentation c;
  for (const auto& n : snapshot.nodes()) {
    if (!n->node().takesNewPods()) continue;
    MilliGpu free = 0;
    for (int i = 0; i < n->gpuCount(); ++i) free += n->gpuFree(i);
    c.free += free;
    c.fragmented += nodeFragmentation(*n, workload, snapshot.fitOptions());
  }
  return c;
}

ClusterFragmentation clusterFragmentation(const ClusterSnapshot& snapshot) {
  ClusterFragmentation c;
  const WorkloadPtr& workload = snapshot.workload();
  for (const auto& n : snapshot.nodes()) {
    if (!n->node().takesNewPods()) continue;
    for (int i = 0; i < n->gpuCount(); ++i) c.free += n->gpuFree(i);
    if (workload) c.fragmented += n->cachedFragmentation(workload, snapshot.fitOptions());
  }
  return c;
}

double fragmentationDelta(const NodeState& node, const Pod& pod, const WorkloadPtr& workload,
                          const FitOptions& options, int gpuIndex, int* chosenGpu) {
  if (chosenGpu != nullptr) *chosenGpu = -1;
  if (!workload) return 0;
  const double before = node.cachedFragmentation(workload, options);
  constexpr std::size_t kInline = 64;
  MilliGpu base[kInline];
  MilliGpu work[kInline];
  std::vector<MilliGpu> baseHeap;
  std::vector<MilliGpu> workHeap;
  const auto n = static_cast<std::size_t>(node.gpuCount());
  std::span<MilliGpu> gpus(base, std::min(n, kInline));
  std::span<MilliGpu> after(work, std::min(n, kInline));
  if (n > kInline) {
    baseHeap.resize(n);
    workHeap.resize(n);
    gpus = baseHeap;
    after = workHeap;
  }
  freeGpus(node, gpus);
  FreeView view{node.node().gpuModel, measuredCpu(node, options, pod.cpuMilli),
                measuredMemory(node, options, pod.memoryBytes), after};
  auto evaluate = [&](int index) {
    std::copy(gpus.begin(), gpus.end(), after.begin());
    takeGpus(after, pod, index);
    return fragmentationOf(view, *workload, options) - before;
  };
  if (!pod.isFractional()) return evaluate(-1);
  if (gpuIndex >= 0) {
    if (chosenGpu != nullptr) *chosenGpu = gpuIndex;
    return evaluate(gpuIndex);
  }
  // Every GPU with room; GPUs with equal free room give equal results, so each free amount is
  // tried once (the lowest index). Ties: least free room (best fit), then lowest index.
  double best = 0;
  int bestIndex = -1;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] < pod.gpuShare) continue;
    bool seen = false;
    for (std::size_t j = 0; j < i && !seen; ++j) seen = gpus[j] == gpus[i];
    if (seen) continue;
    const double d = evaluate(static_cast<int>(i));
    const bool better = bestIndex < 0 || d < best - 1e-9 ||
                        (d <= best + 1e-9 && gpus[i] < gpus[static_cast<std::size_t>(bestIndex)]);
    if (better) {
      best = d;
      bestIndex = static_cast<int>(i);
    }
  }
  if (chosenGpu != nullptr) *chosenGpu = bestIndex;
  return bestIndex < 0 ? 0 : best;
}

namespace detail {
namespace {

// What the measure reads of a node's CPU and memory: whether it is unlimited, and what is free.
struct MeasuredCpuMemory {
  bool cpuUnlimited;
  std::int64_t cpuFree;
  bool memoryUnlimited;
  std::int64_t memoryFree;
  bool operator==(const MeasuredCpuMemory&) const = default;
};

// measuredCpu(node, options, taken) is kUnlimited when cpuUnlimited, else cpuFree less taken: a
// function of these two (the same for memory). The measure reads them only when it measures CPU
// and memory (shapeFitsCpuMemory); otherwise they are left out, so more nodes look alike.
MeasuredCpuMemory measuredCpuMemory(const NodeState& node, const FitOptions& options) {
  if (!options.measuresCpuMemory()) return {false, 0, false, 0};
  const bool cpuUnlimited = !options.checkCpuMemory && node.node().cpuMilli <= 0;
  const bool memoryUnlimited = !options.checkCpuMemory && node.node().memoryBytes <= 0;
  return {cpuUnlimited, cpuUnlimited ? 0 : node.cpuFree(), memoryUnlimited,
          memoryUnlimited ? 0 : node.memoryFree()};
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

// Everything fragmentationDelta, nodeFragmentation and the fgd scorers read of a node: the GPU
// model, each GPU's use (free room, fully free GPUs, the GPU count), allocatable and used GPUs
// (free GPUs) and the measured CPU and memory (measuredCpu, measuredMemory). The hash reads only
// the node's own fields (the per-GPU list and a long model name live elsewhere in memory, and
// this runs on every candidate): nodes it cannot tell apart are told apart by sameScoreInputs.
std::uint64_t scoreInputsHash(const NodeState& node, const FitOptions& options, bool readsCpuFree) {
  const std::string& model = node.node().gpuModel;
  std::uint64_t prefix = 0;
  std::memcpy(&prefix, model.data(), std::min(model.size(), sizeof prefix));
  std::uint64_t h = mix(model.size(), prefix);
  h = mix(h, static_cast<std::uint64_t>(node.allocatable()));
  h = mix(h, static_cast<std::uint64_t>(node.used()));
  h = mix(h, static_cast<std::uint64_t>(node.gpuCount()));
  h = mix(h, static_cast<std::uint64_t>(node.fullyFreeGpus()));
  h = mix(h, static_cast<std::uint64_t>(node.largestGpuFree()));
  const MeasuredCpuMemory m = measuredCpuMemory(node, options);
  if (readsCpuFree) h = mix(h, static_cast<std::uint64_t>(node.cpuFree()));
  h = mix(h, static_cast<std::uint64_t>(m.cpuFree) * 2 + (m.cpuUnlimited ? 1 : 0));
  return mix(h, static_cast<std::uint64_t>(m.memoryFree) * 2 + (m.memoryUnlimited ? 1 : 0));
}

bool sameScoreInputs(const NodeState& a, const NodeState& b, const FitOptions& options,
                     bool readsCpuFree) {
  if (readsCpuFree && a.cpuFree() != b.cpuFree()) return false;
  if (a.allocatable() != b.allocatable() || a.used() != b.used() || a.gpuCount() != b.gpuCount() ||
      a.fullyFreeGpus() != b.fullyFreeGpus() ||
      !(measuredCpuMemory(a, options) == measuredCpuMemory(b, options)) ||
      a.node().gpuModel != b.node().gpuModel) {
    return false;
  }
  // Every GPU of both is unused (fullyFreeGpus counts the GPUs nobody uses): equal lists.
  if (a.fullyFreeGpus() == a.gpuCount()) return true;
  return std::ranges::equal(a.gpuUsedList(), b.gpuUsedList());
}

}  // namespace detail
}  // namespace gpufair::policy
