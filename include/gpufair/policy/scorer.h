// Scoring strategies: small named classes behind one interface, chosen by name through a registry.
// A scorer gives each candidate node a raw score (higher is better); normalizeScores maps them to
// the extender wire's 0..10, giving 10 only to the best node(s). Thread-safety: scorers are
// stateless and const; one instance serves all threads.
#pragma once

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
};
using ScorerPtr = std::unique_ptr<Scorer>;

// "spread": least allocated after placement (kube-scheduler's LeastAllocated on GPUs).
ScorerPtr makeSpreadScorer();
// "binpack": most allocated after placement.
ScorerPtr makeBinpackScorer();
// "blockfit" (the default): keeps large free GPU blocks whole. Placing a pod on a node may take
// away free blocks of 1, 2, 4, 8, ... GPUs from it; each lost block of k GPUs costs k / (number of
// nodes that still offer a block of k), so breaking a scarce large block costs most. Lowest cost
// wins; among equal costs, the tightest fit (fewest GPUs left free).
ScorerPtr makeBlockFitScorer();

inline constexpr const char* kDefaultScorer = "blockfit";
// nullptr for an unknown name.
ScorerPtr makeScorer(std::string_view name);
std::vector<std::string> scorerNames();

// Raw scores to 0..10: the best gets 10, the rest are spread over 0..9 by their distance from the
// worst. All equal -> all 10.
std::vector<int> normalizeScores(std::span<const double> raw);

}  // namespace gpufair::policy
