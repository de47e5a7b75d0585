// Gangs: all-or-nothing placement of a multi-pod job (pods labelled gpufair.io/gang=NAME with
// annotation gpufair.io/gang-size=N, one namespace).
//
// kube-scheduler offers the members one at a time. The first member of a gang that is neither
// complete nor holding reservations is admitted only when the whole gang fits now:
//   - quota: the members still to place are charged to the queue together (admit() of their
//     total, so limit, deserved and borrowing rules apply to the gang as one request);
//   - room: planGang finds a node for every member still to place, placing them on an undo log
//     (undo_log.h) with checkpoint / rollback (a bounded depth-first search, best fit first).
// The caller (state::Mirror::reserveGang) then reserves the planned GPUs for the gang (holder
// "gang:<ns>/<name>"); filter steers each later member onto those reservations and prioritize
// scores them highest. Members already placed count towards the size; members without GPUs are
// not planned (they need no GPU). A fractional member reserves one whole GPU.
// Pure: no I/O, clock or logging.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/policy/admission.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/reservation.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

// One member still to place, and where the plan puts it.
struct GangSlot {
  std::string node;
  MilliGpu gpus = 0;  // the member's request
  std::string uid;  // a known pending member; empty for one not offered yet (shaped like `member`)
};

struct GangPlan {
  Status status;  // ok: every member still to place has a node in `slots`
  std::string key;
  int size = 0;    // members the gang has
  int placed = 0;  // members already placed
  std::vector<GangSlot> slots;
  Admission admission;  // the whole gang's quota decision (charged: the slots' total)

  // Whole GPUs to reserve for the gang, one reservation per node (reason "gang of 4 × 8 GPUs").
  std::vector<Reservation> reservations() const;
};

struct GangPlanOptions {
  // Search steps (placements tried) before giving up: bounds the time of a pathological plan.
  int maxSteps = 20000;
  // Unplaced members known besides the snapshot's pending pods, which list only pods wanting GPUs
  // (a launcher without GPUs, say): they count as members still to place and need no node.
  std::vector<PodPtr> unplacedWithoutGpus;
};

// Plans the gang of `member` (member.inGang(), no gangError). A gang already complete gets an ok
// plan without slots. Unknown members are shaped like `member`. The reason of a refusal says what
// the gang needs and what is free: "gang team-b/train needs 4 × 8 GPUs; 2 nodes have 8 free".
GangPlan planGang(const ClusterSnapshot& snapshot, const Pod& member,
                  const GangPlanOptions& options = {});

// Filter for a gang member (called by filter() for pods in a gang):
//   - gangError: refused on every node (unresolvable), with that reason;
//   - the gang holds reservations: only nodes reserved for it where the member fits pass
//     (quota was charged for the whole gang when the reservation was made);
//   - the gang is complete or the member needs no GPU: the usual filter;
//   - otherwise: planGang; a gang that does not fit is refused on every node with the plan's
//     reason, one that fits passes on the nodes planned for members shaped like this one.
FilterResult filterGangMember(const ClusterSnapshot& snapshot, const Pod& pod,
                              std::span<const std::string_view> candidates);

}  // namespace gpufair::policy
