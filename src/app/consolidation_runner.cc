#include "consolidation_runner.h"

#include <spdlog/spdlog.h>

#include "gpufair/k8s/evictor.h"
#include "gpufair/state/mirror_evictor.h"

#include "kube_source.h"

namespace gpufair::app {

// Logs every decision, feeds the metrics hooks and passes it on to the Events observer, if any.
class ConsolidationRunner::LogObserver final : public state::ConsolidationObserver {
 public:
  LogObserver(state::ConsolidationObserver* next, const ConsolidationRunner::Hooks& hooks)
      : next_(next), hooks_(hooks) {}
  void moved(const policy::ConsolidationPlan& plan, const policy::ConsolidationMove& m) override {
    spdlog::info("consolidate: evicted {} on {} (to be recreated on {}) for {}", m.pod->key(),
                 m.from, m.to, plan.waiting);
    if (hooks_.moved) hooks_.moved();
    if (next_) next_->moved(plan, m);
  }
  void evictionFailed(const policy::ConsolidationPlan& plan, const policy::ConsolidationMove& m,
                      const state::EvictResult& result) override {
    spdlog::warn("consolidate: could not evict {} for {} ({}): {}", m.pod->key(), plan.waiting,
                 state::evictOutcomeName(result.outcome), result.message);
    if (next_) next_->evictionFailed(plan, m, result);
  }
  void consolidating(const policy::ConsolidationPlan& plan) override {
    spdlog::info("{}", plan.reason);
    if (next_) next_->consolidating(plan);
  }
  void waiting(const policy::Pod& pod, const std::string& reason) override {
    spdlog::debug("consolidate: {} waits on fragmentation: {}", pod.key(), reason);
    if (next_) next_->waiting(pod, reason);
  }
  void dryRun(const policy::ConsolidationPlan& plan) override {
    spdlog::info("consolidate: dry run: {}", plan.reason);
    if (next_) next_->dryRun(plan);
  }
  void gaveUp(const policy::ConsolidationPlan& plan) override {
    spdlog::warn("consolidate: gave up on {}: holds on {} released", plan.waiting, plan.node);
    if (next_) next_->gaveUp(plan);
  }
  void roundFailed(const std::string& what) override {
    spdlog::error("consolidate: round failed: {}", what);
    if (next_) next_->roundFailed(what);
  }

 private:
  state::ConsolidationObserver* next_;
  const ConsolidationRunner::Hooks& hooks_;  // the runner's; set before start()
};

ConsolidationRunner::ConsolidationRunner(state::Mirror& mirror, ConsolidationSettings settings,
                                         ClockPtr clock, KubeSource* kube) {
  std::function<bool()> isLeader;
  if (kube != nullptr) {
    evictor_ = std::make_unique<k8s::KubeEvictor>(kube->client());
    events_ = std::make_unique<k8s::ConsolidationEvents>(kube->events());
    isLeader = [kube] { return kube->isLeader(); };
  } else {
    evictor_ = std::make_unique<state::MirrorEvictor>(mirror);
  }
  log_ = std::make_unique<LogObserver>(events_.get(), hooks_);
  controller_ = std::make_unique<ConsolidationController>(
      mirror, *evictor_, std::move(clock), settings, std::move(isLeader), log_.get());
  controller_->setRoundHook([this](const ConsolidationRoundStats& stats) {
    if (stats.ran && hooks_.waitingOnFragmentation) hooks_.waitingOnFragmentation(stats.fragmented);
  });
}

ConsolidationRunner::~ConsolidationRunner() {
  stop();
}

void ConsolidationRunner::start() {
  if (controller_->settings().enabled) controller_->start();
}

void ConsolidationRunner::stop() {
  controller_->stop();
}

}  // namespace gpufair::app
