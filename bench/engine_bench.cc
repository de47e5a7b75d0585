// engine_bench: what one /filter + /prioritize costs in the engine alone (no HTTP, no JSON), and
// what publishing a new snapshot costs after one change.
//
// Cluster (deterministic, seed 42): N nodes with 8 GPUs each, 20 bound Running pods per node. Each
// node gets a target of 0..8 used GPUs (uniform), filled with pods of 4, 2 and 1 GPUs; the other
// pods request no GPU. 1% of nodes are cordoned. Pods are spread over namespaces team-a..team-d
// (one queue each) and `research` (default queue). One pending 1-GPU pod per 50 nodes gives the
// queues pending demand. Quotas (C = cluster GPUs): team-a deserved 0.30C limit 0.50C, team-b
// 0.25C, team-c 0.20C limit 0.30C, team-d 0.05C (so team-d is over deserved and borrows); default
// queue deserved 0.
//
// Benchmarks (Arg order: nodes, pod GPUs):
//   BM_FilterPrioritize   policy::filter over all node names, then policy::prioritize (blockfit)
//   over
//                         the feasible ones, as kube-scheduler calls them. The target is < 1 ms at
//                         5,000.
//   BM_Filter             filter alone.
//   BM_PrioritizeAll      prioritize over all node names (prioritize re-checks fit itself).
//   BM_FindNodes          findNode for every name + read free(): the lookup floor of filter.
//   BM_ExperimentFlatIndexFind  the same lookups in a flat, contiguous index (an experiment, not
//                         gpufair code): what a cache-friendly snapshot index would cost.
//   BM_FilterPrioritizeBorrow  the same as BM_FilterPrioritize for a team-d pod (borrowing path).
//   BM_SnapshotAfterPodChange  Mirror::upsertPod of one bound pod (Running <-> Succeeded) and then
//                         Mirror::snapshot(): one dirty node rebuilt, the rest shared.
//   BM_SnapshotAfterNotePending  Mirror::notePending of a new pending pod (what /filter does for
//   each
//                         new pod) and then Mirror::snapshot().
//   BM_FilterRequestPath  notePending(the same pod again) + snapshot() + filter: the engine-side
//   work
//                         of one /filter request as src/api does it.
//   BM_SnapshotFull       Mirror::setQuotaConfig (marks everything dirty) and then
//   Mirror::snapshot(). BM_FairShare          policy::computeFairShares over N queues (seed 42):
//   deserved 0..20 GPUs,
//                         demand 0..60, weights 1..4, a third with a limit of 5..40; capacity 60%
//                         of all demand, so most queues borrow and several caps saturate. Arg gran:
//                         1000 (whole GPUs) or 1 (milli-GPUs, demands with fractions). The target
//                         is < 1 ms at 1,000 queues. The snapshot computes it on every build.
//
// BM_ReclaimPlan is in engine_bench_reclaim.cc; the shared cluster in engine_bench_cluster.h.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "gpufair/common/clock.h"
#include "gpufair/common/labels.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/reclaim.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/mirror.h"

#include "engine_bench_cluster.h"

