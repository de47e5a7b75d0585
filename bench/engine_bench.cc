// engine_bench: what one /filter + /prioritize costs in the engine alone (no HTTP, no JSON), and what
// publishing a new snapshot costs after one change.
//
// Cluster (deterministic, seed 42): N nodes with 8 GPUs each, 20 bound Running pods per node. Each
// node gets a target of 0..8 used GPUs (uniform), filled with pods of 4, 2 and 1 GPUs; the other pods
// request no GPU. 1% of nodes are cordoned. Pods are spread over namespaces team-a..team-d (one queue
// each) and `research` (default queue). One pending 1-GPU pod per 50 nodes gives the queues pending
// demand. Quotas (C = cluster GPUs): team-a deserved 0.30C limit 0.50C, team-b 0.25C, team-c 0.20C
// limit 0.30C, team-d 0.05C (so team-d is over deserved and borrows); default queue deserved 0.
//
// Benchmarks (Arg order: nodes, pod GPUs):
//   BM_FilterPrioritize   policy::filter over all node names, then policy::prioritize (blockfit) over
//                         the feasible ones, as kube-scheduler calls them. The target is < 1 ms at 5,000.
//   BM_Filter             filter alone.
//   BM_PrioritizeAll      prioritize over all node names (prioritize re-checks fit itself).
//   BM_FindNodes          findNode for every name + read free(): the lookup floor of filter.
//   BM_ExperimentFlatIndexFind  the same lookups in a flat, contiguous index (an experiment, not
//                         gpufair code): what a cache-friendly snapshot index would cost.
//   BM_FilterPrioritizeBorrow  the same as BM_FilterPrioritize for a team-d pod (borrowing path).
//   BM_SnapshotAfterPodChange  Mirror::upsertPod of one bound pod (Running <-> Succeeded) and then
//                         Mirror::snapshot(): one dirty node rebuilt, the rest shared.
//   BM_SnapshotAfterNotePending  Mirror::notePending of a new pending pod (what /filter does for each
//                         new pod) and then Mirror::snapshot().
//   BM_FilterRequestPath  notePending(the same pod again) + snapshot() + filter: the engine-side work
//                         of one /filter request as src/api does it.
//   BM_SnapshotFull       Mirror::setQuotaConfig (marks everything dirty) and then Mirror::snapshot().
//   BM_FairShare          policy::computeFairShares over N queues (seed 42): deserved 0..20 GPUs,
//                         demand 0..60, weights 1..4, a third with a limit of 5..40; capacity 60% of
//                         all demand, so most queues borrow and several caps saturate. Arg gran:
//                         1000 (whole GPUs) or 1 (milli-GPUs, demands with fractions). The target
//                         is < 1 ms at 1,000 queues. The snapshot computes it on every build.
#include <benchmark/benchmark.h>

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

