#include "gpufair/sim/hindsight.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "gpufair/policy/scorer.h"
#include "gpufair/sim/report.h"

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

// A plan of the pods order[0..n): per position, 1 if the plan places that pod.
using Plan = std::vector<char>;

// Places the pods at `positions` of `order`, in that sequence, on a copy of `bins` by `rule`.
Plan pack(const Scenario& scenario, std::vector<Bin> bins, std::span<const std::size_t> order,
          std::span<const std::size_t> positions, NodeRule rule) {
  Plan plan(order.size(), 0);
  for (std::size_t k : positions) {
    const policy::Pod& pod = scenario.templates[order[k]];
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
    plan[k] = 1;
  }
  return plan;
}

// GPU supply of the models a pod allows (all GPUs if any model).
MilliGpu allowedSupply(const Scenario& scenario, const policy::Pod& pod) {
  MilliGpu s = 0;
  for (const auto& n : scenario.nodes) s += pod.allowsModel(n.gpuModel) ? n.allocatable : 0;
  return s;
}

// The decreasing orders, each packed by each node rule.
void addSortedPlans(const Scenario& scenario, const std::vector<Bin>& bins,
                    std::span<const std::size_t> order, std::vector<Plan>& plans) {
  std::vector<MilliGpu> supply(scenario.templates.size(), 0);
  for (std::size_t t : order) {
    if (supply[t] == 0) supply[t] = allowedSupply(scenario, scenario.templates[t]);
  }
  auto pod = [&](std::size_t k) -> const policy::Pod& { return scenario.templates[order[k]]; };
  auto gpusThenCpu = [&](std::size_t a, std::size_t b) {
    const auto& x = pod(a);
    const auto& y = pod(b);
    return std::tuple(x.gpus, x.cpuMilli, x.memoryBytes) >
           std::tuple(y.gpus, y.cpuMilli, y.memoryBytes);
  };
  auto cpuThenGpus = [&](std::size_t a, std::size_t b) {
    const auto& x = pod(a);
    const auto& y = pod(b);
    return std::tuple(x.cpuMilli, x.gpus, x.memoryBytes) >
           std::tuple(y.cpuMilli, y.gpus, y.memoryBytes);
  };
  auto restrictedFirst = [&](std::size_t a, std::size_t b) {
    if (supply[order[a]] != supply[order[b]]) return supply[order[a]] < supply[order[b]];
    return gpusThenCpu(a, b);
  };
  std::vector<std::size_t> positions(order.size());
  std::iota(positions.begin(), positions.end(), std::size_t{0});
  for (int sortBy = 0; sortBy < 3; ++sortBy) {
    if (sortBy == 0) std::stable_sort(positions.begin(), positions.end(), gpusThenCpu);
    if (sortBy == 1) std::stable_sort(positions.begin(), positions.end(), cpuThenGpus);
    if (sortBy == 2) std::stable_sort(positions.begin(), positions.end(), restrictedFirst);
    for (NodeRule rule : {NodeRule::kFirstFit, NodeRule::kBestFitGpu, NodeRule::kBestFitBoth})
      plans.push_back(pack(scenario, bins, order, positions, rule));
  }
}

// `start`'s online plan of `order` (its replay), improved knowing every pod: failed pods placed by
// moving one placed pod (repairPlan), then directly where moves opened room (placeFailed), while
// that gains. Every pod the replay placed stays placed.
Plan improvedReplay(const Scenario& scenario, const std::vector<Bin>& bins,
                    std::span<const std::size_t> order, const policy::Scorer& start,
                    const ReplayOptions& options) {
  const ReplayResult r = replay(scenario, order, start, options);
  std::vector<Bin> plan = bins;
  std::vector<std::vector<detail::Placed>> on;
  std::vector<std::size_t> failed;
  detail::planOfReplay(scenario, r, order, plan, on, failed);
  for (int round = 0; round < 4 && !failed.empty(); ++round) {
    MilliGpu gained = detail::repairPlan(scenario, order, plan, on, failed);
    gained += detail::placeFailed(scenario, order, plan, on, failed);
    if (gained == 0) break;
  }
  Plan out(order.size(), 1);
  for (std::size_t k : failed) out[k] = 0;
  return out;
}

