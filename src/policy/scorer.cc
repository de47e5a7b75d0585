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

ScorerPtr makeScorer(std::string_view name) {
  return makeScorer(name, ScorerOptions{});
}

ScorerPtr makeScorer(std::string_view name, const ScorerOptions& options) {
  if (name == "default") name = kDefaultScorer;
  if (name == "spread") return makeSpreadScorer();
  if (name == "binpack") return makeBinpackScorer();
  if (name == "blockfit") return makeBlockFitScorer();
  if (name == "bestfit") return makeBestFitScorer();
  if (name == "dotprod") return makeDotProductScorer();
  if (name == "random") return makeRandomScorer(options.seed);
  if (name == "packing") return makePackingScorer();
  if (name == "clustering") return makeClusteringScorer();
  if (name == "fgd") return makeFgdScorer(options.workload);
  if (name == "fgdplus") return makeFgdPlusScorer(options.workload);
  if (name == "fgdm") return makeFgdmScorer(options.workload);
  return nullptr;
}

std::vector<std::string> scorerNames() {
  return {"blockfit", "binpack",    "spread", "bestfit", "dotprod", "random",
          "packing",  "clustering", "fgd",    "fgdplus", "fgdm"};
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