namespace {

using namespace gpufair;


constexpr int kGpusPerNode = 8;
constexpr int kPodsPerNode = 20;

class FixedClock final : public Clock {
 public:
  Timestamp now() const override { return Timestamp{std::chrono::seconds{1'700'000'000}}; }
};

std::string nodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "gpu-node-%05d", i);
  return buf;
}

QuotaConfig makeQuota(int nodes) {
  const MilliGpu c = static_cast<MilliGpu>(nodes) * kGpusPerNode * kMilliPerGpu;
  auto q = [](std::string name, MilliGpu deserved, std::optional<MilliGpu> limit) {
    QueueQuota quota;
    quota.name = name;
    quota.namespaces = {name, name + "-dev"};
    quota.gpu.deserved = deserved / kMilliPerGpu * kMilliPerGpu;
    if (limit) quota.gpu.limit = *limit / kMilliPerGpu * kMilliPerGpu;
    quota.gpu.overQuotaWeight = 1;
    quota.reclaimMinRuntime = std::chrono::minutes{10};
    return quota;
  };
  QuotaConfig config;
  config.queues.push_back(q("team-a", c * 30 / 100, c * 50 / 100));
  config.queues.push_back(q("team-b", c * 25 / 100, std::nullopt));
  config.queues.push_back(q("team-c", c * 20 / 100, c * 30 / 100));
  config.queues.push_back(q("team-d", c * 5 / 100, std::nullopt));
  config.defaultQueue.gpu.deserved = 0;
  return config;
}

policy::Pod makePod(std::string ns, std::string name, MilliGpu gpus) {
  policy::Pod pod;
  pod.ns = std::move(ns);
  pod.name = std::move(name);
  pod.uid = "uid-" + pod.ns + "-" + pod.name;
  pod.schedulerName = "gpufair";
  pod.gpus = gpus;
  pod.created = Timestamp{std::chrono::seconds{1'699'990'000}};
  pod.labels = {{"app", pod.name.substr(0, pod.name.find('-'))}, {"pod-template-hash", "7d9f8c6b5"}};
  return pod;
}

struct Cluster {
  int nodes = 0;
  std::unique_ptr<state::Mirror> mirror;
  policy::SnapshotPtr snapshot;
  std::vector<std::string> names;
  std::vector<std::string_view> candidates;
  std::vector<policy::Pod> gpuPods;  // bound pods with GPUs, to change one at a time
  QuotaConfig quota;
};

Cluster& cluster(int nodes) {
  static std::map<int, std::unique_ptr<Cluster>> cache;
  auto& slot = cache[nodes];
  if (slot) return *slot;
  slot = std::make_unique<Cluster>();
  Cluster& c = *slot;
  c.nodes = nodes;
  c.mirror = std::make_unique<state::Mirror>(std::make_shared<FixedClock>());
  c.quota = makeQuota(nodes);
  c.mirror->setQuotaConfig(c.quota);

  std::mt19937 rng(42);
  const char* namespaces[] = {"team-a", "team-b", "team-c", "team-d", "research"};
  std::uniform_int_distribution<int> nsPick(0, 4);
  std::uniform_int_distribution<int> target(0, kGpusPerNode);
  std::uniform_int_distribution<int> sizePick(0, 2);
  const int sizes[] = {4, 2, 1};
  int podSeq = 0;
  for (int i = 0; i < nodes; ++i) {
    policy::Node node;
    node.name = nodeName(i);
    node.allocatable = kGpusPerNode * kMilliPerGpu;
    node.unschedulable = i % 100 == 99;
    node.labels = {{"kubernetes.io/hostname", node.name},
                   {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                   {"topology.kubernetes.io/zone", i % 2 ? "zone-b" : "zone-a"}};
    c.names.push_back(node.name);
    c.mirror->upsertNode(std::move(node));

    int left = target(rng);
    for (int p = 0; p < kPodsPerNode; ++p) {
      int gpus = 0;
      if (left > 0) {
        gpus = sizes[sizePick(rng)];
        while (gpus > left) gpus /= 2;
        left -= gpus;
      }
      const char* ns = namespaces[nsPick(rng)];
      policy::Pod pod = makePod(ns, (gpus ? "train-" : "svc-") + std::to_string(podSeq++), gpus * kMilliPerGpu);
      pod.nodeName = c.names.back();
      pod.phase = policy::PodPhase::kRunning;
      pod.started = pod.created;
      if (gpus) c.gpuPods.push_back(pod);
      c.mirror->upsertPod(std::move(pod));
    }
    if (i % 50 == 0) {
      policy::Pod pending = makePod(namespaces[nsPick(rng)], "queued-" + std::to_string(podSeq++), kMilliPerGpu);
      c.mirror->upsertPod(std::move(pending));
    }
  }
  c.snapshot = c.mirror->snapshot();
  for (const auto& n : c.names) c.candidates.push_back(n);
  return c;
}

// The pod being scheduled; queue resolved as the Mirror would.
policy::Pod incoming(const Cluster& c, std::string ns, int gpus) {
  policy::Pod pod = makePod(std::move(ns), "job-" + std::to_string(gpus) + "gpu-0", gpus * kMilliPerGpu);
  pod.queue = policy::resolveQueue(c.quota, pod.ns, pod.labels);
  return pod;
}

const policy::Scorer& scorer() {
  static const policy::ScorerPtr s = policy::makeScorer(policy::kDefaultScorer);
  return *s;
}

void countersFor(benchmark::State& state, const Cluster& c, const policy::Pod& pod) {
  const auto r = policy::filter(*c.snapshot, pod, c.candidates);
  state.counters["feasible"] = static_cast<double>(r.feasible.size());
  state.counters["failed"] = static_cast<double>(r.failed.size() + r.unresolvable.size());
  state.counters["admitted"] = r.admission.status.isOk() ? 1 : 0;
  state.counters["borrowed"] = r.admission.overQuota ? 1 : 0;
}

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

void BM_FilterPrioritize(benchmark::State& state) { filterPrioritize(state, "team-a"); }
void BM_FilterPrioritizeBorrow(benchmark::State& state) { filterPrioritize(state, "team-d"); }

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
// index (open addressing over {hash, slot}, names in one arena, free/allocatable/flags in one array)
// built from the snapshot. Shows what a cache-friendly ClusterSnapshot index would cost.
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

// These change the shared mirror; they run after the engine benchmarks and leave c.snapshot current.
// The steps are out of line so a profiler can collect them alone, e.g.
//   valgrind --tool=callgrind --toggle-collect='*podChangeStep*' engine_bench --benchmark_filter=...
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

// What ExtenderService::filter does per request besides JSON: Mirror::notePending(pod) (the same pod
// offered again), Mirror::snapshot(), then policy::filter. Compare with BM_Filter.
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
BENCHMARK(BM_FindNodes)->Arg(100)->Arg(1000)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExperimentFlatIndexFind)->Arg(100)->Arg(1000)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterPrioritizeBorrow)->Args({5000, 1})->ArgNames({"nodes", "gpus"})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotAfterPodChange)->Arg(1000)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotAfterNotePending)->Arg(1000)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterRequestPath)->Args({1000, 1})->Args({5000, 1})->ArgNames({"nodes", "gpus"})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SnapshotFull)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FairShare)
    ->Args({10, 1000})
    ->Args({100, 1000})
    ->Args({1000, 1000})
    ->Args({1000, 1})
    ->Args({10000, 1000})
    ->ArgNames({"queues", "gran"})
    ->Unit(benchmark::kMicrosecond);

