#include "gpufair/state/pod_cache.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "gpufair/common/labels.h"

namespace gpufair::state {
namespace {

bool isPendingDemand(const policy::Pod& pod) {
  return pod.nodeName.empty() && pod.gpus > 0 && !pod.isFinished() && !pod.terminating;
}

template <class Index>
void eraseFrom(Index& index, const std::string& key, const std::string& uid) {
  auto it = index.find(key);
  if (it == index.end()) return;
  it->second.erase(uid);
  if (it->second.empty()) index.erase(it);
}

// The pending list is in key order: compares a pod's key (PodCache::keyOf) with `key`.
bool keyBefore(const policy::Pod& pod, std::string_view key) {
  if (!pod.uid.empty()) return std::string_view(pod.uid) < key;
  return pod.ns + "/" + pod.name < key;
}
bool hasKey(const policy::Pod* pod, std::string_view key) {
  if (pod == nullptr) return false;
  if (!pod->uid.empty()) return pod->uid == key;
  return pod->ns + "/" + pod->name == key;
}

// Puts the pod into a list in key order (replacing the one with its key); whether it changed.
bool putByKey(policy::PendingPods& list, const std::string& key, const policy::PodPtr& pod) {
  const auto at = list.lowerBound([&](const policy::Pod& p) { return keyBefore(p, key); });
  const policy::Pod* there = list.at(at);
  if (hasKey(there, key)) {
    if (there == pod.get()) return false;
    list.replace(at, pod);
  } else {
    list.insert(at, pod);
  }
  return true;
}

// Takes the pod with this key out of a list in key order; whether it was there.
bool eraseByKey(policy::PendingPods& list, const std::string& key) {
  const auto at = list.lowerBound([&](const policy::Pod& p) { return keyBefore(p, key); });
  if (!hasKey(list.at(at), key)) return false;
  list.erase(at);
  return true;
}

void resolve(policy::Pod& pod, const QuotaConfig& quota) {
  pod.queue = policy::resolveQueue(quota, pod.ns, pod.labels);
  policy::applyGangLabels(pod);
}

// kube-scheduler offers a pending pod over and over: whether an offer says anything new.
bool sameOffer(const policy::Pod& known, const policy::Pod& pod) {
  return known.gpus == pod.gpus && known.gpuShare == pod.gpuShare &&
         known.cpuMilli == pod.cpuMilli && known.memoryBytes == pod.memoryBytes &&
         known.labels == pod.labels && known.phase == pod.phase &&
         known.terminating == pod.terminating && known.annotations == pod.annotations;
}

}  // namespace

std::string PodCache::keyOf(const policy::Pod& pod) {
  return pod.uid.empty() ? pod.ns + "/" + pod.name : pod.uid;
}

const PodCache::Entry* PodCache::find(std::string_view uid) const {
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}

policy::PodPtr PodCache::findPod(std::string_view uid) const {
  const Entry* e = find(uid);
  return e == nullptr ? nullptr : e->pod;
}

bool PodCache::isAssumed(std::string_view uid) const {
  const Entry* e = find(uid);
  return e != nullptr && e->assumed;
}

void PodCache::mark(const policy::Pod& pod) {
  if (!pod.nodeName.empty()) {
    dirty_.node(pod.nodeName);
  } else {
    dirty_.pending();
  }
}

void PodCache::unindex(const std::string& uid, const policy::Pod& old, const policy::Pod* next) {
  mark(old);
  if (!old.nodeName.empty() && (next == nullptr || next->nodeName != old.nodeName)) {
    eraseFrom(podsOnNode_, old.nodeName, uid);
  }
  if (old.inGang() && (next == nullptr || next->gangKey() != old.gangKey())) {
    eraseFrom(gangMembers_, old.gangKey(), uid);
  }
}

void PodCache::store(policy::PodPtr pod, Timestamp seen, bool fromApi, bool assumed) {
  // The stored pod's own uid (every writer sets it), not a copy of it; the pod outlives this call.
  const std::string madeKey = pod->uid.empty() ? keyOf(*pod) : std::string();
  const std::string& key = pod->uid.empty() ? madeKey : pod->uid;
  auto it = pods_.find(key);
  const bool wasAssumed = it != pods_.end() && it->second.assumed;
  const bool apiKnown = fromApi || (it != pods_.end() && it->second.fromApi);
  // The very pod stored, not pending (a confirm, or a watch event equal to the bound or assumed
  // pod we hold): its node's pods, the gang index and the pending list stay as they are; only the
  // flags change, and the provisional list with them. No node state is rebuilt for it.
  const bool samePod = it != pods_.end() && it->second.pod == pod && !isPendingDemand(*pod);
  if (!samePod) {
    if (it != pods_.end()) unindex(key, *it->second.pod, pod.get());
    mark(*pod);
    if (!pod->nodeName.empty()) podsOnNode_[pod->nodeName].insert(key);
    if (pod->inGang()) gangMembers_[pod->gangKey()].insert(key);
    if (isPendingDemand(*pod) && (apiKnown || offeredIsDemand_)) {
      setPending(key, pod);
    } else {
      erasePending(key);
    }
  }
  if (assumed != wasAssumed) {
    if (assumed) {
      putByKey(assumedPods_, key, pod);
    } else {
      eraseByKey(assumedPods_, key);
    }
    publishedAssumed_ = nullptr;
    dirty_.provisional();
  }
  Entry& e = it != pods_.end() ? it->second : pods_[key];  // one lookup for a known pod
  e.pod = std::move(pod);
  e.seen = seen;
  e.fromApi = e.fromApi || fromApi;
  e.assumed = assumed;
  if (!e.fromApi && e.pod->nodeName.empty()) {
    offeredOnly_.insert(key);
  } else {
    offeredOnly_.erase(key);
  }
}

void PodCache::remove(std::string_view uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  const std::string& key = it->first;
  unindex(key, *it->second.pod, nullptr);
  erasePending(key);
  if (it->second.assumed) {
    eraseByKey(assumedPods_, key);
    publishedAssumed_ = nullptr;
    dirty_.provisional();
  }
  offeredOnly_.erase(key);
  pods_.erase(it);
}

PodCache::Stored PodCache::upsert(policy::Pod pod, Timestamp now, const QuotaConfig& quota) {
  if (pod.uid.empty()) pod.uid = keyOf(pod);
  resolve(pod, quota);
  bool assumed = false;
  auto it = pods_.find(pod.uid);
  const bool firstSeen = it == pods_.end();
  if (!firstSeen) {
    const policy::Pod& old = *it->second.pod;
    const bool wasAssumed = it->second.assumed;
    if (old.gpuIndex >= 0 && pod.gpuIndex < 0 && pod.isFractional() && !old.nodeName.empty() &&
        (pod.nodeName == old.nodeName || (pod.nodeName.empty() && wasAssumed))) {
      // The GPU we gave it at bind, until the annotation written by the binder shows up.
      pod.gpuIndex = old.gpuIndex;
      pod.annotations[kGpuIndexAnnotation] = std::to_string(old.gpuIndex);
    }
    if (wasAssumed) {
      if (pod.nodeName.empty() && !pod.isFinished()) {
        // The API server has not caught up with our binding yet: keep holding the GPUs.
        pod.nodeName = old.nodeName;
        assumed = true;
      }
      // Our admission decision stands until the label written at bind shows up.
      if (pod.nodeName == old.nodeName) pod.overQuota = pod.overQuota || old.overQuota;
    }
  }
  // A pod equal to the one held (the watch showing our bind as we assumed it) keeps the held
  // object: store() then rebuilds nothing for it.
  auto stored = !firstSeen && *it->second.pod == pod
                    ? it->second.pod
                    : std::make_shared<const policy::Pod>(std::move(pod));
  store(stored, now, true, assumed);
  return {std::move(stored), firstSeen};
}

PodCache::Stored PodCache::notePending(const policy::Pod& offered, Timestamp now,
                                       const QuotaConfig& quota) {
  const std::string madeKey = offered.uid.empty() ? keyOf(offered) : std::string();
  const std::string& key = offered.uid.empty() ? madeKey : offered.uid;
  auto it = pods_.find(key);
  const bool firstSeen = it == pods_.end();
  if (!firstSeen) {
    Entry& known = it->second;
    if (!known.pod->nodeName.empty() || known.fromApi) {
      // Bound, assumed, or known from the API server, which is the better source.
      if (known.pod->nodeName.empty()) known.seen = now;
      return {};
    }
    if (sameOffer(*known.pod, offered)) {
      known.seen = now;  // still wanted; no new snapshot
      return {};
    }
  }
  policy::Pod pod = offered;
  pod.uid = key;
  resolve(pod, quota);
  pod.nodeName.clear();
  auto stored = std::make_shared<const policy::Pod>(std::move(pod));
  store(stored, now, false, false);
  return {std::move(stored), firstSeen};
}

std::vector<std::string> PodCache::removeUnlisted(const std::unordered_set<std::string>& listed) {
  std::vector<std::string> gone;
  for (const auto& [uid, entry] : pods_) {
    if (entry.fromApi && listed.count(uid) == 0) gone.push_back(uid);
  }
  for (const auto& uid : gone) remove(uid);
  return gone;
}

void PodCache::requeue(const QuotaConfig& quota) {
  for (auto& item : pods_) {
    const std::string& uid = item.first;  // not a structured binding: clang 14 can't capture one
    Entry& entry = item.second;
    std::string queue = policy::resolveQueue(quota, entry.pod->ns, entry.pod->labels);
    if (queue == entry.pod->queue) continue;
    auto copy = std::make_shared<policy::Pod>(*entry.pod);
    copy->queue = std::move(queue);
    entry.pod = std::move(copy);
    const auto at = pending_.lowerBound([&](const policy::Pod& p) { return keyBefore(p, uid); });
    if (hasKey(pending_.at(at), uid)) {
      pending_.replace(at, entry.pod);
      published_ = nullptr;
    }
  }
  dirty_.all();
}

void PodCache::assume(policy::PodPtr placed, Timestamp now) {
  store(std::move(placed), now, false, true);
}

bool PodCache::confirm(std::string_view uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end() || !it->second.assumed) return false;
  store(it->second.pod, it->second.seen, true, false);
  return true;
}

