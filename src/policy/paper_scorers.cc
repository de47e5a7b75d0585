// The baselines of "Beware of Fragmentation" (Weng et al., ATC 2023): BestFit, DotProd, Random,
// GPU Packing and GPU Clustering, on gpufair's model.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "gpufair/policy/scorer.h"

namespace gpufair::policy {
namespace {

double ratio(double part, double whole) {
  return whole <= 0 ? 0.0 : part / whole;
}

// GPU milli the pod takes from the node's free GPUs, for leftover math.
MilliGpu gpuLeftAfter(const NodeState& node, const Pod& pod) {
  return node.free() > pod.gpus ? node.free() - pod.gpus : 0;
}

class BestFitScorer final : public Scorer {
 public:
  std::string_view name() const override { return "bestfit"; }
  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    const double maxCpu = static_cast<double>(snapshot.maxNodeCpu());
    const double maxGpu = static_cast<double>(snapshot.maxNodeGpus());
    const double cpuWeight = maxCpu > 0 ? 0.5 : 0.0;
    const double gpuWeight = 1.0 - cpuWeight;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const NodeState& n = *nodes[i];
      const double cpuLeft =
          static_cast<double>(std::max<std::int64_t>(0, n.cpuFree() - pod.cpuMilli));
      const double gpuLeft = static_cast<double>(gpuLeftAfter(n, pod));
      // Leftover in [0, 1]: lower is a better fit.
      out[i] = -(cpuWeight * ratio(cpuLeft, maxCpu) + gpuWeight * ratio(gpuLeft, maxGpu));
    }
  }
};

class DotProductScorer final : public Scorer {
 public:
  std::string_view name() const override { return "dotprod"; }
  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const NodeState& n = *nodes[i];
      double dot = 0;
      int dims = 0;
      if (n.node().cpuMilli > 0) {
        const double cap = static_cast<double>(n.node().cpuMilli);
        dot += ratio(static_cast<double>(n.cpuFree()), cap) *
               ratio(static_cast<double>(pod.cpuMilli), cap);
        ++dims;
      }
      if (n.allocatable() > 0) {
        if (pod.isFractional()) {
          // The GPU dimension is the one GPU the pod would share.
          const int g = chooseGpu(snapshot, pod, n);
          const double free = g < 0 ? 0.0 : static_cast<double>(n.gpuFree(g));
          dot += ratio(free, kMilliPerGpu) * ratio(static_cast<double>(pod.gpuShare), kMilliPerGpu);
        } else {
          const double cap = static_cast<double>(n.allocatable());
          dot +=
              ratio(static_cast<double>(n.free()), cap) * ratio(static_cast<double>(pod.gpus), cap);
        }
        ++dims;
      }
      // The paper's DotProd prefers the smallest product (the node whose free resources align
      // least with the demand, i.e. the fullest fitting one).
      out[i] = dims == 0 ? 0.0 : -dot / dims;
    }
  }
};

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class RandomScorer final : public Scorer {
 public:
  explicit RandomScorer(std::uint64_t seed) : seed_(seed) {}
  std::string_view name() const override { return "random"; }
  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    const std::uint64_t base = splitmix64(seed_ ^ splitmix64(snapshot.seed())) ^ fnv1a(pod.uid);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::uint64_t h = splitmix64(base ^ fnv1a(nodes[i]->name(), 0x84222325cbf29ce4ULL));
      out[i] = static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    }
  }
  int chooseGpu(const ClusterSnapshot& snapshot, const Pod& pod,
                const NodeState& node) const override {
    if (!pod.isFractional()) return -1;
    const std::uint64_t h =
        splitmix64(seed_ ^ splitmix64(snapshot.seed()) ^ fnv1a(pod.uid) ^ fnv1a(node.name(), 7));
    std::vector<int> fitting;
    for (int g = 0; g < node.gpuCount(); ++g) {
      if (node.gpuFree(g) >= pod.gpuShare) fitting.push_back(g);
    }
    if (fitting.empty()) return -1;
    return fitting[h % fitting.size()];
  }

 private:
  std::uint64_t seed_;
};

class PackingScorer final : public Scorer {
 public:
  std::string_view name() const override { return "packing"; }
  // Tiers, best first: 2 = a fractional pod on an already shared GPU (less room left is better);
  // 1 = fully free GPUs of a node in use (fewer is better); 0 = an idle node (smaller is better).
  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const NodeState& n = *nodes[i];
      if (n.fullyFreeGpus() == n.gpuCount()) {
        out[i] = 0.0 - ratio(n.gpuCount(), 1000.0);
        continue;
      }
      if (pod.isFractional()) {
        const int g = chooseGpu(snapshot, pod, n);
        if (g >= 0 && n.gpuUsed(g) > 0) {
          out[i] = 2.0 - ratio(static_cast<double>(n.gpuFree(g)), 2.0 * kMilliPerGpu);
          continue;
        }
        out[i] = 1.0 - ratio(1.0, 1000.0);
        continue;
      }
      out[i] = 1.0 - ratio(pod.gpuCount(), 1000.0);
    }
  }
};

// GPU affinity classes as the paper's GPU Clustering has them: every GPU-sharing pod is one class,
// whole-GPU pods one class per GPU count; GPU-less pods have none.
int affinityClass(const Pod& pod) {
  if (pod.gpus <= 0) return 0;
  return pod.isFractional() ? -1 : pod.gpuCount();
}

class ClusteringScorer final : public Scorer {
 public:
  std::string_view name() const override { return "clustering"; }
  // Integer scores in four bands of 25, best first: (75, 100] the node runs only pods of this
  // pod's class; (50, 75] also others; (25, 50] no GPU pods; [0, 25] only other classes. Within a
  // band, fuller nodes score higher: 25 · (maxNodeGpus − free) / maxNodeGpus, rounded down, so
  // nodes alike tie (and the tie-break decides). A GPU-less pod scores 0 everywhere.
  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    const int mine = affinityClass(pod);
    const MilliGpu maxGpu = std::max<MilliGpu>(snapshot.maxNodeGpus(), 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (mine == 0) {
        out[i] = 0.0;
        continue;
      }
      const NodeState& n = *nodes[i];
      bool same = false;
      bool other = false;
      for (const auto& p : n.pods()) {
        if (!p->holdsGpus() || p->gpus <= 0) continue;
        (affinityClass(*p) == mine ? same : other) = true;
      }
      const std::int64_t band = same ? (other ? 50 : 75) : (other ? 0 : 25);
      const MilliGpu used = std::clamp<MilliGpu>(maxGpu - n.free(), 0, maxGpu);
      out[i] = static_cast<double>(band + 25 * used / maxGpu);
    }
  }
};

}  // namespace

ScorerPtr makeBestFitScorer() {
  return std::make_unique<BestFitScorer>();
}
ScorerPtr makeDotProductScorer() {
  return std::make_unique<DotProductScorer>();
}
ScorerPtr makeRandomScorer(std::uint64_t seed) {
  return std::make_unique<RandomScorer>(seed);
}
ScorerPtr makePackingScorer() {
  return std::make_unique<PackingScorer>();
}
ScorerPtr makeClusteringScorer() {
  return std::make_unique<ClusteringScorer>();
}

}  // namespace gpufair::policy
