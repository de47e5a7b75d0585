// KubeBinder: makes /bind real on the API server. Posts a v1 Binding for the pod (with its uid as a
// precondition); a fractional pod's Binding carries the GPU it was given as annotation
// gpufair.io/gpu-index, which kube-apiserver writes to the pod in the same update that binds it (so
// the pod never starts without it, and a refused Binding leaves no annotation behind). For a pod
// admitted as borrowed, labels it gpufair.io/over-quota=true (labels cannot ride on a Binding). The
// label is not patched on bind()'s thread (an io thread kube-scheduler waits on): bind() queues it
// and returns after the Binding; a worker thread (started by the first borrowed pod) patches the
// queued labels in order. After bindOn(), an asynchronous bind's label PATCH is instead sent when
// its Binding succeeds, on the same context's sender (no worker thread, whose two sleeps per
// borrowed pod cost more than the PATCH itself). Until the label shows up, the mirror keeps the
// admission decision it assumed at bind. A failed label patch does not fail the bind (the pod is
// bound either way): it is logged and retried by retryLabels(), which the caller runs
// periodically. stop() (and the destructor) lets the worker try every label still queued first,
// waits for the asynchronous ones in flight as for the binds, and patches again, synchronously,
// those whose answer did not come, so a shutdown does not drop one; a bind() after stop() labels
// inline.
//
// OverQuotaLabeler: the opposite direction. Once a queue is back within its deserved quota, the
// pods it borrowed for are no longer borrowed; the leader removes their label so that reclaim does
// not take them.
//
// bindAsync() (what /bind calls) lets no io thread wait for the API server's answer (ms: an etcd
// write), in one of two ways:
//   - after bindOn(contexts) (the webhook server's io_contexts, one per io thread): the Binding
//     (a fractional pod's gpu-index on it) is sent asynchronously (KubeClient::asyncSender, one
//     sender per context) on the context whose thread calls bindAsync() (the /bind's own session's;
//     from another thread, on the contexts in turn); done() runs there when the Binding's outcome
//     is known. No thread, no hand-off. stop() waits (up to twice the request timeout, and only
//     while every context runs) for the binds in flight, fails those still unfinished, and closes
//     the senders' connections: the contexts must outlive stop(). bind() itself stays synchronous.
//   - otherwise, on one of up to `bindThreads` bind threads, as kube-scheduler's binding
//     goroutines do: a thread is started when a bind is queued and none is idle, and stays for the
//     next ones; each takes a pooled keep-alive connection of the client. done() runs on that
//     thread. stop() binds every bind queued first, then ends the threads.
// A bindAsync() after stop(), or with bindThreads 0 and no bindOn(), binds on the calling thread.
//
// KubeBinder implements the state::Binder port that api's /bind calls.
// Thread-safety: KubeBinder is thread-safe (bind() runs on several io threads at once).
// OverQuotaLabeler::reconcile() is meant for one thread (a periodic loop); it is mutex-guarded.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/status.h"
#include "gpufair/k8s/client.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/ports.h"

namespace gpufair::k8s {

struct KubeBinderOptions {
  std::chrono::milliseconds requestTimeout{10'000};
  int maxLabelAttempts = 10;  // a label patch is given up (and logged) after this many failures
  // Binds in flight at once on bindAsync()'s threads (kube-scheduler binds up to 16 pods at once
  // by default); 0: bindAsync() binds on the calling thread.
  std::size_t bindThreads = 16;
};

class KubeBinder final : public state::Binder {
 public:
  explicit KubeBinder(KubeClientPtr client, KubeBinderOptions options = {});
  ~KubeBinder() override;
  KubeBinder(const KubeBinder&) = delete;
  KubeBinder& operator=(const KubeBinder&) = delete;

  // Binds `pod` (as assumed: gpuIndex set for a fractional pod) to `node`; on success queues its
  // over-quota label when `overQuota`. A bind error is Status::error with the API server's
  // message; a label error is not an error of bind().
  Status bind(const policy::Pod& pod, std::string_view node, bool overQuota) override;
  // Binds asynchronously on the contexts' threads from now on, when the client can (see above).
  // Call before the first bindAsync(). False when the client cannot (or no context is given):
  // bind threads then.
  bool bindOn(const std::vector<boost::asio::io_context*>& contexts);
  bool bindOn(boost::asio::io_context& context);
  // bind() asynchronously or on a bind thread (see above); done gets its outcome there.
  void bindAsync(const policy::Pod& pod, std::string_view node, bool overQuota,
                 state::BindDone done) override;
  // The watch confirms a binding, not the caller.
  bool confirmsImmediately() const override { return false; }

  // Tries again the label patches that failed. Drops those whose pod is gone (404, or its uid
  // changed: 409) or that failed maxLabelAttempts times. Returns how many succeeded now.
  std::size_t retryLabels();
  // Label patches that failed and wait for retryLabels() (not those queued by bind()).
  std::size_t pendingLabels() const;
  // Waits until every label queued by bind() so far was tried once, and every asynchronous label
  // PATCH sent so far was answered (not from an io thread of bindOn()'s contexts).
  void flushLabels();
  // Binds every queued bind and tries every queued label, then ends the threads. Idempotent.
  void stop();
  std::uint64_t labelFailures() const;  // failed label patches, for metrics