bool PodCache::forget(std::string_view uid, Timestamp now) {
  auto it = pods_.find(uid);
  if (it == pods_.end() || !it->second.assumed) return false;
  reset(it->first, now);
  return true;
}

void PodCache::reset(const std::string& uid, Timestamp now) {
  const Entry& e = pods_.at(uid);
  auto pending = std::make_shared<policy::Pod>(*e.pod);
  pending->nodeName.clear();
  pending->overQuota = false;
  pending->labels.erase(kOverQuotaLabel);
  pending->gpuIndex = -1;
  pending->annotations.erase(kGpuIndexAnnotation);
  store(std::move(pending), now, e.fromApi, false);
}

std::size_t PodCache::expire(Timestamp now, std::chrono::seconds assumeTtl,
                             std::chrono::seconds pendingTtl) {
  // Only the two indexes: a walk over every pod cost ~0.6% of the CPU at 150,000 pods, under the
  // mirror's lock.
  std::vector<std::string> forgotten;
  std::vector<std::string> dropped;
  for (const auto& pod : assumedPods_) {
    std::string key = pod->uid.empty() ? keyOf(*pod) : pod->uid;
    if (now - pods_.at(key).seen > assumeTtl) forgotten.push_back(std::move(key));
  }
  for (const auto& uid : offeredOnly_) {
    if (now - pods_.at(uid).seen > pendingTtl) dropped.push_back(uid);
  }
  for (const auto& uid : forgotten) reset(uid, now);
  for (const auto& uid : dropped) remove(uid);
  return forgotten.size() + dropped.size();
}