namespace {

using namespace gpufair;
using namespace gpufair::bench;

void filterPrioritize(benchmark::State& state, const char* ns) {
  const Cluster& c = cluster(static_cast<int>(state.range(0)));
  const policy::Pod pod = incoming(c, ns, static_cast<int>(state.range(1)));
  const policy::Scorer& s = scorer();
  for (auto _ : state) {
    policy::FilterResult r = policy::filter(*c.snapshot, pod, c.candidates);
    std::vector<policy::NodeScore> scores = policy::prioritize(*c.snapshot, pod, r.feasible, s);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(scores);
  }
  countersFor(state, c, pod);
}

void BM_FilterPrioritize(benchmark::State& state) {
  filterPrioritize(state, "team-a");
}
void BM_FilterPrioritizeBorrow(benchmark::State& state) {
  filterPrioritize(state, "team-d");
}

void BM_Filter(benchmark::State& state) {
  const Cluster& c = cluster(static_cast<int>(state.range(0)));
  const policy::Pod pod = incoming(c, "team-a", static_cast<int>(state.range(1)));
  for (auto _ : state) {
    policy::FilterResult r = policy::filter(*c.snapshot, pod, c.candidates);
    benchmark::DoNotOptimize(r);
  }
  countersFor(state, c, pod);
}

void BM_PrioritizeAll(benchmark::State& state) {
  const Cluster& c = cluster(static_cast<int>(state.range(0)));
  const policy::Pod pod = incoming(c, "team-a", static_cast<int>(state.range(1)));
  const policy::Scorer& s = scorer();
  for (auto _ : state) {
    std::vector<policy::NodeScore> scores = policy::prioritize(*c.snapshot, pod, c.candidates, s);
    benchmark::DoNotOptimize(scores);
  }
  countersFor(state, c, pod);
}

// The lookup part of filter alone: ClusterSnapshot::findNode for every candidate name and a read of
// the node's free GPUs (no Status, no strings). The rest of BM_Filter is fit checks and reasons.
void BM_FindNodes(benchmark::State& state) {
  const Cluster& c = cluster(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    MilliGpu sum = 0;
    for (std::string_view name : c.candidates) {
      const policy::NodeState* node = c.snapshot->findNode(name);
      if (node != nullptr) sum += node->free();
    }
    benchmark::DoNotOptimize(sum);
  }
}

// Layout experiment, not gpufair code: the same lookups as BM_FindNodes against a flat, contiguous
// index (open addressing over {hash, slot}, names in one arena, free/allocatable/flags in one
// array) built from the snapshot. Shows what a cache-friendly ClusterSnapshot index would cost.
struct FlatIndex {
  struct Entry {
    std::size_t hash = 0;
    std::uint32_t slot = UINT32_MAX;
  };
  struct Hot {
    MilliGpu free;
    MilliGpu allocatable;
    bool takesNewPods;
  };
  std::vector<Entry> table;
  std::vector<std::uint32_t> nameStart;
  std::string arena;
  std::vector<Hot> hot;
  std::size_t mask = 0;

