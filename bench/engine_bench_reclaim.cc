// engine_bench, part two: the reclaim planner on a full cluster (see the comment below).
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
