#include "gpufair/k8s/binder.h"

#include <algorithm>
#include <exception>
#include <map>

#include <spdlog/spdlog.h>

#include "gpufair/common/labels.h"
#include "gpufair/common/thread_name.h"
#include "gpufair/k8s/api.h"

#include "api_support.h"

namespace gpufair::k8s {

KubeBinder::KubeBinder(KubeClientPtr client, KubeBinderOptions options)
    : client_(std::move(client)), options_(options) {}

KubeBinder::~KubeBinder() {
  stop();
}

void KubeBinder::stop() {
  stopAsync();
  std::vector<std::thread> binders;
  {
    std::lock_guard lock(bindMu_);
    bindStopping_ = true;
    binders.swap(bindThreads_);
  }
  bindQueued_.notify_all();
  for (auto& thread : binders) thread.join();  // each binds what is queued first
  std::thread worker;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    worker = std::move(worker_);
  }
  queuedMore_.notify_all();
  if (worker.joinable()) worker.join();
}

void KubeBinder::flushLabels() {
  {
    std::unique_lock lock(mu_);
    drained_.wait(lock, [this] { return queued_.empty() && !labelling_; });
  }
  flushAsyncLabels();
}

void KubeBinder::labelLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    queuedMore_.wait(lock, [this] { return !queued_.empty() || stopping_; });
    if (queued_.empty()) return;  // stopping, and every queued label was tried
    PendingLabel next = std::move(queued_.front());
    queued_.pop_front();
    labelling_ = true;
    lock.unlock();
    labelOrKeep(std::move(next));
    lock.lock();
    labelling_ = false;
    if (queued_.empty()) drained_.notify_all();
  }
}

void KubeBinder::labelOrKeep(PendingLabel pending) {
  int httpStatus = 0;
  const Status status = patchLabel(pending, httpStatus);
  labelled(pending, status, httpStatus);
}

// A real UID never contains '/': the mirror keys pods it knows no UID for "ns/name".
std::string_view KubeBinder::preconditionUid(const policy::Pod& pod) {
  return pod.uid.find('/') == std::string::npos ? std::string_view(pod.uid) : std::string_view();
}

std::map<std::string, std::string> KubeBinder::bindingAnnotations(const policy::Pod& pod) {
  if (!pod.isFractional() || pod.gpuIndex < 0) return {};
  return {{kGpuIndexAnnotation, std::to_string(pod.gpuIndex)}};
}

Status KubeBinder::bind(const policy::Pod& pod, std::string_view node, bool overQuota) {
  Status status = bindPod(*client_, pod.ns, pod.name, preconditionUid(pod), node,
                          options_.requestTimeout, bindingAnnotations(pod));
  if (!status.isOk()) {
    spdlog::warn("{}", status.reason());
    return status;
  }
  bound(pod, node, overQuota);
  return status;
}

void KubeBinder::bound(const policy::Pod& pod, std::string_view node, bool overQuota) {
  spdlog::info("bound {} to {}{}", pod.key(), node, overQuota ? " (over quota)" : "");
  if (!overQuota) return;
  PendingLabel pending{pod.ns, pod.name, std::string(preconditionUid(pod)), 0};
  if (labelOverSender(pending)) return;
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queued_.push_back(std::move(pending));
      if (!worker_.joinable()) {
        worker_ = std::thread([this] {
          nameThisThread("label-patch");
          labelLoop();
        });
      }
      queuedMore_.notify_one();
      return;
    }
  }
  labelOrKeep(std::move(pending));  // stopped: no worker any more
}

void KubeBinder::bindAsync(const policy::Pod& pod, std::string_view node, bool overQuota,
                           state::BindDone done) {
  if (bindOverSender(pod, node, overQuota, done)) return;
  {
    std::lock_guard lock(bindMu_);
    if (!bindStopping_ && options_.bindThreads > 0) {
      binds_.push_back({pod, std::string(node), overQuota, std::move(done)});
      // A thread notified but not yet awake still counts as idle: compare with the queue.
      if (binds_.size() > bindIdle_ && bindThreads_.size() < options_.bindThreads) {
        bindThreads_.emplace_back([this] {
          nameThisThread("bind");
          bindLoop();
        });
      } else {
        bindQueued_.notify_one();
      }
      return;
    }
  }
  done(bind(pod, node, overQuota));  // stopped, or no bind threads
}

