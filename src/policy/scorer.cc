#include "gpufair/policy/scorer.h"

#include <algorithm>
#include <cmath>

#include "gpufair/policy/fgdm_scorer.h"

namespace gpufair::policy {
namespace {

double ratio(MilliGpu part, MilliGpu whole) {
  return whole <= 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

class SpreadScorer final : public Scorer {
 public:
  std::string_view name() const override { return "spread"; }
  void score(const ClusterSnapshot&, const Pod& pod, std::span<const NodeState* const> nodes,
             std::span<double> out) const override {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      out[i] = ratio(nodes[i]->free() - pod.gpus, nodes[i]->allocatable());
    }
  }
};

class BinpackScorer final : public Scorer {
 public:
  std::string_view name() const override { return "binpack"; }
  void score(const ClusterSnapshot&, const Pod& pod, std::span<const NodeState* const> nodes,
             std::span<double> out) const override {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      out[i] = ratio(nodes[i]->used() + pod.gpus, nodes[i]->allocatable());
    }
  }
};

class BlockFitScorer final : public Scorer {
 public:
  std::string_view name() const override { return "blockfit"; }
  void score(const ClusterSnapshot& snapshot, const Pod& pod,
             std::span<const NodeState* const> nodes, std::span<double> out) const override {
    // Block sizes 1, 2, 4, ... whole GPUs up to the largest free block; their scarcity is read
    // once per request from the snapshot.
    struct Block {
      MilliGpu size;
      double cost;
    };
    Block blocks[24];
    int count = 0;
    const MilliGpu largest = snapshot.largestFreeBlock();
    for (MilliGpu k = kMilliPerGpu; k <= largest && count < 24; k *= 2) {
      const int offering = std::max(1, snapshot.nodesWithFree(k));
      blocks[count++] = {k, static_cast<double>(k) / kMilliPerGpu / offering};
    }
    constexpr double kLossWeight = 1e6;  // loss first, tightness only breaks ties
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const MilliGpu before = nodes[i]->free();
      const MilliGpu after = before - pod.gpus;
      double loss = 0;
      for (int b = 0; b < count; ++b) {
        if (before >= blocks[b].size && after < blocks[b].size) loss += blocks[b].cost;
      }
      out[i] = -loss * kLossWeight - static_cast<double>(after) / kMilliPerGpu;
    }
  }
};

}  // namespace

int Scorer::chooseGpu(const ClusterSnapshot&, const Pod& pod, const NodeState& node) const {
  return pod.isFractional() ? node.bestFitGpu(pod.gpuShare) : -1;
}

ScorerPtr makeSpreadScorer() {
  return std::make_unique<SpreadScorer>();
}
ScorerPtr makeBinpackScorer() {
  return std::make_unique<BinpackScorer>();
}
ScorerPtr makeBlockFitScorer() {
  return std::make_unique<BlockFitScorer>();
}

namespace {

constexpr ScorerInfo kRegistry[] = {
    {"fgdm",
     "fgd that keeps pods off the GPU models restricted pods need, breaks GPU pods' ties by the "
     "GPUs their CPU strands and CPU-only pods' by best fit, and while CPU binds charges a GPU "
     "pod the workload's placeable capacity it takes (default; see fgdm_scorer.h)",
     [](const ScorerOptions& o) { return makeFgdmScorer(o.workload); }},
    {"blockfit", "keeps large free GPU blocks whole: breaking a scarce block costs most",
     [](const ScorerOptions&) { return makeBlockFitScorer(); }},
    {"binpack", "most GPUs allocated after placement",
     [](const ScorerOptions&) { return makeBinpackScorer(); }},
    {"spread", "fewest GPUs allocated after placement (kube-scheduler's LeastAllocated)",
     [](const ScorerOptions&) { return makeSpreadScorer(); }},
    {"bestfit", "least weighted CPU and GPU left over after placement (the paper's BestFit)",
     [](const ScorerOptions&) { return makeBestFitScorer(); }},
    {"dotprod", "smallest dot product of free and requested resources (the paper's DotProd)",
     [](const ScorerOptions&) { return makeDotProductScorer(); }},
    {"random", "a pseudo-random node per pod and seed, deterministic",
     [](const ScorerOptions& o) { return makeRandomScorer(o.seed); }},
    {"packing", "shared GPUs first, then partly used nodes, then idle ones (the paper's Packing)",
     [](const ScorerOptions&) { return makePackingScorer(); }},
    {"clustering", "pods with the same GPU request together (the paper's Clustering)",
     [](const ScorerOptions&) { return makeClusteringScorer(); }},
    {"fgd", "least growth of fragmentation against the workload (Fragmentation Gradient Descent)",
     [](const ScorerOptions& o) { return makeFgdScorer(o.workload); }},
    {"fgdplus", "fgd that also keeps idle nodes whole and prefers the fuller of equal choices",
     [](const ScorerOptions& o) { return makeFgdPlusScorer(o.workload); }},
};

}  // namespace

std::span<const ScorerInfo> scorerRegistry() {
  return kRegistry;
}

const ScorerInfo* findScorer(std::string_view name) {
  if (name == "default") name = kDefaultScorer;
  for (const ScorerInfo& info : kRegistry) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

ScorerPtr makeScorer(std::string_view name) {
  return makeScorer(name, ScorerOptions{});
}

ScorerPtr makeScorer(std::string_view name, const ScorerOptions& options) {
  const ScorerInfo* info = findScorer(name);
  return info == nullptr ? nullptr : info->make(options);
}

std::vector<std::string> scorerNames() {
  std::vector<std::string> out;
  for (const ScorerInfo& info : kRegistry) out.emplace_back(info.name);
  return out;
}

std::vector<int> normalizeScores(std::span<const double> raw) {
  std::vector<int> out(raw.size(), kMaxExtenderScore);
  if (raw.empty()) return out;
  const auto [lo, hi] = std::minmax_element(raw.begin(), raw.end());
  const double min = *lo;
  const double max = *hi;
  if (max - min <= 0) return out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= max) continue;
    const double x = (raw[i] - min) / (max - min);
    out[i] =
        std::min(kMaxExtenderScore - 1, static_cast<int>(std::lround(x * (kMaxExtenderScore - 1))));
  }
  return out;
}

}  // namespace gpufair::policy
