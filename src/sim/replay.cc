#include "gpufair/sim/replay.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "gpufair/policy/admission.h"
#include "gpufair/sim/sampling.h"

namespace gpufair::sim {
namespace {

using policy::NodeState;
using policy::NodeStatePtr;
using policy::PodPtr;

// Scores this close to the best count as equal (floating-point noise in sums of ratios).
bool nearlyEqual(double a, double best) {
  return std::fabs(a - best) <= 1e-9 * std::max(1.0, std::fabs(best));
}

class Replayer {
 public:
  Replayer(const Scenario& scenario, const policy::Scorer& scorer, const ReplayOptions& options)
      : scenario_(scenario), scorer_(scorer), options_(options) {
    snapshotOptions_.fit = options.fit;
    snapshotOptions_.workload = options.workload;
    snapshotOptions_.seed = options.seed;
    measureFrag_ = options.measureFragmentation && options.workload && !options.workload->empty();

    const std::size_t n = scenario.nodes.size();
    podsOn_.resize(n);
    std::unordered_map<std::string_view, std::size_t> index;
    for (std::size_t i = 0; i < n; ++i) index.emplace(scenario.nodes[i].name, i);
    for (const auto& pod : scenario.running) {
      auto it = index.find(pod.nodeName);
      if (it == index.end()) continue;  // the scenario loader rejects these
      podsOn_[it->second].push_back(std::make_shared<const policy::Pod>(pod));
      allocated_ += pod.holdsGpus() ? pod.gpus : 0;
    }
    states_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      states_.push_back(std::make_shared<const NodeState>(scenario.nodes[i], podsOn_[i], 0));
    }
    frag_.assign(n, 0.0);
    if (measureFrag_) {
      for (std::size_t i = 0; i < n; ++i) {
        frag_[i] = policy::nodeFragmentation(*states_[i], options.workload, options.fit);
        fragTotal_ += frag_[i];
      }
    }
    // Tie-break order: a seeded random permutation of the nodes (rank_[i]: node i's place).
    const std::vector<std::size_t> perm = tieBreakOrder(n, options.seed);
    rank_.resize(n);
    for (std::size_t r = 0; r < n; ++r) rank_[perm[r]] = r;
    rebuildSnapshot();
    fitting_.reserve(n);
    fittingIndex_.reserve(n);
    raw_.reserve(n);
  }

  ReplayResult run(std::span<const std::size_t> order) {
    ReplayResult out;
    out.capacity = scenario_.gpuCapacity();
    out.events.reserve(order.size());
    out.placements.reserve(order.size());
    out.gpuIndexes.reserve(order.size());
    MilliGpu arrived = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
      policy::Pod pod = scenario_.templates[order[k]];
      pod.uid += "#" + std::to_string(k);  // each submission is its own pod
      arrived += pod.gpus;
      int gpu = -1;
      const int node = place(pod, gpu);
      out.placements.push_back(node);
      out.gpuIndexes.push_back(gpu);
      if (node < 0) {
        ++out.failed;
        out.failedGpus += pod.gpus;
      } else {
        ++out.placed;
      }
      out.events.push_back({arrived, allocated_, fragTotal_});
      if (options_.progress) options_.progress->fetch_add(1, std::memory_order_relaxed);
    }
    return out;
  }

 private:
  // Places `pod` and returns its node's index, or -1 if no node fits it.
  int place(policy::Pod& pod, int& gpu) {
    fitting_.clear();
    fittingIndex_.clear();
    const bool checkCpu = options_.fit.checkCpuMemory;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      const NodeState& node = *states_[i];
      if (options_.prefilter) {
        if (node.free() < pod.gpus) continue;
        if (checkCpu && (node.cpuFree() < pod.cpuMilli || node.memoryFree() < pod.memoryBytes))
          continue;
      }
      if (!policy::fitsNode(node, pod, options_.fit).isOk()) continue;
      fitting_.push_back(&node);
      fittingIndex_.push_back(i);
    }
    if (fitting_.empty()) return -1;

    raw_.assign(fitting_.size(), 0.0);
    scorer_.score(*snapshot_, pod, fitting_, raw_);
    const double best = *std::max_element(raw_.begin(), raw_.end());
    std::size_t chosen = fittingIndex_.size();
    for (std::size_t j = 0; j < raw_.size(); ++j) {
      if (!nearlyEqual(raw_[j], best)) continue;
      if (chosen == fittingIndex_.size() || rank_[fittingIndex_[j]] < rank_[fittingIndex_[chosen]])
        chosen = j;
    }
    const std::size_t i = fittingIndex_[chosen];
    if (pod.isFractional()) {
      gpu = scorer_.chooseGpu(*snapshot_, pod, *states_[i]);
      pod.gpuIndex = gpu;
    }
    bind(pod, i);
    return static_cast<int>(i);
  }

  void bind(policy::Pod& pod, std::size_t i) {
    pod.nodeName = scenario_.nodes[i].name;
    pod.phase = policy::PodPhase::kRunning;
    podsOn_[i].push_back(std::make_shared<const policy::Pod>(pod));
    states_[i] = std::make_shared<const NodeState>(scenario_.nodes[i], podsOn_[i], ++generation_);
    allocated_ += pod.gpus;
    if (measureFrag_) {
      fragTotal_ -= frag_[i];
      frag_[i] = policy::nodeFragmentation(*states_[i], options_.workload, options_.fit);
      fragTotal_ += frag_[i];
    }
    rebuildSnapshot();
  }

  void rebuildSnapshot() {
    snapshot_ = std::make_shared<const policy::ClusterSnapshot>(
        states_, std::vector<PodPtr>{}, QuotaConfig{}, generation_, snapshotOptions_);
  }

  const Scenario& scenario_;
  const policy::Scorer& scorer_;
  const ReplayOptions& options_;
  policy::SnapshotOptions snapshotOptions_;
  bool measureFrag_ = false;

  std::vector<std::vector<PodPtr>> podsOn_;
  std::vector<NodeStatePtr> states_;  // same order as scenario_.nodes
  std::vector<double> frag_;
  double fragTotal_ = 0;
  std::vector<std::size_t> rank_;
  policy::SnapshotPtr snapshot_;
  std::uint64_t generation_ = 0;
  MilliGpu allocated_ = 0;

  // Scratch, reused across pods.
  std::vector<const NodeState*> fitting_;
  std::vector<std::size_t> fittingIndex_;
  std::vector<double> raw_;
};

}  // namespace

std::vector<std::size_t> tieBreakOrder(std::size_t nodes, std::uint64_t seed) {
  std::vector<std::size_t> perm(nodes);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  Rng rng(seed ^ 0x9E3779B97F4A7C15ULL);
  rng.shuffle(perm);
  return perm;
}

ReplayResult replay(const Scenario& scenario, std::span<const std::size_t> order,
                    const policy::Scorer& scorer, const ReplayOptions& options) {
  Replayer replayer(scenario, scorer, options);
  return replayer.run(order);
}

}  // namespace gpufair::sim