void KubeBinder::bindLoop() {
  std::unique_lock lock(bindMu_);
  for (;;) {
    ++bindIdle_;
    bindQueued_.wait(lock, [this] { return !binds_.empty() || bindStopping_; });
    --bindIdle_;
    if (binds_.empty()) return;  // stopping, and every queued bind was done
    BindJob job = std::move(binds_.front());
    binds_.pop_front();
    lock.unlock();
    Status bound;
    try {
      bound = bind(job.pod, job.node, job.overQuota);
    } catch (const std::exception& e) {
      bound =
          Status::error("binding " + job.pod.key() + " to " + job.node + " failed: " + e.what());
    }
    try {
      job.done(std::move(bound));
    } catch (const std::exception& e) {
      spdlog::error("bind {}: completion failed: {}", job.pod.key(), e.what());
    }
    lock.lock();
  }
}

ApiRequest KubeBinder::labelRequest(const PendingLabel& pod) const {
  return detail::metadataPatchRequest(pod.ns, pod.name, "labels", {{kOverQuotaLabel, "true"}}, {},
                                      pod.uid, options_.requestTimeout);
}

Status KubeBinder::patchLabel(const PendingLabel& pod, int& httpStatus) {
  ApiError error;
  Status status = detail::metadataPatchOutcome(pod.ns, pod.name, "labels",
                                               client_->send(labelRequest(pod)), &error);
  httpStatus = error.httpStatus;
  return status;
}

bool KubeBinder::label(const PendingLabel& pod, bool& drop) {
  int httpStatus = 0;
  const Status status = patchLabel(pod, httpStatus);
  if (status.isOk()) return true;
  drop = labelFailed(status, httpStatus);
  return false;
}

bool KubeBinder::labelFailed(const Status& status, int httpStatus) {
  const bool drop = httpStatus == 404 || httpStatus == 409;
  {
    std::lock_guard lock(mu_);
    ++labelFailures_;
  }
  spdlog::warn("{}{}", status.reason(), drop ? " (pod gone; not retried)" : "; will retry");
  return drop;
}

void KubeBinder::labelled(const PendingLabel& pending, const Status& status, int httpStatus) {
  if (status.isOk() || labelFailed(status, httpStatus)) return;
  std::lock_guard lock(mu_);
  pending_.push_back(pending);
  pending_.back().attempts = 1;
}

std::size_t KubeBinder::retryLabels() {
  std::vector<PendingLabel> work;
  {
    std::lock_guard lock(mu_);
    work.swap(pending_);
  }
  std::size_t done = 0;
  std::vector<PendingLabel> again;
  for (auto& pod : work) {
    bool drop = false;
    if (label(pod, drop)) {
      ++done;
      spdlog::info("labelled {}/{} {}=true after {} failed attempts", pod.ns, pod.name,
                   kOverQuotaLabel, pod.attempts);
      continue;
    }
    if (drop) continue;
    if (++pod.attempts >= options_.maxLabelAttempts) {
      spdlog::error("giving up labelling {}/{} {}=true after {} attempts", pod.ns, pod.name,
                    kOverQuotaLabel, pod.attempts);
      continue;
    }
    again.push_back(std::move(pod));
  }
  std::lock_guard lock(mu_);
  pending_.insert(pending_.end(), std::make_move_iterator(again.begin()),
                  std::make_move_iterator(again.end()));
  return done;
}

std::size_t KubeBinder::pendingLabels() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

std::uint64_t KubeBinder::labelFailures() const {
  std::lock_guard lock(mu_);
  return labelFailures_;
}