 private:
  struct PendingLabel {
    std::string ns;
    std::string name;
    std::string uid;
    int attempts = 0;
  };
  // The pod's uid as the precondition of its writes; "" when the mirror knows no uid for it.
  static std::string_view preconditionUid(const policy::Pod& pod);
  // What the pod's Binding carries for kube-apiserver to merge into its annotations: the GPU a
  // placed fractional pod was given; nothing for others.
  static std::map<std::string, std::string> bindingAnnotations(const policy::Pod& pod);
  // The merge patch that sets the over-quota label, with the pod's uid as precondition.
  ApiRequest labelRequest(const PendingLabel& pod) const;
  // Sends it synchronously; `httpStatus` gets the API server's answer's status.
  Status patchLabel(const PendingLabel& pod, int& httpStatus);
  // Patches the label; true when done or pointless to retry (`drop`).
  bool label(const PendingLabel& pod, bool& drop);
  // Patches the label; a failure worth retrying goes to pending_.
  void labelOrKeep(PendingLabel pending);
  // Counts and logs a failed label patch; true when retrying it is pointless (the pod is gone).
  bool labelFailed(const Status& status, int httpStatus);
  // A label PATCH's outcome: a failure worth retrying goes to pending_.
  void labelled(const PendingLabel& pending, const Status& status, int httpStatus);
  void labelLoop();
  struct BindJob {
    policy::Pod pod;
    std::string node;
    bool overQuota = false;
    state::BindDone done;
  };
  void bindLoop();
  // After the Binding succeeded: logs it, and queues the over-quota label when `overQuota`.
  void bound(const policy::Pod& pod, std::string_view node, bool overQuota);
  // The asynchronous binds (binder_async.cc); false when there is no sender or after stop().
  struct AsyncBinds;
  bool bindOverSender(const policy::Pod& pod, std::string_view node, bool overQuota,
                      state::BindDone& done);
  // Sends the label PATCH on a sender of the asynchronous binds; false (and `pending` untouched)
  // when there is none or after stop().
  bool labelOverSender(PendingLabel& pending);
  void stopAsync();
  void flushAsyncLabels();
  std::shared_ptr<AsyncBinds> async_;  // set by bindOn() before the binds start

  KubeClientPtr client_;
  KubeBinderOptions options_;
  mutable std::mutex mu_;
  std::vector<PendingLabel> pending_;   // GUARDED_BY(mu_)
  std::uint64_t labelFailures_ = 0;     // GUARDED_BY(mu_)
  std::deque<PendingLabel> queued_;     // labels bind() queued; GUARDED_BY(mu_)
  bool labelling_ = false;              // the worker is patching one; GUARDED_BY(mu_)
  bool stopping_ = false;               // GUARDED_BY(mu_)
  std::condition_variable queuedMore_;  // queued_ grew, or stopping_
  std::condition_variable drained_;     // queued_ is empty and labelling_ false
  std::thread worker_;                  // started by the first queued label; GUARDED_BY(mu_)

  // The bind threads. Lock order: bindMu_ is never held with mu_.
  std::mutex bindMu_;
  std::deque<BindJob> binds_;             // queued by bindAsync(); GUARDED_BY(bindMu_)
  std::size_t bindIdle_ = 0;              // bind threads waiting for a bind; GUARDED_BY(bindMu_)
  bool bindStopping_ = false;             // GUARDED_BY(bindMu_)
  std::condition_variable bindQueued_;    // binds_ grew, or bindStopping_
  std::vector<std::thread> bindThreads_;  // GUARDED_BY(bindMu_)
};

struct OverQuotaLabelerOptions {
  // A pod whose label removal was attempted is left alone for this long (the watch catches up).
  std::chrono::seconds retryAfter{60};
  std::chrono::milliseconds requestTimeout{10'000};
};

class OverQuotaLabeler {
 public:
  OverQuotaLabeler(KubeClientPtr client, ClockPtr clock, OverQuotaLabelerOptions options = {});

  // When `isLeader`: for each queue, counts the GPUs its non-borrowed pods hold (bound or assumed)
  // and unlabels its bound borrowed pods, oldest first, as long as they fit within deserved. Does
  // nothing on other replicas. Returns how many labels it removed.
  std::size_t reconcile(const policy::ClusterSnapshot& snapshot, bool isLeader);
  std::uint64_t removed() const;
  std::uint64_t failures() const;

 private:
  KubeClientPtr client_;
  ClockPtr clock_;
  OverQuotaLabelerOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Timestamp> attempted_;  // GUARDED_BY(mu_) uid -> when
  std::uint64_t removed_ = 0;                             // GUARDED_BY(mu_)
  std::uint64_t failures_ = 0;                            // GUARDED_BY(mu_)
};

}  // namespace gpufair::k8s
