// The reclaim loop as `gpufair serve` runs it: the evictor of the mode (memory for
// --cluster files, the Eviction API for a cluster), logs for every decision, Events in a cluster,
// and only the leader evicting.
//
//   --reclaim=on       evict borrowed pods so that queues get their deserved GPUs back (default:
//                      deserved quotas are a promise; a queue within them must not wait for
//                      borrowers to finish);
//   --reclaim=dry-run  plan and log (and, in a cluster, post ReclaimDryRun Events) but evict
//                      nothing: a safe first step when introducing gpufair to a busy cluster;
//   --reclaim=off      never evict.
//   --reclaim-period   how often a round runs (default 5s); --reclaim-hold how long freed GPUs
//                      are held for the reclaimer that has not bound yet (default 2m).
//
// Life cycle: create -> start() -> stop() (idempotent; the destructor stops). Thread-safety: as
// ReclaimController; construct, start and stop from one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gpufair/common/clock.h"
#include "gpufair/state/mirror.h"

#include "reclaim_controller.h"

namespace gpufair::app {

class KubeSource;

class ReclaimRunner {
 public:
  // kube null: file mode (victims are deleted from the mirror; always the leader).
  ReclaimRunner(state::Mirror& mirror, ReclaimSettings settings, ClockPtr clock, KubeSource* kube);
  ~ReclaimRunner();
  ReclaimRunner(const ReclaimRunner&) = delete;
  ReclaimRunner& operator=(const ReclaimRunner&) = delete;

  // Told the queue of every pod evicted (for metrics). Set before start().
  using EvictionHook = std::function<void(const std::string& queue)>;
  void setEvictionHook(EvictionHook hook) { evictionHook_ = std::move(hook); }

  void start();  // no-op when --reclaim=off
  void stop();
  ReclaimController& controller() { return *controller_; }

 private:
  class LogObserver;
  EvictionHook evictionHook_;  // before log_, which refers to it
  state::EvictorPtr evictor_;
  std::unique_ptr<state::ReclaimObserver> events_;  // in a cluster: pod Events
  std::unique_ptr<LogObserver> log_;
  std::unique_ptr<ReclaimController> controller_;
};

}  // namespace gpufair::app
