// KubeBinder's asynchronous binds: the Binding (with a fractional pod's gpu-index) sent on the
// webhook server's io_contexts (KubeClient::asyncSender, one sender per context), their outcome
// given to done() on its threads; a borrowed pod's over-quota label PATCH sent the same way once
// its Binding succeeded. A bind called on a thread running one of the contexts is sent on
// that context (the session's own: no hand-off to another thread); from any other thread, on the
// contexts in turn.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include "gpufair/k8s/binder.h"

#include "api_support.h"

namespace gpufair::k8s {

// Shared with the handlers of the requests in flight: an answer that comes after stop() (or after
// the binder is gone) finds its bind no longer in flight and touches nothing else. `mu` is never
// held while the binder (its mu_) or a done() is called.
struct KubeBinder::AsyncBinds : std::enable_shared_from_this<AsyncBinds> {
  struct Job {
    policy::Pod pod;
    std::string node;
    bool overQuota = false;
    std::chrono::milliseconds timeout{0};
    std::uint64_t id = 0;
  };
  using JobPtr = std::shared_ptr<const Job>;

  struct Lane {
    boost::asio::io_context* context = nullptr;
    AsyncSenderPtr sender;
  };
  std::vector<Lane> lanes;  // set by bindOn(), then read only
  std::atomic<std::size_t> nextLane{0};
  std::mutex mu;
  std::condition_variable finished;  // a bind left inFlight, or a label PATCH was answered
  KubeBinder* owner = nullptr;       // null once stopped; GUARDED_BY(mu)
  std::unordered_map<std::uint64_t, state::BindDone> inFlight;  // GUARDED_BY(mu)
  std::uint64_t next = 0;                                       // GUARDED_BY(mu)
  // Label PATCHes sent and not answered yet, by id (next); GUARDED_BY(mu)
  std::unordered_map<std::uint64_t, PendingLabel> labels;
  // done() or a label's outcome under way on an io thread; GUARDED_BY(mu)
  std::size_t completing = 0;

  // The sender of the context running on this thread, else the next one in turn.
  AsyncSender& senderHere() {
    for (const Lane& lane : lanes) {
      if (lane.context->get_executor().running_in_this_thread()) return *lane.sender;
    }
    return *lanes[nextLane.fetch_add(1, std::memory_order_relaxed) % lanes.size()].sender;
  }
  bool anyStopped() const {
    return std::any_of(lanes.begin(), lanes.end(),
                       [](const Lane& lane) { return lane.context->stopped(); });
  }

  void bind(JobPtr job) {
    const policy::Pod& pod = job->pod;
    ApiRequest binding = detail::bindingRequest(pod.ns, pod.name, preconditionUid(pod), job->node,
                                                job->timeout, bindingAnnotations(pod));
    senderHere().send(std::move(binding), [self = shared_from_this(),
                                           job = std::move(job)](ApiResponse response) {
      self->finish(*job, detail::bindingOutcome(job->pod.ns, job->pod.name, job->node, response));
    });
  }

  // The label PATCH's answer, to the binder (pending_ for a retry); nothing once stop() took the
  // label over.
  void labelDone(std::uint64_t id, const ApiResponse& response) {
    PendingLabel pending;
    KubeBinder* binder = nullptr;
    {
      std::lock_guard lock(mu);
      auto it = labels.find(id);
      if (it == labels.end()) return;  // stop() labels it itself
      pending = std::move(it->second);
      labels.erase(it);
      binder = owner;
      ++completing;
    }
    ApiError error;
    const Status status =
        detail::metadataPatchOutcome(pending.ns, pending.name, "labels", response, &error);
    try {
      binder->labelled(pending, status, error.httpStatus);
    } catch (const std::exception& e) {
      spdlog::error("label {}/{}: completion failed: {}", pending.ns, pending.name, e.what());
    }
    {
      std::lock_guard lock(mu);
      --completing;
    }
    finished.notify_all();
  }

