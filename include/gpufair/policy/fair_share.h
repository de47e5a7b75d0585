// Fair share: how many GPUs each queue should hold now, by weighted water-filling, top-down over
// the queue tree: the capacity is split among the top-level queues as below, then each queue's
// share among its children the same way, so idle GPUs go to siblings before cousins. Among
// siblings:
//
//   1. Deserved first: each queue gets min(deserved, demand, limit). Should these add up to more
//      than the capacity (deserved quotas oversubscribed, nodes lost), the capacity is water-filled
//      among them in proportion to deserved instead.
//   2. The rest (idle GPUs) goes to queues that want more (demand above what they got, weight > 0),
//      highest priority first; within one priority in proportion to overQuotaWeight, each capped by
//      min(demand, limit). What a capped queue can not use flows to the others, round after round,
//      until the GPUs or the wants run out; what one priority level leaves goes to the next.
//
// A parent's demand is its subtree's (the caller sums it: QueueState does); its cap is also what
// its children can take (the sum of their caps), so a share never strands in a parent. A flat
// config (no parents, one priority) gives exactly the shares of plain water-filling.
//
// Demand is what a queue holds plus what it waits for (allocated + pending, plus GPUs reserved for
// its gangs or reclaimers beyond their pending requests). A share may be below
// what a queue holds: the queue then runs over its fair share (a reclaim signal).
//
// Exact in integer milli-GPUs and deterministic: proportional parts are rounded down to the
// granularity and the units left over go one each by largest remainder, ties by name, then by
// input order. Never sums to more than the capacity; never exceeds a queue's demand or limit.
// Pure: no I/O, clock or globals. Thread-safety: free functions over caller-owned values.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpufair/common/quantity.h"
#include "gpufair/policy/model.h"

namespace gpufair::policy {

struct QueueState;      // snapshot.h
class ClusterSnapshot;  // snapshot.h

struct FairShareInput {
  std::string_view name;  // ties only; views the caller's string
  MilliGpu deserved = 0;
  std::optional<MilliGpu> limit;  // none: capped only by demand and capacity
  double overQuotaWeight = 1.0;   // 0 (or negative, or not finite): never gets idle GPUs
  MilliGpu demand = 0;            // allocated + pending; negative counts as 0
  int parent = -1;                // index of the parent input; -1 (or invalid, or a cycle): top
  int priority = 0;               // higher gets idle GPUs first

  // Every field: equal inputs (and capacity) give equal shares.
  bool operator==(const FairShareInput&) const = default;
};

// One share per input, in input order. `capacity`: the GPUs to share (ClusterSnapshot::capacity()).
// `granularity`: the unit shares are made of, in milli-GPUs (kMilliPerGpu for whole GPUs, 1 when
// fractions exist; see fairShareGranularity); amounts that are not multiples of it are rounded
// down to one. A granularity below 1 counts as 1.
std::vector<MilliGpu> computeFairShares(std::span<const FairShareInput> queues, MilliGpu capacity,
                                        MilliGpu granularity);

// kMilliPerGpu when the capacity and every deserved, limit and demand is a whole number of GPUs;
// otherwise 1 (milli-GPUs).
MilliGpu fairShareGranularity(std::span<const FairShareInput> queues, MilliGpu capacity);

// The inputs a snapshot's queue gives: its quota, allocated + pending + reservedAhead as demand
// (a parent's summed over its subtree), its parent's index in ClusterSnapshot::queues().
FairShareInput fairShareInput(const QueueState& queue);

// The fair share of `pod`'s queue with the pod counted in its demand. The snapshot's
// QueueState::fairShare already counts every pending pod it knows (kube-scheduler offered the pod
// to /filter, so the mirror lists it); for a pod the snapshot does not list as pending (matched by
// uid), shares are computed again with its GPUs added to its queue's demand (and to every
// ancestor's). 0 for an unknown queue.
MilliGpu fairShareCounting(const ClusterSnapshot& snapshot, const Pod& pod);
// Whether the snapshot counts the pod's GPUs in its queue's demand already: it lists the pod as
// pending (by uid) in the same queue with at least its GPUs.
bool countedPending(const ClusterSnapshot& snapshot, const Pod& pod);
// Every queue's fair share (in ClusterSnapshot::queues() order) the same way: the listed shares,
// or shares computed again with the pod's GPUs in its queue's and its ancestors' demand.
std::vector<MilliGpu> fairSharesCounting(const ClusterSnapshot& snapshot, const Pod& pod);

}  // namespace gpufair::policy
