#include "gpufair/state/mirror.h"

#include <unordered_set>
#include <utility>

namespace gpufair::state {

Mirror::Mirror(ClockPtr clock, MirrorOptions options)
    : clock_(std::move(clock)),
      options_(options),
      builder_(SnapshotBuilderOptions{options.fit, options.seed, options.learning,
                                      options.workloadRepublishDistance}) {
  cache_.setOfferedIsDemand(options.offeredPodsAreDemand);
}

void Mirror::setScorer(std::shared_ptr<const policy::Scorer> scorer) {
  std::lock_guard lock(mu_);
  scorer_ = std::move(scorer);
}

void Mirror::setWorkload(policy::WorkloadPtr workload) {
  std::lock_guard lock(mu_);
  builder_.setWorkload(std::move(workload));
}

void Mirror::upsertNode(policy::Node node) {
  std::lock_guard lock(mu_);
  builder_.upsertNode(std::move(node));
}

void Mirror::deleteNode(std::string_view name) {
  std::lock_guard lock(mu_);
  builder_.deleteNode(name);
}

void Mirror::replaceNodes(std::vector<policy::Node> nodes) {
  std::lock_guard lock(mu_);
  builder_.replaceNodes(std::move(nodes));
}

void Mirror::upsertPodLocked(policy::Pod pod, Timestamp now) {
  const PodCache::Stored stored = cache_.upsert(std::move(pod), now, quota_);
  if (stored.firstSeen) builder_.observe(*stored.pod);
  if (!book_.empty()) book_.take(*stored.pod);
}

void Mirror::upsertPod(policy::Pod pod) {
  std::lock_guard lock(mu_);
  upsertPodLocked(std::move(pod), clock_->now());
  book_.settle(cache_);
}

void Mirror::replacePods(std::vector<policy::Pod> pods) {
  std::lock_guard lock(mu_);
  const Timestamp now = clock_->now();
  std::unordered_set<std::string> listed;
  listed.reserve(pods.size());
  for (auto& p : pods) {
    if (p.uid.empty()) p.uid = PodCache::keyOf(p);
    listed.insert(p.uid);
  }
  cache_.removeUnlisted(listed);
  for (auto& p : pods) upsertPodLocked(std::move(p), now);
  book_.settle(cache_);
}

void Mirror::deletePod(std::string_view uid) {
  std::lock_guard lock(mu_);
  cache_.remove(uid);
  book_.settle(cache_);
}

void Mirror::setQuotaConfig(QuotaConfig config) {
  std::lock_guard lock(mu_);
  quota_ = std::move(config);
  cache_.requeue(quota_);
}

QuotaConfig Mirror::quotaConfig() const {
  std::lock_guard lock(mu_);
  return quota_;
}

void Mirror::notePending(const policy::Pod& pod) {
  std::lock_guard lock(mu_);
  const PodCache::Stored stored = cache_.notePending(pod, clock_->now(), quota_);
  if (stored.firstSeen) builder_.observe(*stored.pod);
}

policy::PodPtr Mirror::findPod(std::string_view uid) const {
  std::lock_guard lock(mu_);
  return cache_.findPod(uid);
}

bool Mirror::isAssumed(std::string_view uid) const {
  std::lock_guard lock(mu_);
  return cache_.isAssumed(uid);
}

void Mirror::confirm(std::string_view uid) {
  std::lock_guard lock(mu_);
  if (cache_.confirm(uid)) book_.settle(cache_);
}

void Mirror::forget(std::string_view uid) {
  std::lock_guard lock(mu_);
  if (cache_.forget(uid, clock_->now())) book_.settle(cache_);
}

std::size_t Mirror::expire() {
  std::lock_guard lock(mu_);
  const Timestamp now = clock_->now();
  const std::size_t pods = cache_.expire(now, options_.assumeTtl, options_.pendingTtl);
  book_.settle(cache_);
  return pods + book_.expire(now);
}

void Mirror::reserve(policy::Reservation r, std::chrono::seconds ttl) {
  std::lock_guard lock(mu_);
  const std::string holder = r.holder;
  const Timestamp now = clock_->now();
  if (!book_.reserve(std::move(r), now + ttl, now)) return;
  // The holder may already be placed there (reserved after the fact): it takes its share now.
  if (const policy::PodPtr pod = cache_.findPod(holder)) book_.take(*pod);
  book_.settle(cache_);
}

void Mirror::releaseReservation(std::string_view holder) {
  std::lock_guard lock(mu_);
  book_.release(holder);
}

std::vector<policy::Reservation> Mirror::reservations() const {
  std::lock_guard lock(mu_);
  return book_.all();
}

policy::SnapshotPtr Mirror::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshotLocked();
}

policy::SnapshotPtr Mirror::snapshotLocked() const {
  return builder_.build(cache_, book_, quota_);
}

}  // namespace gpufair::state
