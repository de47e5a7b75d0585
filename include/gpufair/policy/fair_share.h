// Fair share: how many GPUs each queue should hold now, by weighted water-filling.
//
//   1. Deserved first: each queue gets min(deserved, demand, limit). Should these add up to more
//      than the capacity (deserved quotas oversubscribed, nodes lost), the capacity is water-filled
//      among them in proportion to deserved instead.
//   2. The rest (idle GPUs) goes to queues that want more (demand above what they got, weight > 0),
//      in proportion to overQuotaWeight, each capped by min(demand, limit). What a capped queue can
//      not use flows to the others, round after round, until the GPUs or the wants run out.
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

// The inputs a snapshot's queue gives: its quota, and allocated + pending + reservedAhead as
// demand.
FairShareInput fairShareInput(const QueueState& queue);

// The fair share of `pod`'s queue with the pod counted in its demand. The snapshot's
// QueueState::fairShare already counts every pending pod it knows (kube-scheduler offered the pod
// to /filter, so the mirror lists it); for a pod the snapshot does not list as pending (matched by
// uid), shares are computed again with its GPUs added to its queue's demand. 0 for an unknown
// queue.
MilliGpu fairShareCounting(const ClusterSnapshot& snapshot, const Pod& pod);

}  // namespace gpufair::policy
