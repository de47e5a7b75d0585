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
#include "gpufair/state/mirror_evictor.h"

#include "engine_bench_cluster.h"
#include "reclaim_controller.h"

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
// The cluster's objects as the Mirror would hold them. minRuntimeAll > 0 gives every queue that
// reclaimMinRuntime (minutes), longer than any pod has run: nothing may be evicted.
struct ReclaimWorld {
  std::vector<policy::Node> nodes;
  std::vector<policy::Pod> running;
  QuotaConfig quota;
};

ReclaimWorld reclaimWorld(int nodes, int minRuntimeAll) {
  ReclaimWorld w;
  constexpr int kPods = 30;
  const Timestamp now{std::chrono::seconds{1'700'000'000}};
  const MilliGpu c = static_cast<MilliGpu>(nodes) * kGpusPerNode * kMilliPerGpu;
  auto queue = [&](std::string name, int percent, int minRuntimeMinutes) {
    QueueQuota q;
    q.name = name;
    q.namespaces = {name};
    q.gpu.deserved = c * percent / 100 / kMilliPerGpu * kMilliPerGpu;
    q.reclaimMinRuntime =
        std::chrono::minutes{minRuntimeAll > 0 ? minRuntimeAll : minRuntimeMinutes};
    w.quota.queues.push_back(q);
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
  w.nodes.reserve(static_cast<std::size_t>(nodes));
  w.running.reserve(static_cast<std::size_t>(nodes) * kPods);
  int seq = 0;
  std::string openGang;  // a team-c gang waiting for its second member
  for (int i = 0; i < nodes; ++i) {
    policy::Node node;
    node.name = nodeName(i);
    node.allocatable = kGpusPerNode * kMilliPerGpu;
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
      pod.queue = policy::resolveQueue(w.quota, pod.ns, pod.labels);
      w.running.push_back(std::move(pod));
    }
    w.nodes.push_back(std::move(node));
  }
  return w;
}

struct ReclaimBenchCluster {
  policy::SnapshotPtr snapshot;
  policy::Pod reclaimer;
};

const ReclaimBenchCluster& reclaimCluster(int nodes, int gpus) {
  static std::map<std::pair<int, int>, std::unique_ptr<ReclaimBenchCluster>> cache;
  auto& slot = cache[{nodes, gpus}];
  if (slot) return *slot;
  slot = std::make_unique<ReclaimBenchCluster>();
  ReclaimWorld w = reclaimWorld(nodes, 0);
  std::map<std::string, std::vector<policy::PodPtr>> byNode;
  for (auto& pod : w.running) {
    std::string node = pod.nodeName;
    byNode[node].push_back(std::make_shared<const policy::Pod>(std::move(pod)));
  }
  std::vector<policy::NodeStatePtr> states;
  states.reserve(w.nodes.size());
  for (auto& node : w.nodes) {
    auto pods = std::move(byNode[node.name]);
    states.push_back(
        std::make_shared<const policy::NodeState>(std::move(node), std::move(pods), 1));
  }
  policy::Pod reclaimer = makePod("team-b", "reclaimer", gpus * kMilliPerGpu);
  reclaimer.queue = policy::resolveQueue(w.quota, reclaimer.ns, reclaimer.labels);
  std::vector<policy::PodPtr> pending = {std::make_shared<const policy::Pod>(reclaimer)};
  slot->snapshot = std::make_shared<const policy::ClusterSnapshot>(
      std::move(states), std::move(pending), std::move(w.quota), 1);
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

// BM_ReclaimRound: one round of the reclaim loop (app::ReclaimController::runOnce, dry run, over a
// Mirror) with `owed` pending team-b pods of 4 GPUs, all owed by team-b's deserved quota, on the
// cluster above. case 0: victims exist (the round stops after maxReclaimsPerRound plans);
// case 1: every queue's reclaimMinRuntime outlasts its pods, so no plan exists for any pod;
// case 2: as 0 plus one idle node listed last, so every pod fits and needs no reclaim.
void BM_ReclaimRound(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int owed = static_cast<int>(state.range(1));
  const int kind = static_cast<int>(state.range(2));
  ReclaimWorld w = reclaimWorld(nodes, kind == 1 ? 100'000 : 0);
  if (kind == 2) {
    policy::Node idle;
    idle.name = "zz-idle-node";
    idle.allocatable = kGpusPerNode * kMilliPerGpu;
    w.nodes.push_back(std::move(idle));
  }
  auto clock = std::make_shared<FixedClock>();
  state::Mirror mirror(clock);
  mirror.setQuotaConfig(w.quota);
  mirror.replaceNodes(std::move(w.nodes));
  std::vector<policy::Pod> pods = std::move(w.running);
  for (int i = 0; i < owed; ++i) {
    policy::Pod p = makePod("team-b", "waiting-" + std::to_string(i), 4 * kMilliPerGpu);
    p.created = clock->now() - std::chrono::seconds{owed - i};
    pods.push_back(std::move(p));
  }
  mirror.replacePods(std::move(pods));
  state::MirrorEvictor evictor(mirror);  // not called: dry run
  app::ReclaimSettings settings;
  settings.dryRun = true;
  app::ReclaimController controller(mirror, evictor, clock, settings);
  app::ReclaimRoundStats stats;
  for (auto _ : state) {
    stats = controller.runOnce();
    benchmark::DoNotOptimize(stats);
  }
  state.counters["owed"] = stats.owed;
  state.counters["planned"] = stats.planned;
  state.counters["waiting"] = stats.waiting;
}

BENCHMARK(BM_ReclaimRound)
    ->Args({1000, 1000, 0})
    ->Args({1000, 1000, 1})
    ->Args({1000, 1000, 2})
    ->Args({5000, 2000, 1})
    ->Args({5000, 2000, 2})
    ->ArgNames({"nodes", "owed", "case"})
    ->Unit(benchmark::kMillisecond);
// ---- end of reclaim plan ---------------------------------------------------------------------

}  // namespace
