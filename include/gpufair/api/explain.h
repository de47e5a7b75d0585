// The /debug/explain document: why a pod waits, or where it would go, node by node, from the
// engine's own filter and prioritize over every node of a snapshot.
//   {"pod": "ns/name", "uid", "queue", "gpus", "state": "pending" | "bound" | "assumed",
//    "node": "..." (bound or assumed: where; else ""),
//    "admission": {"admitted": bool, "overQuota": bool, "reason": "..."}   (pending pods only),
//    "feasibleNodes": N, "totalNodes": M,
//    "nodes": [{"name", "fits", "score" (0..10, fitting nodes), "reason" (refusal, else ""),
//               "free", "allocatable"}],     (fitting nodes best score first, then the rest by
//               name)
//    "consolidation": null, or for a pending pod its queue admits that fits on no node although
//                     its GPUs are free in total (it waits on fragmentation alone):
//                     {"fragmented": true, "outcome": "planned" | "no-plan", "node": target,
//                      "moves": [{"pod", "from", "to"}], "reason": the plan, or why none},
//    "summary": "one sentence a data scientist understands"}
// GPU amounts as in /debug/snapshot (whole numbers as integers, fractions as decimals).
// Thread-safety: pure functions of an immutable snapshot.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpufair/common/clock.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::api {

// podKey is "namespace/name". Fails (with a reason in words) when the snapshot knows no such pod,
// pending or placed.
// `now`: for reclaimMinRuntime in the consolidation part (the 3-argument form uses the system
// clock).
Result<std::string> renderExplainJson(const policy::ClusterSnapshot& snapshot,
                                      std::string_view podKey, const policy::Scorer& scorer);
Result<std::string> renderExplainJson(const policy::ClusterSnapshot& snapshot,
                                      std::string_view podKey, const policy::Scorer& scorer,
                                      Timestamp now);

// The percent-decoded value of `key` in the target's query string ("/p?a=1&pod=ns%2Fx"), or
// nullopt when absent or badly encoded.
std::optional<std::string> queryParameter(std::string_view target, std::string_view key);

}  // namespace gpufair::api
