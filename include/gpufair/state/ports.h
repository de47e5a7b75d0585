// The ports: how gpufair's decisions leave the process. The Kubernetes adapter (k8s) implements
// each of them against the API server, the in-memory file mode (`serve --cluster`) against the
// mirror; the parts that decide (api's ExtenderService, app's reclaim loop) only see these
// interfaces. They live here, low in the module graph, so that k8s and api can both reach them.
//
//   Binder            /bind makes a placement real (k8s::KubeBinder, api::MemoryBinder)
//   DecisionObserver  decisions a person should see on the pod (k8s::DecisionEvents)
//   Evictor           a reclaim victim leaves (k8s::KubeEvictor, state::MirrorEvictor)
//   ReclaimObserver   the reclaim loop's decisions (k8s::ReclaimEvents, app's log)
//   ConsolidationObserver  the consolidation loop's decisions (k8s::ConsolidationEvents, app's log)
//
// Thread-safety: stated per interface below.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "gpufair/common/status.h"
#include "gpufair/policy/consolidation.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/reclaim.h"

namespace gpufair::state {

// How /bind makes a placement real. The k8s module posts a Binding (and labels borrowed pods
// gpufair.io/over-quota=true); in file mode api::MemoryBinder records the binding and nothing
// else. ExtenderService calls bindAsync() (the webhook; bind() for in-process callers) after the
// mirror assumed the placement; on failure it forgets the assumption. Thread-safety:
// implementations must be safe to call from several threads at once. bindAsync() is called on an
// io thread: an implementation that waits on the network does so on threads of its own (the
// default binds on the calling thread, for binders that do not wait).
using BindDone = std::function<void(Status)>;
class Binder {
 public:
  virtual ~Binder() = default;
  // Binds `pod` (as the mirror assumed it: a fractional pod has its gpuIndex and the annotation
  // gpufair.io/gpu-index set) to `node`. overQuota: the pod was admitted as borrowed and must
  // carry the label gpufair.io/over-quota=true. A failure is Status::error with a reason for the
  // scheduler.
  virtual Status bind(const policy::Pod& pod, std::string_view node, bool overQuota) = 0;
  // bind(), maybe on another thread: `done` gets its outcome exactly once, before bindAsync()
  // returns or later on one of the binder's threads. The arguments are copied as needed.
  virtual void bindAsync(const policy::Pod& pod, std::string_view node, bool overQuota,
                         BindDone done) {
    done(bind(pod, node, overQuota));
  }
  // Whether a successful bind() is final at once: no watch event will confirm it, so the caller
  // confirms the assumption itself (and records the over-quota label in the mirror).
  virtual bool confirmsImmediately() const = 0;
};
using BinderPtr = std::unique_ptr<Binder>;

// Told of decisions a person should see on the pod (as Kubernetes Events in a cluster).
// Called on io threads (borrowed(): on the binder's thread when the Binding completes there);
// implementations must be quick and thread-safe (queue, don't block).
class DecisionObserver {
 public:
  virtual ~DecisionObserver() = default;
  // /filter left the pod no node; `reason` is the first reason in words.
  virtual void rejected(const policy::Pod& pod, const std::string& reason) = 0;
  // /bind placed the pod as borrowed (over its queue's deserved quota).
  virtual void borrowed(const policy::Pod& pod, const std::string& node,
                        const std::string& queue) = 0;
};

enum class EvictOutcome {
  kEvicted,   // accepted: the pod is going
  kRefused,   // a PodDisruptionBudget refuses it now (HTTP 429)
  kNotFound,  // already gone (counts as evicted)
  kError,     // anything else; message says what
};
const char* evictOutcomeName(EvictOutcome outcome);

struct EvictResult {
  EvictOutcome outcome = EvictOutcome::kError;
  std::string message;  // empty when evicted
};

// How a victim leaves: the policy/v1 Eviction API in a cluster, the mirror in file mode.
// Thread-safety: called from the reclaim loop's round only (one call at a time).
class Evictor {
 public:
  virtual ~Evictor() = default;
  // `reason` is the sentence for the victim's Event and the eviction's log line.
  virtual EvictResult evict(const policy::Pod& pod, const std::string& reason) = 0;
};
using EvictorPtr = std::unique_ptr<Evictor>;

// The reclaim loop's decisions, for Events, logs and metrics. Every method has an empty default.
// Thread-safety: called on the loop's round thread, one call at a time.
class ReclaimObserver {
 public:
  virtual ~ReclaimObserver() = default;
  // A victim was evicted for `plan` (victim.reason says by whom and why).
  virtual void evicted(const policy::ReclaimPlan& /*plan*/,
                       const policy::ReclaimVictim& /*victim*/) {}
  // A victim's eviction was refused or failed; the plan is dropped.
  virtual void evictionFailed(const policy::ReclaimPlan& /*plan*/,
                              const policy::ReclaimVictim& /*victim*/,
                              const EvictResult& /*result*/) {}
  // Every victim of `plan` is going; its node is held for the reclaimer.
  virtual void reclaimed(const policy::ReclaimPlan& /*plan*/) {}
  // The reclaimer is owed GPUs but no plan could be carried out this round. The reason does not
  // name the pod: pods waiting for the same reason get the same text.
  virtual void waiting(const policy::Pod& /*reclaimer*/, const std::string& /*reason*/) {}
  // Dry run: what would have been evicted.
  virtual void dryRun(const policy::ReclaimPlan& /*plan*/) {}
  // A round the loop ran (as the leader) is over; its calls above came before.
  virtual void roundEnded() {}
  // A round stopped on an unexpected exception (the loop goes on with the next round).
  virtual void roundFailed(const std::string& /*what*/) {}
};

// The consolidation loop's decisions, for Events, logs and metrics. Every method has an empty
// default. Thread-safety: called on the loop's round thread, one call at a time.
class ConsolidationObserver {
 public:
  virtual ~ConsolidationObserver() = default;
  // A mover was evicted for `plan` (move.reason says for whom).
  virtual void moved(const policy::ConsolidationPlan& /*plan*/,
                     const policy::ConsolidationMove& /*move*/) {}
  // A mover's eviction was refused (PodDisruptionBudget) or failed; the plan is dropped.
  virtual void evictionFailed(const policy::ConsolidationPlan& /*plan*/,
                              const policy::ConsolidationMove& /*move*/,
                              const EvictResult& /*result*/) {}
  // Every mover is going; the target is held for the waiting pod, the destinations for the
  // movers' replacements.
  virtual void consolidating(const policy::ConsolidationPlan& /*plan*/) {}
  // The pod waits on fragmentation alone and no plan could be carried out (reason says why).
  virtual void waiting(const policy::Pod& /*pod*/, const std::string& /*reason*/) {}
  // Dry run: what would move.
  virtual void dryRun(const policy::ConsolidationPlan& /*plan*/) {}
  // The plan's holds timed out before the waiting pod and the replacements were placed.
  virtual void gaveUp(const policy::ConsolidationPlan& /*plan*/) {}
  virtual void roundFailed(const std::string& /*what*/) {}
};

}  // namespace gpufair::state
