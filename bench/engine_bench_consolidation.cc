// engine_bench, part three: the consolidation planner on a full, fragmented cluster.
// BM_ConsolidationPlan: policy::planConsolidation for a team-b pod of Arg gpus on N nodes x 8 GPUs
// with 30 pods per node (150,000 pods at 5,000 nodes). Every node has 1 to 3 GPUs free (so no
// node has 4, and about 10,000 GPUs are free in total at 5,000 nodes); the GPUs in use are 1- and
// 2-GPU pods of team-a and team-c, half of them labelled gpufair.io/movable with a Job as
// controller, 5% of team-c's movable pods in 2-pod gangs across nodes; the other pods need no
// GPU. Pods started 0..600 minutes ago; team-a has reclaimMinRuntime 10m. Built once per size.
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "gpufair/common/labels.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/consolidation.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/mirror.h"
#include "gpufair/state/mirror_evictor.h"

#include "consolidation_controller.h"
#include "engine_bench_cluster.h"

namespace {

using namespace gpufair;
using namespace gpufair::bench;

struct FragmentedCluster {
  policy::SnapshotPtr snapshot;
  policy::Pod waiting;
};

QuotaConfig consolidationQuota(int nodes) {
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
  queue("team-a", 45, 10);
  queue("team-b", 20, 0);
  queue("team-c", 35, 0);
  return quota;
}

policy::NodeStatePtr fragmentedNode(int i, std::mt19937& rng, int& seq, std::string& openGang,
                                    const QuotaConfig& quota) {
  constexpr int kPods = 30;
  const Timestamp now{std::chrono::seconds{1'700'000'000}};
  std::uniform_int_distribution<int> percent(0, 99);
  std::uniform_int_distribution<int> freeGpus(1, 3);
  std::uniform_int_distribution<int> startedAgo(0, 600);
  policy::Node node;
  node.name = nodeName(i);
  node.allocatable = kGpusPerNode * kMilliPerGpu;
  std::vector<policy::PodPtr> pods;
  int left = kGpusPerNode - freeGpus(rng);
  for (int p = 0; p < kPods; ++p) {
    int g = 0;
    if (left > 0) g = left >= 2 && percent(rng) < 50 ? 2 : 1;
    left -= g;
    const char* ns = percent(rng) < 55 ? "team-a" : "team-c";
    policy::Pod pod =
        makePod(ns, (g ? "train-" : "svc-") + std::to_string(seq++), g * kMilliPerGpu);
    pod.nodeName = node.name;
    pod.phase = policy::PodPhase::kRunning;
    pod.started = now - std::chrono::minutes{startedAgo(rng)};
    if (g > 0 && percent(rng) < 50) {
      pod.labels[kMovableLabel] = "true";
      pod.controller = "job-" + std::to_string(seq);
      if (pod.ns == std::string("team-c") && !openGang.empty()) {  // the gang's second member
        pod.labels[kGangLabel] = openGang;
        pod.annotations[kGangSizeAnnotation] = "2";
        openGang.clear();
      } else if (pod.ns == std::string("team-c") && percent(rng) < 5) {
        openGang = "gang-" + std::to_string(seq);
        pod.labels[kGangLabel] = openGang;
        pod.annotations[kGangSizeAnnotation] = "2";
      }
      policy::applyGangLabels(pod);
    }
    pod.queue = policy::resolveQueue(quota, pod.ns, pod.labels);
    pods.push_back(std::make_shared<const policy::Pod>(std::move(pod)));
  }
  return std::make_shared<const policy::NodeState>(std::move(node), std::move(pods), 1);
}

const FragmentedCluster& fragmentedCluster(int nodes, int gpus) {
  static std::map<std::pair<int, int>, std::unique_ptr<FragmentedCluster>> cache;
  auto& slot = cache[{nodes, gpus}];
  if (slot) return *slot;
  slot = std::make_unique<FragmentedCluster>();
  QuotaConfig quota = consolidationQuota(nodes);
  std::mt19937 rng(1616);
  std::vector<policy::NodeStatePtr> states;
  int seq = 0;
  std::string openGang;
  for (int i = 0; i < nodes; ++i) states.push_back(fragmentedNode(i, rng, seq, openGang, quota));
  policy::Pod waiting = makePod("team-b", "waiting", gpus * kMilliPerGpu);
  waiting.queue = policy::resolveQueue(quota, waiting.ns, waiting.labels);
  std::vector<policy::PodPtr> pending = {std::make_shared<const policy::Pod>(waiting)};
  slot->snapshot = std::make_shared<const policy::ClusterSnapshot>(
      std::move(states), std::move(pending), std::move(quota), 1);
  slot->waiting = std::move(waiting);
  return *slot;
}

void BM_ConsolidationPlan(benchmark::State& state) {
  const FragmentedCluster& c =
      fragmentedCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  policy::ConsolidationOptions options;
  options.now = Timestamp{std::chrono::seconds{1'700'000'000}};
  policy::ConsolidationOutcome out;
  for (auto _ : state) {
    out = policy::planConsolidation(*c.snapshot, c.waiting, options);
    benchmark::DoNotOptimize(out);
  }
  if (!out.plan) state.SkipWithError(("no plan: " + out.reason).c_str());
  state.counters["moves"] = out.plan ? static_cast<double>(out.plan->moves.size()) : 0;
  state.counters["moved_gpus"] =
      out.plan ? static_cast<double>(out.plan->movedGpus) / kMilliPerGpu : 0;
  std::size_t pods = 0;
  for (const auto& n : c.snapshot->nodes()) pods += n->pods().size();
  state.counters["pods"] = static_cast<double>(pods);
  state.counters["free_gpus"] = static_cast<double>(c.snapshot->free()) / kMilliPerGpu;
}

BENCHMARK(BM_ConsolidationPlan)
    ->Args({1000, 4})
    ->Args({5000, 4})
    ->Args({5000, 8})
    ->ArgNames({"nodes", "gpus"})
    ->Unit(benchmark::kMillisecond);

// BM_ConsolidationRound: one round of the consolidation loop (app::ConsolidationController::
// runOnce, dry run, reclaim off, over a Mirror) on the cluster above with `waiting` pending team-b
// pods of 8 GPUs. case 0: half the GPU pods are movable, so plans exist (the round stops after
// maxPlansPerRound); case 1: nothing is movable, so no pod can be served; case 2: as 0 plus one
// idle node listed last, so every pod fits already.
void BM_ConsolidationRound(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int waiting = static_cast<int>(state.range(1));
  const int kind = static_cast<int>(state.range(2));
  const FragmentedCluster& c = fragmentedCluster(nodes, 8);
  auto clock = std::make_shared<FixedClock>();
  state::Mirror mirror(clock);
  mirror.setQuotaConfig(c.snapshot->quotaConfig());
  std::vector<policy::Node> list;
  std::vector<policy::Pod> pods;
  for (const policy::NodeState* n : c.snapshot->nodes()) {
    list.push_back(n->node());
    for (const auto& p : n->pods()) {
      policy::Pod pod = *p;
      if (kind == 1) {
        pod.labels.erase(kMovableLabel);
        pod.overQuota = false;
      }
      pods.push_back(std::move(pod));
    }
  }
  if (kind == 2) {
    policy::Node idle;
    idle.name = "zz-idle-node";
    idle.allocatable = kGpusPerNode * kMilliPerGpu;
    list.push_back(std::move(idle));
  }
  for (int i = 0; i < waiting; ++i) {
    policy::Pod p = makePod("team-b", "waiting-" + std::to_string(i), 8 * kMilliPerGpu);
    p.created = clock->now() - std::chrono::seconds{waiting - i};
    pods.push_back(std::move(p));
  }
  mirror.replaceNodes(std::move(list));
  mirror.replacePods(std::move(pods));
  state::MirrorEvictor evictor(mirror);  // not called: dry run
  app::ConsolidationSettings settings;
  settings.enabled = true;
  settings.dryRun = true;
  settings.reclaimEnabled = false;
  app::ConsolidationController controller(mirror, evictor, clock, settings);
  app::ConsolidationRoundStats stats;
  for (auto _ : state) {
    stats = controller.runOnce();
    benchmark::DoNotOptimize(stats);
  }
  state.counters["fragmented"] = stats.fragmented;
  state.counters["planned"] = stats.planned;
}

BENCHMARK(BM_ConsolidationRound)
    ->Args({1000, 1000, 0})
    ->Args({1000, 1000, 1})
    ->Args({1000, 1000, 2})
    ->Args({5000, 2000, 1})
    ->ArgNames({"nodes", "waiting", "case"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