  explicit FlatIndex(const policy::ClusterSnapshot& snap) {
    std::size_t cap = 1;
    while (cap < snap.nodes().size() * 2) cap *= 2;
    table.resize(cap);
    mask = cap - 1;
    for (const auto& n : snap.nodes()) {
      const auto slot = static_cast<std::uint32_t>(hot.size());
      nameStart.push_back(static_cast<std::uint32_t>(arena.size()));
      arena += n->name();
      hot.push_back({n->free(), n->allocatable(), n->node().takesNewPods()});
      const std::size_t h = std::hash<std::string_view>{}(n->name());
      std::size_t i = h & mask;
      while (table[i].slot != UINT32_MAX) i = (i + 1) & mask;
      table[i] = {h, slot};
    }
    nameStart.push_back(static_cast<std::uint32_t>(arena.size()));
  }
  const Hot* find(std::string_view name) const {
    const std::size_t h = std::hash<std::string_view>{}(name);
    for (std::size_t i = h & mask; table[i].slot != UINT32_MAX; i = (i + 1) & mask) {
      if (table[i].hash != h) continue;
      const std::uint32_t s = table[i].slot;
      if (std::string_view(arena).substr(nameStart[s], nameStart[s + 1] - nameStart[s]) == name) {
        return &hot[s];
      }
    }
    return nullptr;
  }
};

void BM_ExperimentFlatIndexFind(benchmark::State& state) {
  const Cluster& c = cluster(static_cast<int>(state.range(0)));
  const FlatIndex index(*c.snapshot);
  for (auto _ : state) {
    MilliGpu sum = 0;
    for (std::string_view name : c.candidates) {
      const FlatIndex::Hot* node = index.find(name);
      if (node != nullptr) sum += node->free;
    }
    benchmark::DoNotOptimize(sum);
  }
}

// These change the shared mirror; they run after the engine benchmarks and leave c.snapshot
// current. The steps are out of line so a profiler can collect them alone, e.g.
//   valgrind --tool=callgrind --toggle-collect='*podChangeStep*' engine_bench
//   --benchmark_filter=...
[[gnu::noinline]] void podChangeStep(Cluster& c, std::size_t i, bool finished) {
  policy::Pod pod = c.gpuPods[i];
  pod.phase = finished ? policy::PodPhase::kSucceeded : policy::PodPhase::kRunning;
  c.mirror->upsertPod(std::move(pod));
  policy::SnapshotPtr snap = c.mirror->snapshot();
  benchmark::DoNotOptimize(snap);
}

[[gnu::noinline]] void notePendingStep(Cluster& c, int seq) {
  c.mirror->notePending(makePod("team-b", "offered-" + std::to_string(seq), kMilliPerGpu));
  policy::SnapshotPtr snap = c.mirror->snapshot();
  benchmark::DoNotOptimize(snap);
}

void BM_SnapshotAfterPodChange(benchmark::State& state) {
  Cluster& c = cluster(static_cast<int>(state.range(0)));
  std::size_t i = 0;
  bool finished = true;
  for (auto _ : state) {
    podChangeStep(c, i, finished);
    if (++i == c.gpuPods.size()) {
      i = 0;
      finished = !finished;
    }
  }
  c.snapshot = c.mirror->snapshot();
}

void BM_SnapshotAfterNotePending(benchmark::State& state) {
  Cluster& c = cluster(static_cast<int>(state.range(0)));
  int seq = 0;
  for (auto _ : state) {
    notePendingStep(c, seq++ % 1000);
  }
  c.snapshot = c.mirror->snapshot();
}

// What ExtenderService::filter does per request besides JSON: Mirror::notePending(pod) (the same
// pod offered again), Mirror::snapshot(), then policy::filter. Compare with BM_Filter.
void BM_FilterRequestPath(benchmark::State& state) {
  Cluster& c = cluster(static_cast<int>(state.range(0)));
  policy::Pod pod = incoming(c, "team-a", static_cast<int>(state.range(1)));
  for (auto _ : state) {
    c.mirror->notePending(pod);
    policy::SnapshotPtr snap = c.mirror->snapshot();
    policy::FilterResult r = policy::filter(*snap, pod, c.candidates);
    benchmark::DoNotOptimize(r);
  }
  c.snapshot = c.mirror->snapshot();
}

void BM_SnapshotFull(benchmark::State& state) {
  Cluster& c = cluster(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    c.mirror->setQuotaConfig(c.quota);
    policy::SnapshotPtr snap = c.mirror->snapshot();
    benchmark::DoNotOptimize(snap);
  }
  c.snapshot = c.mirror->snapshot();
}

void BM_FairShare(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const MilliGpu granularity = state.range(1);
  std::mt19937_64 rng(42);
  std::vector<std::string> names(count);
  std::vector<policy::FairShareInput> queues(count);
  MilliGpu demand = 0;
  for (std::size_t i = 0; i < count; ++i) {
    char name[24];
    std::snprintf(name, sizeof name, "team-%05zu", i);
    names[i] = name;
    policy::FairShareInput& q = queues[i];
    q.name = names[i];
    q.deserved = static_cast<MilliGpu>(rng() % 21) * kMilliPerGpu;
    q.demand = static_cast<MilliGpu>(rng() % 61) * kMilliPerGpu;
    if (granularity == 1) q.demand += static_cast<MilliGpu>(rng() % kMilliPerGpu);
    q.overQuotaWeight = static_cast<double>(1 + rng() % 4);
    if (rng() % 3 == 0) q.limit = static_cast<MilliGpu>(5 + rng() % 36) * kMilliPerGpu;
    demand += q.demand;
  }
  const MilliGpu capacity = demand * 6 / 10 / kMilliPerGpu * kMilliPerGpu;
  for (auto _ : state) {
    std::vector<MilliGpu> shares = policy::computeFairShares(queues, capacity, granularity);
    benchmark::DoNotOptimize(shares.data());
  }
  state.counters["capacity_gpus"] = static_cast<double>(capacity / kMilliPerGpu);
}

void engineArgs(benchmark::internal::Benchmark* b) {
  for (int nodes : {100, 1000, 5000}) {
    for (int gpus : {1, 4}) b->Args({nodes, gpus});
  }
  b->ArgNames({"nodes", "gpus"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_FilterPrioritize)->Apply(engineArgs);
BENCHMARK(BM_Filter)->Apply(engineArgs);
BENCHMARK(BM_PrioritizeAll)->Apply(engineArgs);
BENCHMARK(BM_FindNodes)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->ArgName("nodes")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExperimentFlatIndexFind)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->ArgName("nodes")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterPrioritizeBorrow)
    ->Args({5000, 1})
    ->ArgNames({"nodes", "gpus"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotAfterPodChange)
    ->Arg(1000)
    ->Arg(5000)
    ->ArgName("nodes")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotAfterNotePending)
    ->Arg(1000)
    ->Arg(5000)
    ->ArgName("nodes")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterRequestPath)
    ->Args({1000, 1})
    ->Args({5000, 1})
    ->ArgNames({"nodes", "gpus"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotFull)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FairShare)
    ->Args({10, 1000})
    ->Args({100, 1000})
    ->Args({1000, 1000})
    ->Args({1000, 1})
    ->Args({10000, 1000})
    ->ArgNames({"queues", "gran"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
