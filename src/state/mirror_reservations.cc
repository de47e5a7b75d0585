// Mirror: reservations and gangs (the life cycle is in mirror.h).
#include <algorithm>

#include "gpufair/policy/gang.h"
#include "gpufair/state/mirror.h"

namespace gpufair::state {
namespace {

MilliGpu wholeGpus(MilliGpu gpus) {
  return (gpus + kMilliPerGpu - 1) / kMilliPerGpu * kMilliPerGpu;
}

// What a holder pod takes of a reservation: whole GPUs (a fractional pod uses one).
MilliGpu takes(const policy::Pod& pod) {
  return pod.isFractional() ? kMilliPerGpu : wholeGpus(pod.gpus);
}

}  // namespace

MilliGpu Mirror::ReservationEntry::remaining() const {
  MilliGpu used = 0;
  for (const auto& [uid, gpus] : taken) used += gpus;
  return used >= r.gpus ? 0 : r.gpus - used;
}

void Mirror::reserve(policy::Reservation r, std::chrono::seconds ttl) {
  std::lock_guard lock(mu_);
  if (r.holder.empty() || r.node.empty()) return;
  r.gpus = wholeGpus(std::max<MilliGpu>(r.gpus, 0));
  dirty_.insert(r.node);
  ReservationEntry& e = reservations_[ReservationKey{r.holder, r.node}];
  e.r = std::move(r);
  e.expires = clock_->now() + ttl;
  // The holder may already be placed there (reserved after the fact): it takes its share now.
  if (auto it = pods_.find(e.r.holder); it != pods_.end()) takeReservationsLocked(*it->second.pod);
  settleReservationsLocked();
}

void Mirror::releaseReservation(std::string_view holder) {
  std::lock_guard lock(mu_);
  auto it = reservations_.lower_bound(ReservationKey{std::string(holder), std::string()});
  while (it != reservations_.end() && it->first.first == holder) {
    auto next = std::next(it);
    eraseReservationLocked(it);
    it = next;
  }
}

std::vector<policy::Reservation> Mirror::reservations() const {
  std::lock_guard lock(mu_);
  std::vector<policy::Reservation> out;
  for (const auto& [key, e] : reservations_) {
    if (e.remaining() <= 0) continue;
    out.push_back(e.r);
    out.back().gpus = e.remaining();
  }
  return out;
}

void Mirror::eraseReservationLocked(std::map<ReservationKey, ReservationEntry>::iterator it) {
  dirty_.insert(it->first.second);
  reservations_.erase(it);
}

void Mirror::takeReservationsLocked(const policy::Pod& pod) {
  if (!pod.holdsGpus() || reservations_.empty()) return;
  // A pod holder: everything on its node; reservations elsewhere are no longer needed.
  auto it = reservations_.lower_bound(ReservationKey{pod.uid, std::string()});
  while (it != reservations_.end() && it->first.first == pod.uid) {
    auto next = std::next(it);
    if (it->first.second == pod.nodeName) {
      ReservationEntry& e = it->second;
      if (e.remaining() > 0) {
        e.taken[pod.uid] += e.remaining();
        dirty_.insert(e.r.node);
      }
    } else {
      eraseReservationLocked(it);
    }
    it = next;
  }
  // A gang member: its own request from the gang's reservation on its node.
  if (!pod.inGang()) return;
  auto g = reservations_.find(ReservationKey{pod.gangKey(), pod.nodeName});
  if (g == reservations_.end() || g->second.taken.count(pod.uid) > 0) return;
  const MilliGpu share = std::min(takes(pod), g->second.remaining());
  if (share <= 0) return;
  g->second.taken[pod.uid] = share;
  dirty_.insert(pod.nodeName);
}

Mirror::GangCount Mirror::gangCountLocked(const std::string& gangKey) const {
  GangCount count;
  auto members = gangMembers_.find(gangKey);
  if (members == gangMembers_.end()) return count;
  for (const auto& uid : members->second) {
    const policy::Pod& pod = *pods_.at(uid).pod;
    count.size = std::max(count.size, pod.gangSize);
    if (!pod.holdsGpus() || pod.terminating) continue;
    ++count.placed;
    if (pod.assumed) ++count.assumed;
  }
  return count;
}

void Mirror::settleReservationsLocked() {
  if (reservations_.empty()) return;
  std::vector<std::string> gangs;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    ReservationEntry& e = it->second;
    bool anyAssumed = false;
    for (auto t = e.taken.begin(); t != e.taken.end();) {
      auto p = pods_.find(t->first);
      if (p == pods_.end() || !p->second.pod->holdsGpus() || p->second.pod->nodeName != e.r.node) {
        t = e.taken.erase(t);  // the taker went away: its share is held again
        dirty_.insert(e.r.node);
        continue;
      }
      anyAssumed = anyAssumed || p->second.pod->assumed;
      ++t;
    }
    if (e.remaining() <= 0 && !anyAssumed) {
      auto next = std::next(it);
      eraseReservationLocked(it);
      it = next;
      continue;
    }
    if (e.r.holder.starts_with(policy::kGangHolderPrefix) &&
        (gangs.empty() || gangs.back() != e.r.holder)) {
      gangs.push_back(e.r.holder);
    }
    ++it;
  }
  for (const auto& gang : gangs) {
    const GangCount count = gangCountLocked(gang);
    if (count.size > 0 && count.placed >= count.size && count.assumed == 0) {
      // Every member is bound: the gang needs its reservations no more.
      auto it = reservations_.lower_bound(ReservationKey{gang, std::string()});
      while (it != reservations_.end() && it->first.first == gang) {
        auto next = std::next(it);
        eraseReservationLocked(it);
        it = next;
      }
    }
  }
}