// ---- Reclaim plan (issue 4) ------------------------------------------------------------------
// BM_ReclaimPlan: policy::planReclaim for a team-b pod on a full cluster of N nodes x 8 GPUs with
// 30 pods per node (150,000 pods at 5,000 nodes). Every GPU is used: team-a (deserved 25%) holds
// ~40% and team-c (deserved 20%) ~35%, about 40% of their pods labelled borrowed; team-b
// (deserved 35%) holds ~10% and team-d (20%) ~15%. Pods started 0..600 minutes ago; team-a has
// reclaimMinRuntime 10m; 5% of team-c's borrowed pods are 2-pod gangs across nodes. The reclaimer
// (team-b, Arg gpus) is pending. Self-contained: its own cluster, built once per size.
struct ReclaimBenchCluster {
  policy::SnapshotPtr snapshot;
  policy::Pod reclaimer;
};

const ReclaimBenchCluster& reclaimCluster(int nodes, int gpus) {
  static std::map<std::pair<int, int>, std::unique_ptr<ReclaimBenchCluster>> cache;
  auto& slot = cache[{nodes, gpus}];
  if (slot) return *slot;
  slot = std::make_unique<ReclaimBenchCluster>();
  constexpr int kPods = 30;
  const Timestamp now{std::chrono::seconds{1'700'000'000}};
  const MilliGpu c = static_cast<MilliGpu>(nodes) * kGpusPerNode * kMilliPerGpu;
  QuotaConfig quota;
  auto queue = [&](std::string name, int percent, int minRuntimeMinutes) {
    QueueQuota q;
    q.name = name;
    q.namespaces = {name};
    q.gpu.deserved = c * percent / 100 / kMilliPerGpu * kMilliPerGpu;
    q.reclaimMinRuntime = std::chrono::minutes{minRuntimeMinutes};
    quota.queues.push_back(q);
  };
  queue("team-a", 25, 10);
  queue("team-b", 35, 0);
  queue("team-c", 20, 0);
  queue("team-d", 20, 0);

  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> percent(0, 99);
  std::uniform_int_distribution<int> sizePick(0, 2);
  std::uniform_int_distribution<int> startedAgo(0, 600);
  const int sizes[] = {4, 2, 1};
  std::vector<policy::NodeStatePtr> states;
  states.reserve(static_cast<std::size_t>(nodes));
  int seq = 0;
  std::string openGang;  // a team-c gang waiting for its second member
  for (int i = 0; i < nodes; ++i) {
    policy::Node node;
    node.name = nodeName(i);
    node.allocatable = kGpusPerNode * kMilliPerGpu;
    std::vector<policy::PodPtr> pods;
    int left = kGpusPerNode;
    for (int p = 0; p < kPods; ++p) {
      int g = 0;
      if (left > 0) {
        g = sizes[sizePick(rng)];
        while (g > left) g /= 2;
        left -= g;
      }
      const int roll = percent(rng);
      const char* ns = roll < 40   ? "team-a"
                       : roll < 75 ? "team-c"
                       : roll < 85 ? "team-b"
                                   : "team-d";
      policy::Pod pod =
          makePod(ns, (g ? "train-" : "svc-") + std::to_string(seq++), g * kMilliPerGpu);
      pod.nodeName = node.name;
      pod.phase = policy::PodPhase::kRunning;
      pod.started = now - std::chrono::minutes{startedAgo(rng)};
      const bool over = (pod.ns == "team-a" || pod.ns == "team-c") && percent(rng) < 40;
      if (g > 0 && over) {
        pod.overQuota = true;
        pod.labels[kOverQuotaLabel] = "true";
        if (pod.ns == "team-c" && !openGang.empty()) {  // the gang's second member
          pod.labels[kGangLabel] = openGang;
          openGang.clear();
        } else if (pod.ns == "team-c" && percent(rng) < 5) {
          openGang = "gang-" + std::to_string(seq);
          pod.labels[kGangLabel] = openGang;
        }
        pod.annotations[kGangSizeAnnotation] = "2";
        policy::applyGangLabels(pod);
      }
      pod.queue = policy::resolveQueue(quota, pod.ns, pod.labels);
      pods.push_back(std::make_shared<const policy::Pod>(std::move(pod)));
    }
    states.push_back(
        std::make_shared<const policy::NodeState>(std::move(node), std::move(pods), 1));
  }
  policy::Pod reclaimer = makePod("team-b", "reclaimer", gpus * kMilliPerGpu);
  reclaimer.queue = policy::resolveQueue(quota, reclaimer.ns, reclaimer.labels);
  std::vector<policy::PodPtr> pending = {std::make_shared<const policy::Pod>(reclaimer)};
  slot->snapshot = std::make_shared<const policy::ClusterSnapshot>(
      std::move(states), std::move(pending), std::move(quota), 1);
  slot->reclaimer = std::move(reclaimer);
  return *slot;
}

void BM_ReclaimPlan(benchmark::State& state) {
  const ReclaimBenchCluster& c =
      reclaimCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  policy::ReclaimOptions options;
  options.now = Timestamp{std::chrono::seconds{1'700'000'000}};
  policy::ReclaimOutcome out;
  for (auto _ : state) {
    out = policy::planReclaim(*c.snapshot, c.reclaimer, options);
    benchmark::DoNotOptimize(out);
  }
  state.counters["planned"] = out.plan ? 1 : 0;
  state.counters["victims"] = out.plan ? static_cast<double>(out.plan->victims.size()) : 0;
  std::size_t pods = 0;
  for (const auto& n : c.snapshot->nodes()) pods += n->pods().size();
  state.counters["pods"] = static_cast<double>(pods);
  std::size_t gangPods = 0;
  for (const auto& n : c.snapshot->nodes()) {
    for (const auto& p : n->pods()) gangPods += p->inGang() ? 1 : 0;
  }
  state.counters["gang_pods"] = static_cast<double>(gangPods);
}

BENCHMARK(BM_ReclaimPlan)
    ->Args({1000, 4})
    ->Args({5000, 4})
    ->Args({5000, 8})
    ->ArgNames({"nodes", "gpus"})
    ->Unit(benchmark::kMillisecond);
// ---- end of reclaim plan ---------------------------------------------------------------------

}  // namespace

BENCHMARK_MAIN();
