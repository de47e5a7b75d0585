#include "gpufair/state/reservation_book.h"

#include <algorithm>
#include <iterator>

namespace gpufair::state {
namespace {

MilliGpu wholeGpus(MilliGpu gpus) {
  return (gpus + kMilliPerGpu - 1) / kMilliPerGpu * kMilliPerGpu;
}

}  // namespace

MilliGpu ReservationBook::share(const policy::Pod& pod) {
  return pod.isFractional() ? kMilliPerGpu : wholeGpus(pod.gpus);
}

MilliGpu ReservationBook::Entry::remaining() const {
  MilliGpu used = 0;
  for (const auto& [uid, gpus] : taken) used += gpus;
  return used >= r.gpus ? 0 : r.gpus - used;
}

bool ReservationBook::reserve(policy::Reservation r, Timestamp expires, Timestamp made) {
  if (r.holder.empty() || r.node.empty()) return false;
  r.gpus = wholeGpus(std::max<MilliGpu>(r.gpus, 0));
  dirty_.node(r.node);
  Entry& e = entries_[Key{r.holder, r.node}];
  e.r = std::move(r);
  e.expires = expires;
  e.made = made;
  return true;
}

bool ReservationBook::install(std::vector<policy::Reservation> plan, Timestamp expires) {
  for (policy::Reservation& r : plan) {
    dirty_.node(r.node);
    Entry& e = entries_[Key{r.holder, r.node}];
    e.r = std::move(r);
    e.expires = expires;
    e.taken.clear();  // a fresh plan: what members took of an older one is theirs
  }
  return !plan.empty();
}

ReservationBook::Entries::iterator ReservationBook::erase(Entries::iterator it) {
  dirty_.node(it->first.second);
  return entries_.erase(it);
}

void ReservationBook::release(std::string_view holder) {
  auto it = entries_.lower_bound(Key{std::string(holder), std::string()});
  while (it != entries_.end() && it->first.first == holder) it = erase(it);
}

std::size_t ReservationBook::expire(Timestamp now) {
  std::size_t dropped = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.expires <= now) {
      it = erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

void ReservationBook::take(const policy::Pod& pod) {
  if (!pod.holdsGpus() || entries_.empty()) return;
  // A pod holder: everything on its node; reservations elsewhere are no longer needed.
  auto it = entries_.lower_bound(Key{pod.uid, std::string()});
  while (it != entries_.end() && it->first.first == pod.uid) {
    if (it->first.second != pod.nodeName) {
      it = erase(it);
      continue;
    }
    Entry& e = it->second;
    if (e.remaining() > 0) {
      e.taken[pod.uid] += e.remaining();
      dirty_.node(e.r.node);
    }
    ++it;
  }
  takeReplacement(pod);
  // A gang member: its own request from the gang's reservation on its node.
  if (!pod.inGang()) return;
  auto g = entries_.find(Key{pod.gangKey(), pod.nodeName});
  if (g == entries_.end() || g->second.taken.count(pod.uid) > 0) return;
  const MilliGpu part = std::min(share(pod), g->second.remaining());
  if (part <= 0) return;
  g->second.taken[pod.uid] = part;
  dirty_.node(pod.nodeName);
}

void ReservationBook::takeReplacement(const policy::Pod& pod) {
  if (pod.controller.empty()) return;
  auto r = entries_.find(Key{policy::replacementHolder(pod), pod.nodeName});
  if (r == entries_.end() || r->second.taken.count(pod.uid) > 0) return;
  // Timestamps from the API server have whole seconds: a pod created more than a second before
  // the reservation is a sibling that was already there, not a replacement.
  if (pod.created && *pod.created + std::chrono::seconds{1} < r->second.made) return;
  const MilliGpu part = std::min(share(pod), r->second.remaining());
  if (part <= 0) return;
  r->second.taken[pod.uid] = part;
  dirty_.node(pod.nodeName);
}

void ReservationBook::settle(const PodCache& pods) {
  if (entries_.empty()) return;
  std::vector<std::string> gangs;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    bool anyAssumed = false;
    for (auto t = e.taken.begin(); t != e.taken.end();) {
      const PodCache::Entry* p = pods.find(t->first);
      if (p == nullptr || !p->pod->holdsGpus() || p->pod->nodeName != e.r.node) {
        t = e.taken.erase(t);  // the taker went away: its share is held again
        dirty_.node(e.r.node);
        continue;
      }
      anyAssumed = anyAssumed || p->assumed;
      ++t;
    }
    if (e.remaining() <= 0 && !anyAssumed) {
      it = erase(it);
      continue;
    }
    if (e.r.holder.starts_with(policy::kGangHolderPrefix) &&
        (gangs.empty() || gangs.back() != e.r.holder)) {
      gangs.push_back(e.r.holder);
    }
    ++it;
  }
  releaseCompleteGangs(gangs, pods);
}

void ReservationBook::releaseCompleteGangs(const std::vector<std::string>& gangs,
                                           const PodCache& pods) {
  for (const auto& gang : gangs) {
    const PodCache::GangCount count = pods.gangCount(gang);
    // Every member is bound: the gang needs its reservations no more.
    if (count.size > 0 && count.placed >= count.size && count.assumed == 0) release(gang);
  }
}

std::vector<policy::Reservation> ReservationBook::all() const {
  std::vector<policy::Reservation> out;
  for (const auto& [key, e] : entries_) {
    if (e.remaining() <= 0) continue;
    out.push_back(e.r);
    out.back().gpus = e.remaining();
  }
  return out;
}

std::vector<policy::Reservation> ReservationBook::heldBy(std::string_view holder) const {
  std::vector<policy::Reservation> out;
  for (auto it = entries_.lower_bound(Key{std::string(holder), std::string()});
       it != entries_.end() && it->first.first == holder; ++it) {
    if (it->second.remaining() <= 0) continue;
    out.push_back(it->second.r);
    out.back().gpus = it->second.remaining();
  }
  return out;
}

std::unordered_map<std::string, std::vector<policy::Reservation>> ReservationBook::byNode() const {
  std::unordered_map<std::string, std::vector<policy::Reservation>> out;
  for (const auto& [key, e] : entries_) {
    const MilliGpu left = e.remaining();
    if (left <= 0) continue;
    auto& list = out[e.r.node];
    list.push_back(e.r);
    list.back().gpus = left;
  }
  return out;
}

}  // namespace gpufair::state
