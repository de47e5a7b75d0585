#include "gpufair/sim/scenario.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "gpufair/common/labels.h"
#include "gpufair/config/cluster_file.h"

namespace gpufair::sim {
namespace {

constexpr std::int64_t kBytesPerMib = 1024 * 1024;
constexpr const char* kSimNamespace = "sim";

void sortNodes(std::vector<policy::Node>& nodes) {
  std::sort(nodes.begin(), nodes.end(),
            [](const policy::Node& a, const policy::Node& b) { return a.name < b.name; });
}

}  // namespace

MilliGpu Scenario::gpuCapacity() const {
  MilliGpu total = 0;
  for (const auto& n : nodes) total += n.allocatable;
  return total;
}

std::vector<MilliGpu> Scenario::templateRequests() const {
  std::vector<MilliGpu> out;
  out.reserve(templates.size());
  for (const auto& p : templates) out.push_back(p.gpus);
  return out;
}

policy::Node toNode(const NodeRow& row) {
  policy::Node n;
  n.name = row.name;
  n.allocatable = static_cast<MilliGpu>(row.gpus) * kMilliPerGpu;
  n.gpuModel = row.model;
  if (!row.model.empty()) n.labels[kGpuProductLabel] = row.model;
  n.cpuMilli = row.cpuMilli;
  n.memoryBytes = row.memoryMib * kBytesPerMib;
  return n;
}

policy::Pod toPod(const PodRow& row) {
  policy::Pod p;
  p.ns = kSimNamespace;
  p.name = row.name;
  p.uid = std::string(kSimNamespace) + "/" + row.name;
  if (row.sharesGpu()) {
    p.setGpuShare(row.gpuMilli);
  } else {
    p.setWholeGpus(row.numGpu);
  }
  p.gpuModels = row.gpuModels;
  p.cpuMilli = row.cpuMilli;
  p.memoryBytes = row.memoryMib * kBytesPerMib;
  p.queue = kDefaultQueueName;
  return p;
}

Result<Scenario> scenarioFromRows(const std::vector<NodeRow>& nodes,
                                  const std::vector<PodRow>& pods, std::string source) {
  Scenario s;
  s.source = std::move(source);
  s.nodes.reserve(nodes.size());
  for (const auto& row : nodes) s.nodes.push_back(toNode(row));
  sortNodes(s.nodes);
  s.templates.reserve(pods.size());
  for (const auto& row : pods) s.templates.push_back(toPod(row));
  if (s.nodes.empty()) return Result<Scenario>::failure(s.source + ": no nodes");
  if (s.templates.empty()) return Result<Scenario>::failure(s.source + ": no pods");
  return s;
}

Result<Scenario> loadOpenbScenario(const std::string& nodesCsv, const std::string& podsCsv) {
  auto nodes = loadNodeCsv(nodesCsv);
  if (!nodes) return Result<Scenario>::failure(nodes.error());
  auto pods = loadPodCsv(podsCsv);
  if (!pods) return Result<Scenario>::failure(pods.error());
  return scenarioFromRows(*nodes, *pods, nodesCsv + " + " + podsCsv);
}

Result<Scenario> loadYamlScenario(const std::string& clusterFile, const std::string& workloadFile,
                                  std::string_view gpufairNamespace) {
  using R = Result<Scenario>;
  auto cluster = config::loadClusterFile(clusterFile, gpufairNamespace);
  if (!cluster) return R::failure(cluster.error());
  Scenario s;
  s.source = clusterFile + " + " + workloadFile;
  s.nodes = cluster->nodes;
  sortNodes(s.nodes);
  if (s.nodes.empty()) return R::failure(clusterFile + ": no Nodes");
  std::unordered_set<std::string> names;
  for (const auto& n : s.nodes) names.insert(n.name);

  const bool sameFile = workloadFile == clusterFile;
  for (auto& pod : cluster->pods) {
    if (pod.isFinished()) continue;
    if (pod.nodeName.empty()) {
      if (sameFile) s.templates.push_back(std::move(pod));
      continue;
    }
    if (!names.count(pod.nodeName)) {
      return R::failure(clusterFile + ": pod " + pod.key() + " runs on node " + pod.nodeName +
                        ", which the file does not list");
    }
    s.running.push_back(std::move(pod));
  }
  if (!sameFile) {
    auto workload = config::loadClusterFile(workloadFile, gpufairNamespace);
    if (!workload) return R::failure(workload.error());
    for (auto& pod : workload->pods) {
      pod.nodeName.clear();
      pod.phase = policy::PodPhase::kPending;
      s.templates.push_back(std::move(pod));
    }
  }
  for (auto& pod : s.templates) {
    if (pod.queue.empty()) pod.queue = kDefaultQueueName;
  }
  for (auto& pod : s.running) {
    if (pod.queue.empty()) pod.queue = kDefaultQueueName;
  }
  if (s.templates.empty()) return R::failure(workloadFile + ": no Pods to replay");
  return s;
}

policy::Workload typicalWorkload(std::span<const policy::Pod> pods, double popularity) {
  std::map<policy::PodShape, double> counts;
  for (const auto& pod : pods) {
    policy::PodShape shape = policy::PodShape::of(pod);
    shape.memoryBytes = 0;  // the paper's typical pods are (CPU, GPU, GPU model) only
    counts[std::move(shape)] += 1;
  }
  std::vector<policy::WeightedShape> ranked;
  ranked.reserve(counts.size());
  for (auto& [shape, n] : counts) ranked.push_back({shape, n});
  // Most frequent first; equal counts in shape order, so the cut is deterministic.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.weight > b.weight; });
  const double wanted = popularity * static_cast<double>(pods.size());
  double covered = 0;
  std::size_t keep = 0;
  while (keep < ranked.size() && covered < wanted) covered += ranked[keep++].weight;
  ranked.resize(keep);
  return policy::Workload(std::move(ranked));  // normalizes the weights
}

}  // namespace gpufair::sim
