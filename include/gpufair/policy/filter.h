// The filter and prioritize extension points over a snapshot, as the extender webhooks call them.
// Pure: no I/O, clock or logging.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

struct NodeVerdict {
  std::string_view node;  // views into the caller's candidate names
  std::string reason;
};

struct FilterResult {
  std::vector<std::string_view> feasible;  // in the caller's order
  std::vector<NodeVerdict> failed;         // Unschedulable on this node
  std::vector<NodeVerdict> unresolvable;   // UnschedulableAndUnresolvable on this node
  Admission admission;                     // the queue decision that applied to every node
};

// Pods that request no GPU pass on every candidate, untouched (unless the snapshot's fit options
// check CPU and memory: then they must fit those). Unknown node names fail that node. Fit uses
// snapshot.fitOptions(); GPUs reserved for other holders are not free (see reservation.h).
// Members of a gang follow the gang rules (filterGangMember in gang.h).
FilterResult filter(const ClusterSnapshot& snapshot, const Pod& pod,
                    std::span<const std::string_view> candidates);
// The per-pod decision, without the gang rules: quota admission, then fit on every candidate.
FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates);

struct NodeScore {
  std::string_view node;
  int score = 0;  // 0..10
};

// Scores every candidate; a node that does not fit scores 0, and so does every node for a pod that
// requests no GPU (unless the snapshot's fit options check CPU and memory: offline simulation
// scores those pods too). A pod holding reservations (its own or its gang's) scores 10 on the
// nodes reserved for it and at most 9 elsewhere.
std::vector<NodeScore> prioritize(const ClusterSnapshot& snapshot, const Pod& pod,
                                  std::span<const std::string_view> candidates,
                                  const Scorer& scorer);
// The candidates' indexes in placement order, as prioritize ranks them but by the scorer's exact
// scores rather than 0..10: the holder's reserved nodes first, then the best score; ties, and the
// nodes the pod does not fit on (last), in the caller's order. With `limit`, only the first
// `limit` of that order (the same ones, found by a partial sort: what best/top-N answers need).
std::vector<std::size_t> rankCandidates(const ClusterSnapshot& snapshot, const Pod& pod,
                                        std::span<const std::string_view> candidates,
                                        const Scorer& scorer,
                                        std::size_t limit = static_cast<std::size_t>(-1));

}  // namespace gpufair::policy
