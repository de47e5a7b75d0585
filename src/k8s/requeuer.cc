#include "gpufair/k8s/requeuer.h"

#include <string_view>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "gpufair/k8s/api.h"

namespace gpufair::k8s {

void SchedulingFailures::set(const std::string& uid, bool failed) {
  std::lock_guard lock(mu_);
  if (failed) {
    failed_.insert(uid);
  } else {
    failed_.erase(uid);
  }
}

void SchedulingFailures::erase(const std::string& uid) {
  std::lock_guard lock(mu_);
  failed_.erase(uid);
}

void SchedulingFailures::replace(std::unordered_set<std::string> failed) {
  std::lock_guard lock(mu_);
  failed_ = std::move(failed);
}

bool SchedulingFailures::contains(const std::string& uid) const {
  std::lock_guard lock(mu_);
  return failed_.count(uid) != 0;
}

std::size_t SchedulingFailures::size() const {
  std::lock_guard lock(mu_);
  return failed_.size();
}

Requeuer::Requeuer(KubeClientPtr client, ClockPtr clock, RequeuerOptions options)
    : client_(std::move(client)), clock_(std::move(clock)), options_(std::move(options)) {}

bool Requeuer::failed(const policy::Pod& pod) const {
  return !options_.failures || options_.failures->contains(pod.uid);
}

void Requeuer::queueLocked(const policy::Pod& pod) {
  if (!queued_.insert(pod.uid).second) return;
  queue_.push_back({pod.ns, pod.name, pod.uid});
}

void Requeuer::enqueue(const policy::ClusterSnapshot& snapshot, bool watch) {
  std::lock_guard lock(mu_);
  for (const policy::PodPtr& pod : snapshot.pending()) {
    if (pod->schedulerName != options_.schedulerName || !pod->nodeName.empty()) continue;
    if (failed(*pod)) {
      queueLocked(*pod);
      watched_.erase(pod->uid);
    } else if (watch) {
      watched_.insert(pod->uid);
    }
  }
}

std::size_t Requeuer::tick(bool consistent, bool leader, const policy::ClusterSnapshot& snapshot) {
  const bool rose = consistent && !wasConsistent_;
  wasConsistent_ = consistent;
  if (rose) {
    watched_.clear();
    watchUntil_ = clock_->now() + options_.watchFor;
    enqueue(snapshot, true);
    if (pending() > 0) {
      spdlog::info(
          "requeue: asking kube-scheduler to retry {} pending pods of scheduler {} now "
          "that gpufair has a complete view",
          pending(), options_.schedulerName);
    }
  }
  if (!rose && !watched_.empty()) {
    if (clock_->now() >= watchUntil_) {
      watched_.clear();
    } else if (consistent) {
      std::lock_guard lock(mu_);
      for (const policy::PodPtr& pod : snapshot.pending()) {
        if (pod->nodeName.empty() && watched_.count(pod->uid) != 0 && failed(*pod)) {
          watched_.erase(pod->uid);
          queueLocked(*pod);
        }
      }
    }
  }
  if (!leader || !consistent) return 0;
  if (pending() == 0) return 0;
  const std::string now = formatTime(clock_->now());
  std::unordered_set<std::string_view> stillPending;
  for (const policy::PodPtr& pod : snapshot.pending()) {
    if (pod->nodeName.empty()) stillPending.insert(pod->uid);
  }
  std::size_t done = 0;
  while (done < options_.perTick) {
    Target target;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) break;
      target = std::move(queue_.front());
      queue_.pop_front();
      queued_.erase(target.uid);
    }
    // Only a pod that is still pending is worth a write: one bound or gone since is skipped.
    if (stillPending.count(target.uid) == 0) continue;
    Status patched =
        patchPodAnnotations(*client_, target.ns, target.name, {{kRequeuedAtAnnotation, now}},
                            target.uid, options_.timeout);
    if (!patched.isOk()) {
      // A pod deleted meanwhile answers 404 or 409 (another uid): nothing to retry.
      spdlog::debug("requeue: {}", patched.reason());
      continue;
    }
    ++done;
  }
  std::lock_guard lock(mu_);
  touched_ += done;
  return done;
}

std::size_t Requeuer::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::size_t Requeuer::touched() const {
  std::lock_guard lock(mu_);
  return touched_;
}

}  // namespace gpufair::k8s
