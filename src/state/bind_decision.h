// The policy decisions behind Mirror::assume and Mirror::reserveGang: fit, admission, the GPU of
// a fractional pod, gang plans. They read only what they are given, a snapshot and what the pod
// cache and the reservation book said with it (read together under the mirror's lock), so the
// mirror runs them outside its lock and commits what they decide only if that snapshot is still
// current.
// Pure: no clock, no I/O, no shared state; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/policy/reservation.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/mirror.h"
#include "gpufair/state/pod_cache.h"

namespace gpufair::state::detail {

// A pod's gang as the pod cache and the reservation book had it with the snapshot.
struct GangView {
  PodCache::GangCount count;
  std::vector<policy::Reservation> held;  // the gang's reservations with GPUs left
  std::vector<policy::PodPtr> unplacedWithoutGpus;
};

// What a gang needs now: nothing possible (error), the room it holds, or a plan to reserve.
struct GangDecision {
  std::string error;                      // non-empty: the gang cannot be placed, and why
  std::vector<policy::Reservation> held;  // the gang holds room already (then no plan)
  bool planned = false;                   // a plan was made on the snapshot: reserve `plan`
  std::vector<policy::Reservation> plan;
};

// For `pod` (in a gang, queue and gang resolved): its gangError, else the room its gang holds,
// else (when mayPlan) policy::planGang on the snapshot.
GangDecision decideGang(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                        const GangView& gang, bool mayPlan);

struct BindInputs {
  policy::SnapshotPtr snapshot;
  policy::PodPtr pod;  // the cached pod; null: never offered
  GangView gang;       // read when the pod is in a gang
};

// Store `placed` as assumed and answer `outcome`.
struct Place {
  policy::PodPtr placed;
  AssumeOutcome outcome;
};
// Reserve the gang's plan first, then decide again on a snapshot that shows it.
struct ReserveFirst {
  std::vector<policy::Reservation> plan;
};
// An answer that needs no commit (a refusal, or a pod already placed there), or what to commit.
using BindDecision = std::variant<Result<AssumeOutcome>, Place, ReserveFirst>;

// Mirror::assume's checks, in order: the pod is known, unplaced (or placed on `node` already:
// that placement is the answer) and not finished; a gang member binds only into its gang's room
// (planned first when the gang holds none and mayPlan); the node is known, the pod fits on it and
// its queue admits it (a gang member reserved here was admitted with its gang); a fractional pod
// gets the scorer's GPU (null scorer or an unusable choice: best fit).
BindDecision decideBind(const BindInputs& in, std::string_view uid, std::string_view node,
                        const policy::Scorer* scorer, bool mayPlan);

}  // namespace gpufair::state::detail
