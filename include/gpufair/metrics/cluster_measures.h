// What the metrics exporter reports about the cluster, computed from one snapshot: GPUs by state,
// fragmentation, how many k-GPU jobs fit, per-queue quota use and Jain's fairness index.
// Amounts are in GPUs (fractions as decimals), ready to export.
// Thread-safety: pure functions of an immutable snapshot; the results are value types.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace gpufair::metrics {

// The job sizes gpufair_schedulable_jobs reports.
inline constexpr int kJobSizes[] = {1, 2, 4, 8};

struct QueueMeasure {
  std::string name;
  // Queue trees: the parent queue ("" at the top level), the depth (0 at the top) and whether the
  // queue has children. A parent's amounts are its subtree's (policy::QueueState sums them); its
  // series carry the label `parent` only when it has one, so flat configs keep their series.
  std::string parent{};
  int depth = 0;
  bool hasChildren = false;
  double deserved = 0;
  std::optional<double> limit;  // none: unlimited
  double allocated = 0;
  // What reclaim could take from the queue: the GPUs of its borrowed (over-quota) pods, whole pods
  // taken youngest first as reclaim takes them, while the queue keeps at least its deserved quota.
  // A borrowed pod whose eviction would take the queue below deserved is not counted. For a parent:
  // its subtree's borrowed pods, while the parent keeps its deserved quota.
  double overQuota = 0;
  double pending = 0;  // requested by pending pods
  int pendingPods = 0;
  double fairShare = 0;
};

struct NodeMeasure {
  std::string name;
  double allocatable = 0;
  double used = 0;
  double free = 0;
  bool schedulable = true;  // takes new pods
};

struct ClusterMeasures {
  std::uint64_t generation = 0;
  double totalGpus = 0;      // allocatable over all nodes
  double allocatedGpus = 0;  // held by bound or assumed pods, on any node
  double freeGpus = 0;       // free on nodes that take new pods
  double reservedGpus = 0;   // of the free ones, held for a reclaimer or a gang
  // The share of free GPU capacity the snapshot's target workload cannot use (0..1; 0 when nothing
  // is free or no workload is known yet), and that capacity in GPUs.
  double fragmentationRatio = 0;
  double fragmentedGpus = 0;
  double largestFreeBlock = 0;  // the most GPUs free on one node taking new pods
  // For each k of kJobSizes (same order): how many pods of k whole GPUs fit at once, each on one
  // node, in the GPUs nobody uses (sum over nodes taking new pods of floor(fully free GPUs / k)).
  std::vector<std::int64_t> schedulableJobs;
  // Jain's index of allocated / fair share over leaf queues with demand (see fairnessIndex).
  double fairnessIndex = 1;
  std::vector<QueueMeasure> queues;
  std::vector<NodeMeasure> nodes;
  int pendingPods = 0;
};

ClusterMeasures measureCluster(const policy::ClusterSnapshot& snapshot);

// The reclaimable part of a queue's allocation (QueueMeasure::overQuota), in milli-GPUs: `borrowed`
// are the queue's borrowed pods.
MilliGpu reclaimableGpus(const policy::QueueState& queue, std::vector<policy::PodPtr> borrowed);

// Pods of `gpus` whole GPUs that fit at once (see ClusterMeasures::schedulableJobs).
std::int64_t schedulableJobs(const policy::ClusterSnapshot& snapshot, int gpus);

// Jain's fairness index (sum x)^2 / (n * sum x^2) of non-negative values: 1 when all are equal,
// 1/n when one value has everything. 1 for an empty list or all zeros (nobody is favoured).
double jainIndex(std::span<const double> values);

// Jain's index over x_q = allocated_q / fairShare_q for the queues with demand (allocated or
// pending GPUs) and a positive fair share; queues entitled to nothing are left out.
double fairnessIndex(std::span<const QueueMeasure> queues);

}  // namespace gpufair::metrics
