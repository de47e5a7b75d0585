// ReservationBook: whole GPUs on one node kept for one holder (a pod uid, or "gang:<ns>/<name>"
// for a gang; see policy/reservation.h), and what the holder's pods took of them.
//
//   reserve / install --> Held --a holder pod placed on the node: take()--> Taken --bound--> gone
//   Taken --the taker forgotten, deleted, finished or moved: settle()--> Held (its share back)
//   Held --expire (ttl), release(holder), gang complete: settle()--> gone
//
//   Held:   the reserved GPUs are unavailable to every pod but the holder (policy fit).
//   Taken:  a holder pod placed on the node takes what it needs: a pod holder all of it (and
//           its reservations on other nodes are dropped, no longer needed); a gang member its
//           own request in whole GPUs (share()); so does a replacement (a pod with the
//           controller and labels of a replacement holder, policy::replacementHolder) created
//           no earlier than a second before the reservation was made. A reservation fully taken
//           by pods that are all bound (none only assumed) is dropped.
//   Gangs:  when every member (the largest gang-size of them) holds GPUs and none is only
//           assumed, settle() drops every reservation of the gang.
// Reservation GPUs are rounded up to whole GPUs. Every change marks its node in the DirtySet, so
// the next snapshot shows what is left on NodeState::reservations.
//
// Thread-safety: none. state::Mirror serializes every call under its mutex.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/policy/reservation.h"
#include "gpufair/state/dirty_set.h"
#include "gpufair/state/pod_cache.h"

namespace gpufair::state {

class ReservationBook {
 public:
  explicit ReservationBook(DirtySet& dirty) : dirty_(dirty) {}
  ReservationBook(const ReservationBook&) = delete;
  ReservationBook& operator=(const ReservationBook&) = delete;

  // What a holder pod takes of a reservation: whole GPUs (a fractional pod uses one).
  static MilliGpu share(const policy::Pod& pod);

  bool empty() const { return entries_.empty(); }
  // Holds r.gpus (rounded up) on r.node for r.holder until `expires`. A second reservation for
  // the same holder and node replaces the first; what its holder pods took stays taken. False
  // (nothing held) without a holder or a node. The caller then lets the holder take (if placed)
  // and settles.
  // `made`: when (replacement holders are taken only by pods created since, see above).
  bool reserve(policy::Reservation r, Timestamp expires, Timestamp made = {});
  // A fresh plan (a gang's): each reservation replaces the holder's on that node, and what pods
  // took of an older one is theirs. False if the plan is empty.
  bool install(std::vector<policy::Reservation> plan, Timestamp expires);
  // Drops every reservation of this holder.
  void release(std::string_view holder);
  // Drops reservations whose ttl has passed; returns how many.
  std::size_t expire(Timestamp now);

  // A pod was placed (assumed or bound) on its node: it takes from its reservations.
  void take(const policy::Pod& pod);
  // Gives back shares of takers no longer placed on the node, drops fully taken reservations
  // whose takers are all bound, and releases the reservations of complete gangs.
  void settle(const PodCache& pods);

  // Reservations with GPUs not yet taken (gpus: what is left), by holder then node.
  std::vector<policy::Reservation> all() const;
  // The same for one holder.
  std::vector<policy::Reservation> heldBy(std::string_view holder) const;
  // The same by node, for the snapshot.
  std::unordered_map<std::string, std::vector<policy::Reservation>> byNode() const;

 private:
  struct Entry {
    policy::Reservation r;  // gpus: as reserved
    Timestamp expires{};
    Timestamp made{};
    std::map<std::string, MilliGpu> taken;  // holder pods placed on r.node: uid -> GPUs taken
    MilliGpu remaining() const;
  };
  using Key = std::pair<std::string, std::string>;  // holder, node
  using Entries = std::map<Key, Entry>;

  Entries::iterator erase(Entries::iterator it);
  void takeReplacement(const policy::Pod& pod);
  void releaseCompleteGangs(const std::vector<std::string>& gangs, const PodCache& pods);

  DirtySet& dirty_;
  Entries entries_;
};

}  // namespace gpufair::state
