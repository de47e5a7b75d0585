#include "gpufair/sim/hindsight.h"

#include <algorithm>
#include <numeric>

#include "hindsight_bins.h"

namespace gpufair::sim {
namespace {

using detail::Bin;
using detail::fitGpu;
using detail::take;

enum class NodeRule { kFirstFit, kBestFitGpu, kBestFitBoth };

// How much of `b` is left after `pod`, for best fit: free GPUs first (kBestFitGpu), or the sum of
// the GPU and CPU shares left of the node's capacity (kBestFitBoth).
double leftover(const Bin& b, const policy::Pod& pod, NodeRule rule) {
  const double gpu = static_cast<double>(b.free - pod.gpus);
  if (rule == NodeRule::kBestFitGpu) return gpu * 1e9 + static_cast<double>(b.cpu - pod.cpuMilli);
  const double gpuCap = std::max<double>(1, static_cast<double>(b.node->allocatable));
  const double cpuCap = std::max<double>(1, static_cast<double>(b.node->cpuMilli));
  return gpu / gpuCap + static_cast<double>(b.cpu - pod.cpuMilli) / cpuCap;
}

// Places `pods` (template indexes, in this order) on a copy of `bins` by `rule`. Returns the
// milli-GPUs placed.
MilliGpu pack(const Scenario& scenario, std::vector<Bin> bins, std::span<const std::size_t> pods,
              NodeRule rule) {
  MilliGpu placed = 0;
  for (std::size_t t : pods) {
    const policy::Pod& pod = scenario.templates[t];
    if (pod.gpus == 0) continue;  // takes no GPU: leaving it out can only help the others
    std::size_t chosen = bins.size();
    int chosenGpu = -1;
    double best = 0;
    for (std::size_t i = 0; i < bins.size(); ++i) {
      const int gpu = fitGpu(bins[i], pod);
      if (gpu < 0) continue;
      if (rule == NodeRule::kFirstFit) {
        chosen = i;
        chosenGpu = gpu;
        break;
      }
      const double left = leftover(bins[i], pod, rule);
      if (chosen == bins.size() || left < best) {
        chosen = i;
        chosenGpu = gpu;
        best = left;
      }
    }
    if (chosen == bins.size()) continue;
    take(bins[chosen], pod, chosenGpu);
    placed += pod.gpus;
  }
  return placed;
}

MilliGpu running(const Scenario& scenario) {
  MilliGpu total = 0;
  for (const auto& pod : scenario.running) total += pod.holdsGpus() ? pod.gpus : 0;
  return total;
}

// GPU supply of the models a pod allows (all GPUs if any model).
MilliGpu allowedSupply(const Scenario& scenario, const policy::Pod& pod) {
  MilliGpu s = 0;
  for (const auto& n : scenario.nodes) s += pod.allowsModel(n.gpuModel) ? n.allocatable : 0;
  return s;
}

}  // namespace

MilliGpu hindsightAllocation(const Scenario& scenario, std::span<const std::size_t> order,
                             std::size_t count, const policy::Scorer* scorer,
                             const ReplayOptions& options) {
  const std::vector<Bin> bins = detail::initialBins(scenario);
  std::vector<std::size_t> pods(order.begin(), order.begin() + std::min(count, order.size()));
  std::vector<MilliGpu> supply(scenario.templates.size(), 0);
  for (std::size_t t : pods) {
    if (supply[t] == 0) supply[t] = allowedSupply(scenario, scenario.templates[t]);
  }
  auto gpusThenCpu = [&](std::size_t a, std::size_t b) {
    const auto& x = scenario.templates[a];
    const auto& y = scenario.templates[b];
    return std::tuple(x.gpus, x.cpuMilli, x.memoryBytes) >
           std::tuple(y.gpus, y.cpuMilli, y.memoryBytes);
  };
  auto cpuThenGpus = [&](std::size_t a, std::size_t b) {
    const auto& x = scenario.templates[a];
    const auto& y = scenario.templates[b];
    return std::tuple(x.cpuMilli, x.gpus, x.memoryBytes) >
           std::tuple(y.cpuMilli, y.gpus, y.memoryBytes);
  };
  auto restrictedFirst = [&](std::size_t a, std::size_t b) {
    if (supply[a] != supply[b]) return supply[a] < supply[b];
    return gpusThenCpu(a, b);
  };
  MilliGpu best = 0;
  for (int sortBy = 0; sortBy < 3; ++sortBy) {
    if (sortBy == 0) std::stable_sort(pods.begin(), pods.end(), gpusThenCpu);
    if (sortBy == 1) std::stable_sort(pods.begin(), pods.end(), cpuThenGpus);
    if (sortBy == 2) std::stable_sort(pods.begin(), pods.end(), restrictedFirst);
    for (NodeRule rule : {NodeRule::kFirstFit, NodeRule::kBestFitGpu, NodeRule::kBestFitBoth})
      best = std::max(best, pack(scenario, bins, pods, rule));
  }
  if (scorer != nullptr) {
    // The arrival order placed by the scorer and by blockfit, each plan then repaired: on the
    // openb lists the simple rules above stay below an online fgd (they ignore how CPU and GPU
    // left free fit the next pods), and fgd on the decreasing orders did worse still; blockfit's
    // plan is the better start on CPU-heavy lists. Knowing every pod, the planner then moves
    // placed pods to make room for the failed ones (detail::repairPlan).
    const auto arrived = order.subspan(0, pods.size());
    ReplayOptions ro = options;
    ro.measureFragmentation = false;
    const policy::ScorerPtr blockfit = policy::makeBlockFitScorer();
    for (const policy::Scorer* start :
         {scorer, static_cast<const policy::Scorer*>(blockfit.get())}) {
      const ReplayResult r = replay(scenario, arrived, *start, ro);
      std::vector<Bin> plan = bins;
      std::vector<std::vector<detail::Placed>> on;
      std::vector<std::size_t> failed;
      MilliGpu placed = detail::planOfReplay(scenario, r, arrived, plan, on, failed);
      placed += detail::repairPlan(scenario, plan, on, std::move(failed));
      best = std::max(best, placed);
    }
  }
  return best;
}

ReplayResult hindsightReplay(const Scenario& scenario, std::span<const std::size_t> order,
                             std::span<const int> percents, const policy::Scorer* scorer,
                             const ReplayOptions& options) {
  ReplayResult out;
  out.capacity = scenario.gpuCapacity();
  const MilliGpu already = running(scenario);
  std::vector<MilliGpu> arrived(order.size() + 1, 0);
  for (std::size_t k = 0; k < order.size(); ++k)
    arrived[k + 1] = arrived[k] + scenario.templates[order[k]].gpus;
  std::vector<int> sorted(percents.begin(), percents.end());
  std::sort(sorted.begin(), sorted.end());
  for (int percent : sorted) {
    const MilliGpu limit = out.capacity * percent / 100;
    // The longest prefix whose request stays within `limit`.
    const auto count = static_cast<std::size_t>(
        std::upper_bound(arrived.begin(), arrived.end(), limit) - arrived.begin() - 1);
    if (count == 0) continue;
    const MilliGpu placed = hindsightAllocation(scenario, order, count, scorer, options);
    out.events.push_back({arrived[count], already + placed, 0.0});
  }
  return out;
}

}  // namespace gpufair::sim