std::size_t Mirror::expireReservationsLocked(Timestamp now) {
  std::size_t dropped = 0;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    auto next = std::next(it);
    if (it->second.expires <= now) {
      eraseReservationLocked(it);
      ++dropped;
    }
    it = next;
  }
  return dropped;
}

std::unordered_map<std::string, std::vector<policy::Reservation>> Mirror::reservationsByNodeLocked()
    const {
  std::unordered_map<std::string, std::vector<policy::Reservation>> out;
  for (const auto& [key, e] : reservations_) {
    const MilliGpu left = e.remaining();
    if (left <= 0) continue;
    auto& list = out[e.r.node];
    list.push_back(e.r);
    list.back().gpus = left;
  }
  return out;
}

Result<GangReservation> Mirror::reserveGang(const policy::Pod& member) {
  std::lock_guard lock(mu_);
  if (!member.inGang()) {
    return Result<GangReservation>::failure("pod " + member.key() + " is not in a gang");
  }
  const std::string key = member.gangKey();
  GangReservation out;
  auto collect = [&] {
    for (auto it = reservations_.lower_bound(ReservationKey{key, std::string()});
         it != reservations_.end() && it->first.first == key; ++it) {
      if (it->second.remaining() <= 0) continue;
      out.reservations.push_back(it->second.r);
      out.reservations.back().gpus = it->second.remaining();
    }
  };
  auto held = reservations_.lower_bound(ReservationKey{key, std::string()});
  if (held != reservations_.end() && held->first.first == key) {
    collect();
    return out;
  }
  // Plan with the mirror's own copy of the pod when it has one (queue and gang resolved).
  policy::Pod pod = member;
  if (auto it = pods_.find(member.uid); it != pods_.end()) pod = *it->second.pod;
  pod.queue = policy::resolveQueue(quota_, pod.ns, pod.labels);
  policy::applyGangLabels(pod);
  const policy::SnapshotPtr snap = rebuildLocked();
  const policy::GangPlan plan = policy::planGang(*snap, pod);
  if (!plan.status.isOk()) return Result<GangReservation>::failure(plan.status.reason());
  const Timestamp expires = clock_->now() + options_.gangTimeout;
  for (policy::Reservation& r : plan.reservations()) {
    dirty_.insert(r.node);
    ReservationEntry& e = reservations_[ReservationKey{r.holder, r.node}];
    e.r = std::move(r);
    e.expires = expires;
    out.planned = true;
  }
  collect();
  return out;
}

}  // namespace gpufair::state