  void finish(const Job& job, Status status) {
    state::BindDone done;
    KubeBinder* binder = nullptr;
    {
      std::lock_guard lock(mu);
      auto it = inFlight.find(job.id);
      if (it == inFlight.end()) return;  // stop() answered it already
      done = std::move(it->second);
      inFlight.erase(it);
      binder = owner;
      ++completing;
    }
    const bool bound = status.isOk();
    if (!bound) spdlog::warn("{}", status.reason());
    try {
      done(std::move(status));  // kube-scheduler's answer first: the label can wait
    } catch (const std::exception& e) {
      spdlog::error("bind {}: completion failed: {}", job.pod.key(), e.what());
    }
    try {
      // Still counted in `completing`: flushLabels() waits for the label this may send.
      if (bound) binder->bound(job.pod, job.node, job.overQuota);
    } catch (const std::exception& e) {
      spdlog::error("bind {}: labelling failed: {}", job.pod.key(), e.what());
    }
    {
      std::lock_guard lock(mu);
      --completing;
    }
    finished.notify_all();
  }
};

bool KubeBinder::bindOn(boost::asio::io_context& context) {
  return bindOn(std::vector<boost::asio::io_context*>{&context});
}

bool KubeBinder::bindOn(const std::vector<boost::asio::io_context*>& contexts) {
  if (contexts.empty()) return false;
  auto async = std::make_shared<AsyncBinds>();
  for (boost::asio::io_context* context : contexts) {
    AsyncSenderPtr sender = client_->asyncSender(*context);
    if (!sender) return false;
    async->lanes.push_back({context, std::move(sender)});
  }
  async->owner = this;
  async_ = std::move(async);
  return true;
}

bool KubeBinder::bindOverSender(const policy::Pod& pod, std::string_view node, bool overQuota,
                                state::BindDone& done) {
  if (!async_) return false;
  AsyncBinds& async = *async_;
  auto job = std::make_shared<AsyncBinds::Job>();
  {
    std::lock_guard lock(async.mu);
    if (async.owner == nullptr) return false;  // stopped
    job->id = async.next++;
    async.inFlight.emplace(job->id, std::move(done));
  }
  job->pod = pod;
  job->node = node;
  job->overQuota = overQuota;
  job->timeout = options_.requestTimeout;
  async.bind(std::move(job));
  return true;
}

bool KubeBinder::labelOverSender(PendingLabel& pending) {
  if (!async_) return false;
  AsyncBinds& async = *async_;
  ApiRequest patch = labelRequest(pending);
  std::uint64_t id = 0;
  {
    std::lock_guard lock(async.mu);
    if (async.owner == nullptr) return false;  // stopped
    id = async.next++;
    async.labels.emplace(id, std::move(pending));
  }
  async.senderHere().send(std::move(patch),
                          [self = async.shared_from_this(), id](ApiResponse response) {
                            self->labelDone(id, response);
                          });
  return true;
}

void KubeBinder::flushAsyncLabels() {
  if (!async_) return;
  AsyncBinds& async = *async_;
  std::unique_lock lock(async.mu);
  async.finished.wait(lock, [&async] { return async.labels.empty() && async.completing == 0; });
}

void KubeBinder::stopAsync() {
  if (!async_) return;
  AsyncBinds& async = *async_;
  std::unordered_map<std::uint64_t, state::BindDone> unfinished;
  std::unordered_map<std::uint64_t, PendingLabel> unlabelled;
  {
    std::unique_lock lock(async.mu);
    if (async.owner == nullptr) return;  // stopped before
    // The Binding (and a retry on a fresh connection) within the request timeout, while the
    // io_contexts still run.
    const auto deadline =
        std::chrono::steady_clock::now() +
        2 * std::max<std::chrono::milliseconds>(options_.requestTimeout, std::chrono::seconds(1));
    // A completion under way may still send its pod's label.
    while ((!async.inFlight.empty() || !async.labels.empty() || async.completing > 0) &&
           !async.anyStopped() && std::chrono::steady_clock::now() < deadline) {
      async.finished.wait_for(lock, std::chrono::milliseconds(100));
    }
    unfinished.swap(async.inFlight);
    unlabelled.swap(async.labels);
    async.owner = nullptr;
    async.finished.wait(lock, [&async] { return async.completing == 0; });
  }
  for (const AsyncBinds::Lane& lane : async.lanes) lane.sender->close();
  for (auto& [id, done] : unfinished) {
    try {
      done(Status::error("gpufair is stopping: the Binding's outcome did not come in time"));
    } catch (const std::exception& e) {
      spdlog::error("bind: completion failed at stop: {}", e.what());
    }
  }
  // Labels whose answer did not come: patched again here, synchronously (a merge patch that sets
  // the label is harmless twice), and kept for retryLabels() if that fails.
  for (auto& [id, pending] : unlabelled) labelOrKeep(std::move(pending));
}

}  // namespace gpufair::k8s
