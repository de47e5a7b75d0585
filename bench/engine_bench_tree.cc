// engine_bench, part three: fair share over a queue tree (issue 17).
//   BM_FairShareTree  policy::computeFairShares over 1,000 queues in a tree of depth 4 (seed 42):
//                     10 top-level queues, 3 children each, 4 grandchildren each, 7 leaves each
//                     (10 + 30 + 120 + 840 = 1,000). Leaves: deserved 0..5 GPUs, demand 0..60,
//                     weights 1..4, priorities 0..2, a third with a limit of 5..40; a parent
//                     deserves what its children do (the config's rule) and wants their sum, and
//                     a third of the parents have a limit at 60..90% of that; capacity 60% of all
//                     leaf demand. Arg gran: 1000 (whole GPUs) or 1 (milli-GPUs). The target is
//                     < 1 ms; BM_FairShare (engine_bench.cc) is the flat figure to compare with.
//   BM_FairShareTreeFlattened  the same queues, all top-level: the tree's own cost.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "gpufair/common/quantity.h"
#include "gpufair/policy/fair_share.h"

namespace gpufair {
namespace {

struct Tree {
  std::vector<std::string> names;
  std::vector<policy::FairShareInput> queues;
  MilliGpu capacity = 0;
};

Tree buildTree(MilliGpu granularity) {
  const int fanout[] = {10, 3, 4, 7};  // depth 4: 1,000 queues
  std::mt19937_64 rng(42);
  Tree t;
  t.names.reserve(1000);
  t.queues.reserve(1000);
  std::vector<int> level;  // indices of the previous level
  for (int depth = 0; depth < 4; ++depth) {
    std::vector<int> next;
    const std::vector<int> parents = depth == 0 ? std::vector<int>{-1} : level;
    for (int parent : parents) {
      for (int k = 0; k < fanout[depth]; ++k) {
        char name[32];
        std::snprintf(name, sizeof name, "q%d-%04zu", depth, t.queues.size());
        t.names.emplace_back(name);
        policy::FairShareInput q;
        q.parent = parent;
        q.priority = static_cast<int>(rng() % 3);
        q.overQuotaWeight = static_cast<double>(1 + rng() % 4);
        next.push_back(static_cast<int>(t.queues.size()));
        t.queues.push_back(q);
      }
    }
    level = std::move(next);
  }
  for (std::size_t i = 0; i < t.queues.size(); ++i) t.queues[i].name = t.names[i];
  // Leaves first, then sums upwards (children come after their parents in the vector).
  MilliGpu demand = 0;
  for (int i : level) {
    policy::FairShareInput& q = t.queues[static_cast<std::size_t>(i)];
    q.deserved = static_cast<MilliGpu>(rng() % 6) * kMilliPerGpu;
    q.demand = static_cast<MilliGpu>(rng() % 61) * kMilliPerGpu;
    if (granularity == 1) q.demand += static_cast<MilliGpu>(rng() % kMilliPerGpu);
    if (rng() % 3 == 0) q.limit = static_cast<MilliGpu>(5 + rng() % 36) * kMilliPerGpu;
    demand += q.demand;
  }
  for (std::size_t i = t.queues.size(); i-- > 0;) {
    const policy::FairShareInput& q = t.queues[i];
    if (q.parent < 0) continue;
    policy::FairShareInput& p = t.queues[static_cast<std::size_t>(q.parent)];
    p.deserved += q.deserved;
    p.demand += q.demand;
  }
  for (policy::FairShareInput& q : t.queues) {
    const bool parent = q.limit == std::nullopt && q.demand > 0 && rng() % 3 == 0;
    if (parent && &q - t.queues.data() < 160) {
      q.limit = std::max(q.deserved, q.demand * static_cast<MilliGpu>(6 + rng() % 4) / 10 /
                                         kMilliPerGpu * kMilliPerGpu);
    }
  }
  t.capacity = demand * 6 / 10 / kMilliPerGpu * kMilliPerGpu;
  return t;
}

void BM_FairShareTree(benchmark::State& state) {
  const MilliGpu granularity = state.range(0);
  const Tree tree = buildTree(granularity);
  for (auto _ : state) {
    std::vector<MilliGpu> shares =
        policy::computeFairShares(tree.queues, tree.capacity, granularity);
    benchmark::DoNotOptimize(shares.data());
  }
  state.counters["queues"] = static_cast<double>(tree.queues.size());
  state.counters["capacity_gpus"] = static_cast<double>(tree.capacity / kMilliPerGpu);
}

// The same 1,000 queues with every parent link dropped (all top-level, limits and priorities
// kept): what the tree costs over flat water-filling of as many queues.
void BM_FairShareTreeFlattened(benchmark::State& state) {
  const MilliGpu granularity = state.range(0);
  Tree tree = buildTree(granularity);
  for (policy::FairShareInput& q : tree.queues) q.parent = -1;
  for (auto _ : state) {
    std::vector<MilliGpu> shares =
        policy::computeFairShares(tree.queues, tree.capacity, granularity);
    benchmark::DoNotOptimize(shares.data());
  }
}

BENCHMARK(BM_FairShareTree)->Arg(1000)->Arg(1)->ArgName("gran")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FairShareTreeFlattened)
    ->Arg(1000)
    ->Arg(1)
    ->ArgName("gran")
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufair
