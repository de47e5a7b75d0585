// Scoring strategies: small named classes behind one interface, chosen by name through a registry.
// A scorer gives each candidate node a raw score (higher is better); normalizeScores maps them to
// the extender wire's 0..10, giving 10 only to the best node(s). Thread-safety: scorers are
// stateless and const; one instance serves all threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

inline constexpr int kMaxExtenderScore = 10;

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;
  // out[i] is the raw score of placing `pod` on nodes[i]; every node is known to fit the pod.
  virtual void score(const ClusterSnapshot& snapshot, const Pod& pod,
                     std::span<const NodeState* const> nodes, std::span<double> out) const = 0;
  // For a fractional pod: the GPU of `node` this strategy gives it, or -1 if no GPU has room.
  // The default is best fit (NodeState::bestFitGpu): the GPU with the least room that fits.
  virtual int chooseGpu(const ClusterSnapshot& snapshot, const Pod& pod,
                        const NodeState& node) const;
  // Whether score() gives nodes of one shape (sameNodeShape, node_shape.h) the same score
  // whatever other nodes are scored with them, so scoring one node per shape is enough.
  virtual bool scoresByNodeShape() const { return false; }
};
using ScorerPtr = std::unique_ptr<Scorer>;

// Construction-time settings of a scorer; unset ones come from the snapshot.
struct ScorerOptions {
  std::uint64_t seed = 0;  // "random": mixed with ClusterSnapshot::seed()
  // "fgd", "fgdplus", "fgdm": the target workload; null: the snapshot's workload(); if that is null
  // or empty too, the pod being placed stands for the workload.
  WorkloadPtr workload;
};

// "spread": least allocated after placement (kube-scheduler's LeastAllocated on GPUs).
ScorerPtr makeSpreadScorer();
// "binpack": most allocated after placement.
ScorerPtr makeBinpackScorer();
// "blockfit" (the default before fgdm): keeps large free GPU blocks whole. Placing a pod on a node
// may take away free blocks of 1, 2, 4, 8, ... GPUs from it; each lost block of k GPUs costs k /
// (number of nodes that still offer a block of k), so breaking a scarce large block costs most.
// Lowest cost wins; among equal costs, the tightest fit (fewest GPUs left free).
ScorerPtr makeBlockFitScorer();

// "bestfit" (the paper's BestFit): least weighted leftover of CPU and GPU after placement, each
// normalized by the largest node's capacity.
ScorerPtr makeBestFitScorer();
// "dotprod" (the paper's DotProd, after Tetris): smallest dot product of the node's free vector
// and the pod's request vector (CPU, memory, GPU; normalized by the node's capacity).
ScorerPtr makeDotProductScorer();
// "random": a pseudo-random score per (pod uid, node name, seed); deterministic.
ScorerPtr makeRandomScorer(std::uint64_t seed = 0);
// "packing" (the paper's GPU Packing): a fractional pod to an already shared GPU first, then GPUs
// on a partly used node, then an idle node.
ScorerPtr makePackingScorer();
// "clustering" (the paper's GPU Clustering): pods with the same GPU request together: nodes that
// run only that request first, then mixed nodes with it, then idle nodes, then other nodes.
ScorerPtr makeClusteringScorer();
// "fgd" (Fragmentation Gradient Descent): the node (and GPU) where the node's fragmentation F_n
// against the target workload grows least (see fragmentation.h).
ScorerPtr makeFgdScorer(WorkloadPtr workload = nullptr);
// "fgdplus": fgd that also keeps whole nodes free: starting on an idle node (all GPUs free) costs
// as much as 0.3 GPU of fragmentation growth, and among equal growth the node left with fewer free
// GPUs wins. Same GPU choice as fgd.
ScorerPtr makeFgdPlusScorer(WorkloadPtr workload = nullptr);

// "fgdm" (the default, fgdm_scorer.h): fgd plus GPU-model scarcity; GPU pods' ties broken by the
// growth of GPUs their node's CPU can no longer feed, pods without GPUs' by best fit.
inline constexpr const char* kDefaultScorer = "fgdm";

// The scorer registry: every strategy once, by name, with a one-line description for help texts
// and the factory that builds it. The default comes first. Everything that lists or accepts
// scorer names (serve --scorer, simulate --policy, `gpufair scorers`, the Helm chart's schema
// test, the README) reads this table; a new strategy is one row here.
struct ScorerInfo {
  std::string_view name;
  std::string_view description;
  ScorerPtr (*make)(const ScorerOptions& options);
};
std::span<const ScorerInfo> scorerRegistry();
// The registry's row for `name` ("default" names kDefaultScorer); nullptr for an unknown name.
const ScorerInfo* findScorer(std::string_view name);
// nullptr for an unknown name.
ScorerPtr makeScorer(std::string_view name);
ScorerPtr makeScorer(std::string_view name, const ScorerOptions& options);
// The registry's names, in its order.
std::vector<std::string> scorerNames();

// Raw scores to 0..10: the best gets 10, the rest are spread over 0..9 by their distance from the
// worst. All equal -> all 10.
std::vector<int> normalizeScores(std::span<const double> raw);

}  // namespace gpufair::policy
