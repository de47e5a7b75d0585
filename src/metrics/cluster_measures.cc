#include "gpufair/metrics/cluster_measures.h"

#include <algorithm>
#include <map>

#include "gpufair/policy/fragmentation.h"

namespace gpufair::metrics {
namespace {

double gpus(MilliGpu milli) {
  return static_cast<double>(milli) / static_cast<double>(kMilliPerGpu);
}

QueueMeasure measureQueue(const policy::QueueState& queue, std::vector<policy::PodPtr> borrowed) {
  QueueMeasure m;
  m.name = queue.quota.name;
  m.parent = queue.parentIndex >= 0 ? queue.quota.parent : std::string();
  m.depth = queue.depth;
  m.hasChildren = queue.children > 0;
  m.deserved = gpus(queue.quota.gpu.deserved);
  if (queue.quota.gpu.limit) m.limit = gpus(*queue.quota.gpu.limit);
  m.allocated = gpus(queue.allocated);
  m.overQuota = gpus(reclaimableGpus(queue, std::move(borrowed)));
  m.pending = gpus(queue.pending);
  m.pendingPods = queue.pendingPods;
  m.fairShare = gpus(queue.fairShare);
  return m;
}

}  // namespace

MilliGpu reclaimableGpus(const policy::QueueState& queue, std::vector<policy::PodPtr> borrowed) {
  // Youngest first (reclaim's order); pods without a creation time count as oldest.
  std::stable_sort(borrowed.begin(), borrowed.end(), [](const auto& a, const auto& b) {
    return a->created.value_or(Timestamp{}) > b->created.value_or(Timestamp{});
  });
  MilliGpu room = queue.allocated - queue.quota.gpu.deserved;
  MilliGpu taken = 0;
  for (const auto& pod : borrowed) {
    if (pod->gpus <= room - taken) taken += pod->gpus;
  }
  return std::max<MilliGpu>(taken, 0);
}

std::int64_t schedulableJobs(const policy::ClusterSnapshot& snapshot, int gpus) {
  if (gpus <= 0) return 0;
  std::int64_t jobs = 0;
  for (const auto& node : snapshot.nodes()) {
    if (node->node().takesNewPods()) jobs += node->fullyFreeGpus() / gpus;
  }
  return jobs;
}

double jainIndex(std::span<const double> values) {
  double sum = 0;
  double squares = 0;
  for (double v : values) {
    sum += v;
    squares += v * v;
  }
  if (values.empty() || squares <= 0) return 1;
  return sum * sum / (static_cast<double>(values.size()) * squares);
}

double fairnessIndex(std::span<const QueueMeasure> queues) {
  std::vector<double> ratios;
  for (const auto& q : queues) {
    if (q.hasChildren) continue;  // a parent's amounts are its children's again
    if (q.allocated + q.pending > 0 && q.fairShare > 0) ratios.push_back(q.allocated / q.fairShare);
  }
  return jainIndex(ratios);
}

ClusterMeasures measureCluster(const policy::ClusterSnapshot& snapshot) {
  ClusterMeasures m;
  m.generation = snapshot.generation();
  MilliGpu total = 0;
  m.nodes.reserve(snapshot.nodes().size());
  for (const auto& node : snapshot.nodes()) {
    total += node->allocatable();
    m.nodes.push_back({node->name(), gpus(node->allocatable()), gpus(node->used()),
                       gpus(node->free()), node->node().takesNewPods()});
  }
  m.totalGpus = gpus(total);
  m.allocatedGpus = gpus(snapshot.allocated());
  m.freeGpus = gpus(snapshot.free());
  MilliGpu reserved = 0;
  for (const auto& r : snapshot.reservations()) reserved += r.gpus;
  m.reservedGpus = gpus(reserved);
  const policy::ClusterFragmentation fragmentation = policy::clusterFragmentation(snapshot);
  m.fragmentationRatio = fragmentation.ratio();
  m.fragmentedGpus = fragmentation.fragmented / static_cast<double>(kMilliPerGpu);
  m.largestFreeBlock = gpus(snapshot.largestFreeBlock());
  for (int k : kJobSizes) m.schedulableJobs.push_back(schedulableJobs(snapshot, k));
  std::map<std::string, std::vector<policy::PodPtr>, std::less<>> borrowed;
  for (const auto& node : snapshot.nodes()) {
    for (const auto& pod : node->pods()) {
      if (pod->overQuota && pod->gpus > 0) borrowed[pod->queue].push_back(pod);
    }
  }
  const auto queues = snapshot.queues();
  std::vector<std::vector<policy::PodPtr>> subtree(queues.size());  // borrowed pods, per level
  for (std::size_t i = 0; i < queues.size(); ++i) {
    auto it = borrowed.find(queues[i].quota.name);
    if (it == borrowed.end()) continue;
    for (int up : policy::queueLineage(queues, static_cast<int>(i))) {
      auto& into = subtree[static_cast<std::size_t>(up)];
      into.insert(into.end(), it->second.begin(), it->second.end());
    }
  }
  for (std::size_t i = 0; i < queues.size(); ++i)
    m.queues.push_back(measureQueue(queues[i], std::move(subtree[i])));
  m.fairnessIndex = fairnessIndex(m.queues);
  m.pendingPods = static_cast<int>(snapshot.pending().size());
  return m;
}

}  // namespace gpufair::metrics
