// Reservations: whole GPUs on one node held for one pod (reclaim) or one gang, kept off-limits to
// every other pod until the holder binds or the reservation expires. The state module's Mirror
// owns their life cycle (reserve, consumption at bind, expiry); the engine only reads them from a
// snapshot (NodeState::reservations, ClusterSnapshot::reservations).
// Thread-safety: value types.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "gpufair/common/quantity.h"
#include "gpufair/policy/model.h"

namespace gpufair::policy {

// The holder prefix of a gang's reservations: "gang:<namespace>/<gang-name>".
inline constexpr std::string_view kGangHolderPrefix = "gang:";

// The holder prefix of a reservation kept for the replacement of a pod consolidation moved:
// "replacement:<namespace>/<controller uid>/<labels digest>" (replacementHolder). The pod's
// controller (Job, ReplicaSet) creates the replacement as a new pod, with a new uid but the same
// controller and labels; any such pod holds the reservation, each taking its own request.
inline constexpr std::string_view kReplacementHolderPrefix = "replacement:";

struct Reservation {
  std::string node;
  MilliGpu gpus = 0;   // whole GPUs (a multiple of 1000) still held, not yet taken by the holder
  std::string holder;  // a pod uid, or "gang:<namespace>/<gang-name>" (Pod::gangKey)
  std::string queue;   // the queue the reserved GPUs are charged to
  // Why, in a few words, for refusal reasons: "reclaim", "gang of 4 × 8 GPUs".
  std::string reason;
  // The holder for people ("team-b/train-0", "gang team-b/train"); empty: holder is shown.
  std::string holderName;
};

// Whether `pod` is the holder: its uid is the holder, or its gang key is, or it has a controller
// and the holder is its replacementHolder.
bool isHolder(const Pod& pod, std::string_view holder);
// Whether `pod` is the holder of any of `reservations`.
bool holdsAny(const Pod& pod, std::span<const Reservation> reservations);

// The holder that a pod created by `pod`'s controller with `pod`'s labels matches (labels under
// gpufair.io/, which gpufair writes, left out); empty when the pod has no controller.
std::string replacementHolder(const Pod& pod);

// "4 GPUs reserved for team-b/train-0 (reclaim)".
std::string describe(const Reservation& r);

}  // namespace gpufair::policy
