#include "engine_bench_cluster.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <random>

#include "gpufair/policy/filter.h"

namespace gpufair::bench {

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
  pod.labels = {{"app", pod.name.substr(0, pod.name.find('-'))},
                {"pod-template-hash", "7d9f8c6b5"}};
  return pod;
}

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
      policy::Pod pod =
          makePod(ns, (gpus ? "train-" : "svc-") + std::to_string(podSeq++), gpus * kMilliPerGpu);
      pod.nodeName = c.names.back();
      pod.phase = policy::PodPhase::kRunning;
      pod.started = pod.created;
      if (gpus) c.gpuPods.push_back(pod);
      c.mirror->upsertPod(std::move(pod));
    }
    if (i % 50 == 0) {
      policy::Pod pending =
          makePod(namespaces[nsPick(rng)], "queued-" + std::to_string(podSeq++), kMilliPerGpu);
      c.mirror->upsertPod(std::move(pending));
    }
  }
  c.snapshot = c.mirror->snapshot();
  for (const auto& n : c.names) c.candidates.push_back(n);
  return c;
}

policy::Pod incoming(const Cluster& c, std::string ns, int gpus) {
  policy::Pod pod =
      makePod(std::move(ns), "job-" + std::to_string(gpus) + "gpu-0", gpus * kMilliPerGpu);
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

}  // namespace gpufair::bench
