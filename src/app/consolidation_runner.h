// The consolidation loop as `gpufair serve` runs it: the evictor of the mode (memory for
// --cluster files, the Eviction API for a cluster), logs for every decision, Events in a cluster,
// metrics, and only the leader moving pods.
//
//   --consolidate=on       move movable pods (label gpufair.io/movable=true, or borrowed) so that
//                          a pod whose GPUs are free in total but on no one node fits;
//   --consolidate=dry-run  plan and log (and, in a cluster, post ConsolidationDryRun Events) but
//                          move nothing;
//   --consolidate=off      never move (the default).
//   --consolidate-period   how often a round runs (default 10s); --consolidate-timeout how long a
//                          plan holds the freed node and the movers' new places (default 5m).
//
// Life cycle: create -> start() -> stop() (idempotent; the destructor stops). Thread-safety: as
// ConsolidationController; construct, start and stop from one thread.
#pragma once

#include <functional>
#include <memory>

#include "gpufair/common/clock.h"
#include "gpufair/state/mirror.h"

#include "consolidation_controller.h"

namespace gpufair::app {

class KubeSource;

class ConsolidationRunner {
 public:
  // kube null: file mode (movers are deleted from the mirror; always the leader).
  ConsolidationRunner(state::Mirror& mirror, ConsolidationSettings settings, ClockPtr clock,
                      KubeSource* kube);
  ~ConsolidationRunner();
  ConsolidationRunner(const ConsolidationRunner&) = delete;
  ConsolidationRunner& operator=(const ConsolidationRunner&) = delete;

  // Told of every pod moved, and of the round's count of pods waiting on fragmentation (for
  // metrics). Set before start().
  struct Hooks {
    std::function<void()> moved;
    std::function<void(int)> waitingOnFragmentation;
  };
  void setHooks(Hooks hooks) { hooks_ = std::move(hooks); }

  void start();  // no-op when --consolidate=off
  void stop();
  ConsolidationController& controller() { return *controller_; }

 private:
  class LogObserver;
  Hooks hooks_;  // before log_, which refers to it
  state::EvictorPtr evictor_;
  std::unique_ptr<state::ConsolidationObserver> events_;  // in a cluster: pod Events
  std::unique_ptr<LogObserver> log_;
  std::unique_ptr<ConsolidationController> controller_;
};

}  // namespace gpufair::app
