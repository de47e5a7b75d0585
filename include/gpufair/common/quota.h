// Queue quotas as admins write them in the `queues.yaml` key of a quota ConfigMap:
//   queues:
//   - name: team-a
//     namespaces: [team-a, team-a-dev]
//     gpu: {deserved: 20, limit: 30, overQuotaWeight: 1}
//     reclaimMinRuntime: 10m
//     parent: research          # optional: a queue tree (see config/quota.h)
//     priority: 1               # optional: who borrows first, who is reclaimed last
//   defaultQueue: {gpu: {deserved: 0, overQuotaWeight: 1}}
// Parsing and validation live in the config module; these are the typed values the engine reads.
// Thread-safety: value types.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpufair/common/quantity.h"

namespace gpufair {

inline constexpr const char* kDefaultQueueName = "default";

struct GpuQuota {
  MilliGpu deserved = 0;
  std::optional<MilliGpu> limit;  // none: capped only by the cluster
  double overQuotaWeight = 1.0;

  bool operator==(const GpuQuota&) const = default;
};

struct QueueQuota {
  std::string name;
  std::vector<std::string> namespaces;
  GpuQuota gpu;
  std::chrono::seconds reclaimMinRuntime{0};
  // The parent queue's name; empty: a top-level queue. A parent queue holds no pods of its own:
  // its usage is its subtree's, its limit caps the subtree, its fair share is split among its
  // children.
  std::string parent{};
  // Among queues that want more than deserved, higher priority gets idle GPUs first; reclaim takes
  // borrowed GPUs from the lowest priority first. Default 0.
  int priority = 0;

  bool operator==(const QueueQuota&) const = default;
};

struct QuotaConfig {
  std::vector<QueueQuota> queues;
  // Namespaces that belong to no queue land here (name "default").
  QueueQuota defaultQueue{kDefaultQueueName, {}, {}, std::chrono::seconds{0}};

  bool operator==(const QuotaConfig&) const = default;
};

}  // namespace gpufair