std::vector<policy::PodPtr> PodCache::podsOn(std::string_view node) const {
  std::vector<policy::PodPtr> out;
  auto on = podsOnNode_.find(node);  // no copy of the name
  if (on == podsOnNode_.end()) return out;
  out.reserve(on->second.size());
  for (const auto& uid : on->second) out.push_back(pods_.at(uid).pod);
  return out;
}

std::vector<policy::PodPtr> PodCache::pending() const {
  return {pending_.begin(), pending_.end()};
}

std::shared_ptr<const policy::PendingPods> PodCache::pendingList() const {
  if (published_ == nullptr) published_ = std::make_shared<const policy::PendingPods>(pending_);
  return published_;
}

void PodCache::setPending(const std::string& key, const policy::PodPtr& pod) {
  if (putByKey(pending_, key, pod)) published_ = nullptr;
}

void PodCache::erasePending(const std::string& key) {
  if (eraseByKey(pending_, key)) published_ = nullptr;
}

std::vector<std::string> PodCache::assumedUids() const {
  std::vector<std::string> uids;
  uids.reserve(assumedPods_.size());
  for (const auto& pod : assumedPods_) uids.push_back(pod->uid.empty() ? keyOf(*pod) : pod->uid);
  return uids;
}

std::shared_ptr<const policy::PendingPods> PodCache::assumedList() const {
  if (publishedAssumed_ == nullptr) {
    publishedAssumed_ = std::make_shared<const policy::PendingPods>(assumedPods_);
  }
  return publishedAssumed_;
}

PodCache::GangCount PodCache::gangCount(const std::string& gangKey) const {
  GangCount count;
  auto members = gangMembers_.find(gangKey);
  if (members == gangMembers_.end()) return count;
  for (const auto& uid : members->second) {
    const Entry& e = pods_.at(uid);
    count.size = std::max(count.size, e.pod->gangSize);
    if (!e.pod->holdsGpus() || e.pod->terminating) continue;
    ++count.placed;
    if (e.assumed) ++count.assumed;
  }
  return count;
}

std::vector<policy::PodPtr> PodCache::unplacedWithoutGpus(const std::string& gangKey) const {
  std::vector<policy::PodPtr> out;
  auto members = gangMembers_.find(gangKey);
  if (members == gangMembers_.end()) return out;
  for (const auto& uid : members->second) {
    const policy::PodPtr& p = pods_.at(uid).pod;
    if (p->gpus == 0 && p->nodeName.empty() && !p->isFinished() && !p->terminating) {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace gpufair::state
