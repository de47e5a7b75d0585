#include "reclaim_runner.h"

#include <map>
#include <string>

#include <spdlog/spdlog.h>

#include "gpufair/k8s/evictor.h"
#include "gpufair/state/mirror_evictor.h"

#include "kube_source.h"

namespace gpufair::app {

// Logs every decision and passes it on to the Events observer, if any.
class ReclaimRunner::LogObserver final : public state::ReclaimObserver {
 public:
  LogObserver(state::ReclaimObserver* next, const ReclaimRunner::EvictionHook& hook)
      : next_(next), hook_(hook) {}
  void evicted(const policy::ReclaimPlan& plan, const policy::ReclaimVictim& victim) override {
    spdlog::info("reclaim: evicted {} on {} for {}: {}", victim.pod->key(), victim.pod->nodeName,
                 plan.reclaimer, victim.reason);
    if (hook_) hook_(victim.pod->queue);
    if (next_) next_->evicted(plan, victim);
  }
  void evictionFailed(const policy::ReclaimPlan& plan, const policy::ReclaimVictim& victim,
                      const state::EvictResult& result) override {
    spdlog::warn("reclaim: could not evict {} for {} ({}): {}", victim.pod->key(), plan.reclaimer,
                 state::evictOutcomeName(result.outcome), result.message);
    if (next_) next_->evictionFailed(plan, victim, result);
  }
  void reclaimed(const policy::ReclaimPlan& plan) override {
    spdlog::info("reclaim: {}", plan.reason);
    if (next_) next_->reclaimed(plan);
  }
  // One line per pod at debug; at info one line per reason and round (a backlog of thousands of
  // owed pods waiting for the same reason would otherwise log thousands of lines per round).
  void waiting(const policy::Pod& reclaimer, const std::string& reason) override {
    spdlog::debug("reclaim: {} waits: {}", reclaimer.key(), reason);
    ++waiting_.try_emplace(reason, Waiting{reclaimer.key(), 0}).first->second.pods;
    if (next_) next_->waiting(reclaimer, reason);
  }
  void roundEnded() override {
    for (const auto& [reason, w] : waiting_) {
      if (w.pods == 1) {
        spdlog::info("reclaim: {} waits: {}", w.first, reason);
      } else {
        spdlog::info("reclaim: {} and {} more owed pods wait: {}", w.first, w.pods - 1, reason);
      }
    }
    waiting_.clear();
    if (next_) next_->roundEnded();
  }
  void dryRun(const policy::ReclaimPlan& plan) override {
    spdlog::info("reclaim: {}", k8s::describeDryRun(plan));
    if (next_) next_->dryRun(plan);
  }
  void roundFailed(const std::string& what) override {
    spdlog::error("reclaim: round failed: {}", what);
    waiting_.clear();
    if (next_) next_->roundFailed(what);
  }

 private:
  struct Waiting {
    std::string first;  // the first pod's key
    int pods = 0;
  };
  state::ReclaimObserver* next_;
  const ReclaimRunner::EvictionHook& hook_;  // the runner's; set before start()
  std::map<std::string, Waiting> waiting_;   // this round's, by reason
};

ReclaimRunner::ReclaimRunner(state::Mirror& mirror, ReclaimSettings settings, ClockPtr clock,
                             KubeSource* kube) {
  std::function<bool()> isLeader;
  if (kube != nullptr) {
    evictor_ = std::make_unique<k8s::KubeEvictor>(kube->client());
    events_ = std::make_unique<k8s::ReclaimEvents>(kube->events());
    isLeader = [kube] { return kube->isLeader(); };
  } else {
    evictor_ = std::make_unique<state::MirrorEvictor>(mirror);
  }
  log_ = std::make_unique<LogObserver>(events_.get(), evictionHook_);
  controller_ = std::make_unique<ReclaimController>(mirror, *evictor_, std::move(clock), settings,
                                                    std::move(isLeader), log_.get());
}

ReclaimRunner::~ReclaimRunner() {
  stop();
}

void ReclaimRunner::start() {
  if (controller_->settings().enabled) controller_->start();
}

void ReclaimRunner::stop() {
  controller_->stop();
}

}  // namespace gpufair::app