// Every candidate plan of the pods `order` (a prefix of the arrivals).
std::vector<Plan> plansOf(const Scenario& scenario, std::span<const std::size_t> order,
                          const policy::Scorer* scorer, const ReplayOptions& options) {
  const std::vector<Bin> bins = detail::initialBins(scenario);
  std::vector<Plan> plans;
  addSortedPlans(scenario, bins, order, plans);
  if (scorer == nullptr) return plans;
  // The simple orders stay below online fgd on the openb lists (they ignore how CPU and GPU left
  // free fit the next pods), so the planner also starts from online plans: the scorer's own (the
  // default strategy's, so hindsight never places less than it), and binpack's, the best online
  // plan on the CPU-heavy lists where the default is not (cpu250). (blockfit's, which binpack
  // matches or beats on every openb list, and fgdplus's doubled the planner's time.)
  ReplayOptions ro = options;
  ro.measureFragmentation = false;
  ro.progress = nullptr;
  plans.push_back(improvedReplay(scenario, bins, order, *scorer, ro));
  policy::ScorerOptions so;
  so.workload = options.workload;
  const policy::ScorerPtr binpack = policy::makeScorer("binpack", so);
  if (binpack) plans.push_back(improvedReplay(scenario, bins, order, *binpack, ro));
  return plans;
}

// GPUs placed by `plan` among the first k pods of `order`, for k = 0..order.size().
std::vector<MilliGpu> prefixGpus(const Scenario& scenario, std::span<const std::size_t> order,
                                 const Plan& plan) {
  std::vector<MilliGpu> sum(order.size() + 1, 0);
  for (std::size_t k = 0; k < order.size(); ++k)
    sum[k + 1] = sum[k] + (plan[k] ? scenario.templates[order[k]].gpus : 0);
  return sum;
}

MilliGpu running(const Scenario& scenario) {
  MilliGpu total = 0;
  for (const auto& pod : scenario.running) total += pod.holdsGpus() ? pod.gpus : 0;
  return total;
}

}  // namespace

MilliGpu hindsightAllocation(const Scenario& scenario, std::span<const std::size_t> order,
                             std::size_t count, const policy::Scorer* scorer,
                             const ReplayOptions& options) {
  const auto prefix = order.first(std::min(count, order.size()));
  MilliGpu best = 0;
  for (const Plan& plan : plansOf(scenario, prefix, scorer, options))
    best = std::max(best, prefixGpus(scenario, prefix, plan).back());
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
    // The pods whose events curveOf averages at `percent`: those after which the arrived
    // request rounds to it, or, if none does, to percent - 1 or percent + 1; counts first..last
    // (contiguous: the arrived request only grows). None of either: the longest prefix within
    // `percent`.
    std::size_t first = 0, last = 0;
    for (int spread : {0, 1}) {
      for (std::size_t k = 1; k <= order.size(); ++k) {
        const int b = arrivedBucket(arrived[k], out.capacity);
        if (b < percent - spread || b > percent + spread) continue;
        if (first == 0) first = k;
        last = k;
      }
      if (first != 0) break;
    }
    if (first == 0) {
      const MilliGpu limit = out.capacity * percent / 100;
      first = last = static_cast<std::size_t>(
          std::upper_bound(arrived.begin(), arrived.end(), limit) - arrived.begin() - 1);
    }
    if (last == 0) continue;
    const auto prefix = order.first(last);
    std::vector<MilliGpu> best(last + 1, 0);
    for (const Plan& plan : plansOf(scenario, prefix, scorer, options)) {
      const std::vector<MilliGpu> sum = prefixGpus(scenario, prefix, plan);
      for (std::size_t k = first; k <= last; ++k) best[k] = std::max(best[k], sum[k]);
    }
    // Each count its own event, so that the curve averages the pods the online curves average:
    // a plan of the longest prefix, cut to a shorter one, is a plan of that one.
    for (std::size_t k = first; k <= last; ++k)
      out.events.push_back({arrived[k], already + best[k], 0.0});
  }
  return out;
}

}  // namespace gpufair::sim