OverQuotaLabeler::OverQuotaLabeler(KubeClientPtr client, ClockPtr clock,
                                   OverQuotaLabelerOptions options)
    : client_(std::move(client)), clock_(std::move(clock)), options_(options) {}

namespace {

bool labelledOverQuota(const policy::Pod& pod) {
  auto it = pod.labels.find(kOverQuotaLabel);
  return it != pod.labels.end() && it->second == "true";
}

// Oldest first: by start time, else creation time; pods with neither go last.
Timestamp age(const policy::Pod& pod) {
  if (pod.started) return *pod.started;
  if (pod.created) return *pod.created;
  return Timestamp::max();
}

}  // namespace

std::size_t OverQuotaLabeler::reconcile(const policy::ClusterSnapshot& snapshot, bool isLeader) {
  if (!isLeader) return 0;
  std::lock_guard lock(mu_);
  const Timestamp now = clock_->now();
  std::erase_if(attempted_,
                [&](const auto& entry) { return now - entry.second >= options_.retryAfter; });

  // A queue can have a pod to unlabel only when it has borrowed GPUs and its other GPUs are
  // below deserved. The snapshot's sums tell which queues those are (a pod labelled over-quota has
  // Pod::overQuota: the codec reads it from the label), so the walk over every placed pod below
  // happens only then, and only for those queues.
  std::vector<std::string_view> candidates;
  for (const policy::QueueState& queue : snapshot.queues()) {
    if (queue.overQuota > 0 && queue.allocated - queue.overQuota < queue.quota.gpu.deserved) {
      candidates.push_back(queue.quota.name);
    }
  }
  if (candidates.empty()) return 0;
  const auto isCandidate = [&candidates](const std::string& queue) {
    return std::find(candidates.begin(), candidates.end(), queue) != candidates.end();
  };

  struct QueuePods {
    MilliGpu kept = 0;  // held by pods that are not borrowed
    std::vector<policy::PodPtr> borrowed;
  };
  std::map<std::string, QueuePods> byQueue;
  for (const auto& node : snapshot.nodes()) {
    for (const auto& pod : node->pods()) {
      if (!pod->holdsGpus() || pod->gpus <= 0 || !isCandidate(pod->queue)) continue;
      QueuePods& queue = byQueue[pod->queue];
      const bool borrowed = pod->overQuota || labelledOverQuota(*pod);
      if (!borrowed) {
        queue.kept += pod->gpus;
      } else if (!snapshot.isProvisional(pod->uid) && labelledOverQuota(*pod)) {
        queue.borrowed.push_back(pod);
      }
    }
  }

  std::size_t removedNow = 0;
  for (auto& [name, pods] : byQueue) {
    const policy::QueueState* queue = snapshot.findQueue(name);
    if (queue == nullptr || pods.borrowed.empty()) continue;
    std::sort(pods.borrowed.begin(), pods.borrowed.end(), [](const auto& a, const auto& b) {
      return age(*a) != age(*b) ? age(*a) < age(*b) : a->key() < b->key();
    });
    const MilliGpu deserved = queue->quota.gpu.deserved;
    for (const auto& pod : pods.borrowed) {
      if (pods.kept + pod->gpus > deserved) continue;
      pods.kept += pod->gpus;  // within deserved now, whether or not the patch lands at once
      if (attempted_.count(pod->uid) != 0) continue;
      attempted_[pod->uid] = now;
      Status status = patchPodLabels(*client_, pod->ns, pod->name, {}, {kOverQuotaLabel}, pod->uid,
                                     options_.requestTimeout);
      if (status.isOk()) {
        ++removed_;
        ++removedNow;
        spdlog::info("{} is within the deserved quota of queue {} again: removed {}", pod->key(),
                     name, kOverQuotaLabel);
      } else {
        ++failures_;
        spdlog::warn("{}", status.reason());
      }
    }
  }
  return removedNow;
}

std::uint64_t OverQuotaLabeler::removed() const {
  std::lock_guard lock(mu_);
  return removed_;
}

std::uint64_t OverQuotaLabeler::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

}  // namespace gpufair::k8s
