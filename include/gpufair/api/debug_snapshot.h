// The /debug/snapshot document: a ClusterSnapshot as JSON, for operators and offline replay.
//   {"generation": 7,
//    "cluster": {"nodes", "capacity", "allocated", "free", "largestFreeBlock", "pendingPods"},
//    "nodes":   [{"name", "allocatable", "used", "free", "unschedulable", "deleting", "pods":
//    ["ns/n"]}], "pods":    [{"namespace", "name", "uid", "node", "queue", "gpus", "phase",
//    "overQuota",
//                 "assumed", "terminating"}],                  (pods bound or assumed on nodes)
//    "pending": [{... same keys ...}],                          (unbound pods wanting GPUs)
//    "queues":  [{"name", "deserved", "limit" (null: none), "overQuotaWeight", "allocated",
//                 "overQuota", "fairShare", "pending", "pendingPods", "runningPods"}]}
// GPU amounts are numbers of GPUs: whole numbers as integers, fractions as decimals (0.5).
// Thread-safety: a pure function of an immutable snapshot.
#pragma once

#include <string>

#include "gpufair/policy/snapshot.h"

namespace gpufair::api {

std::string renderSnapshotJson(const policy::ClusterSnapshot& snapshot);

}  // namespace gpufair::api
