#include "reclaim_controller.h"

#include <algorithm>
#include <exception>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "round_support.h"

namespace gpufair::app {

using state::EvictOutcome;
using state::EvictResult;

// What one round knows beyond the snapshot: what is already going, held and promised.
struct ReclaimController::Round {
  Timestamp now{};
  policy::SnapshotPtr snap;
  std::vector<policy::PodPtr> releasing;
  std::set<std::string, std::less<>> excludedNodes;
  std::vector<policy::PodPtr> promised;
  std::set<std::string, std::less<>> drainedQueues;  // queues that lost pods this round
  std::map<std::string, std::uint64_t> evictedByQueue;
  ReclaimRoundStats stats;
  std::vector<policy::ReclaimPlan> dryRun;
};

ReclaimController::ReclaimController(state::Mirror& mirror, state::Evictor& evictor, ClockPtr clock,
                                     ReclaimSettings settings, std::function<bool()> isLeader,
                                     state::ReclaimObserver* observer)
    : mirror_(mirror),
      evictor_(evictor),
      clock_(std::move(clock)),
      settings_(settings),
      isLeader_(std::move(isLeader)),
      observer_(observer),
      loop_(
          settings_.period, [this] { runOnce(); },
          [this](const std::string& what) {
            if (observer_) observer_->roundFailed(what);
          }) {}

ReclaimController::~ReclaimController() {
  stop();
}

void ReclaimController::start() {
  loop_.start();
}

void ReclaimController::stop() {
  loop_.stop();
}

std::vector<policy::ReclaimPlan> ReclaimController::lastDryRun() const {
  std::lock_guard lock(mu_);
  return lastDryRun_;
}

ReclaimRoundStats ReclaimController::lastRound() const {
  std::lock_guard lock(mu_);
  return lastRound_;
}

std::uint64_t ReclaimController::evictionsTotal() const {
  std::lock_guard lock(mu_);
  return evictionsTotal_;
}

std::map<std::string, std::uint64_t> ReclaimController::evictionsByQueue() const {
  std::lock_guard lock(mu_);
  return evictionsByQueue_;
}

void ReclaimController::pruneInFlight(Timestamp now) {
  auto present = [this](const policy::PodPtr& p) {
    auto current = mirror_.findPod(p->uid);
    return current != nullptr && !current->isFinished();
  };
  for (auto it = inFlight_.begin(); it != inFlight_.end();) {
    auto reclaimer = mirror_.findPod(it->first);
    const bool done = reclaimer == nullptr || !reclaimer->nodeName.empty() ||
                      reclaimer->isFinished() || now >= it->second.until;
    if (done) {
      // Bound: the mirror dropped the reservation as the pod took it. Otherwise give it back.
      mirror_.releaseReservation(it->first);
      it = inFlight_.erase(it);
      continue;
    }
    auto& victims = it->second.victims;
    victims.erase(std::remove_if(victims.begin(), victims.end(),
                                 [&](const policy::PodPtr& p) { return !present(p); }),
                  victims.end());
    ++it;
  }
  orphans_.erase(std::remove_if(orphans_.begin(), orphans_.end(),
                                [&](const policy::PodPtr& p) { return !present(p); }),
                 orphans_.end());
}

ReclaimRoundStats ReclaimController::runOnce() {
  std::lock_guard round(roundMu_);
  Round r;
  if (!settings_.enabled || (isLeader_ && !isLeader_())) {
    std::lock_guard lock(mu_);
    lastRound_ = r.stats;
    return r.stats;
  }
  r.stats.ran = true;
  r.now = clock_->now();
  pruneInFlight(r.now);
  r.snap = mirror_.snapshot();
  r.releasing = orphans_;
  for (const auto& [uid, f] : inFlight_) {
    r.excludedNodes.insert(f.node);
    r.promised.push_back(f.reclaimer);
    r.releasing.insert(r.releasing.end(), f.victims.begin(), f.victims.end());
  }

  // Owed pods, most owed queue first, then the oldest pod.
  struct Owed {
    policy::PodPtr pod;
    MilliGpu deficit = 0;
  };
  std::vector<Owed> owed;
  for (const auto& pod : r.snap->pending()) {
    if (pod->gpus <= 0 || !pod->nodeName.empty() || pod->isFinished() ||
        inFlight_.count(pod->uid) > 0 || pod->inGang()) {
      continue;
    }
    const policy::QueueState* q = r.snap->findQueue(pod->queue);
    if (q == nullptr) continue;
    const MilliGpu entitled = std::max(q->quota.gpu.deserved, policy::owedGpus(*q));
    if (q->allocated + pod->gpus > entitled) continue;
    owed.push_back({pod, entitled - q->allocated});
  }
  std::sort(owed.begin(), owed.end(), [](const Owed& a, const Owed& b) {
    if (a.deficit != b.deficit) return a.deficit > b.deficit;
    if (a.pod->queue != b.pod->queue) return a.pod->queue < b.pod->queue;
    return olderFirst(*a.pod, *b.pod);
  });

  int acted = 0;
  AlikeMemo<Attempt> alike;  // one plan per class of alike pods while the round is unchanged
  for (const Owed& o : owed) {
    if (acted >= settings_.maxReclaimsPerRound) break;
    // No ping-pong: a queue that just gave GPUs back does not take others' in the same round.
    if (r.drainedQueues.count(o.pod->queue) > 0) continue;
    ++r.stats.owed;
    policy::ReclaimOptions options = optionsFor(r);
    const Attempt attempt = alike.get(policy::reclaimClassKey(*r.snap, *o.pod, options),
                                      [&] { return reclaimFor(r, o.pod, std::move(options)); });
    switch (attempt.result) {
      case Result::kActed:
        ++acted;
        break;
      case Result::kWaiting:
        ++r.stats.waiting;
        if (observer_) observer_->waiting(*o.pod, attempt.reason);
        break;
      case Result::kNotNeeded:
        break;
    }
  }
  r.stats.inFlight = static_cast<int>(inFlight_.size());
  if (observer_) observer_->roundEnded();
  std::lock_guard lock(mu_);
  lastRound_ = r.stats;
  evictionsTotal_ += static_cast<std::uint64_t>(r.stats.evicted);
  for (const auto& [queue, n] : r.evictedByQueue) evictionsByQueue_[queue] += n;
  if (settings_.dryRun) lastDryRun_ = std::move(r.dryRun);
  return r.stats;
}

policy::ReclaimOptions ReclaimController::optionsFor(const Round& r) {
  policy::ReclaimOptions options;
  options.now = r.now;
  options.excludedNodes = r.excludedNodes;
  options.promised = r.promised;
  options.releasing = r.releasing;
  return options;
}

ReclaimController::Attempt ReclaimController::reclaimFor(Round& r, const policy::PodPtr& pod,
                                                         policy::ReclaimOptions options) {
  std::vector<policy::PodPtr> evictedForThis;
  std::string reason;
  bool firstPlanOnly = false;  // the first plan was no plan, and nothing was evicted
  for (int attempt = 0; attempt < settings_.maxAttempts; ++attempt) {
    options.releasing = r.releasing;
    policy::ReclaimOutcome out = policy::planReclaim(*r.snap, *pod, options);
    if (out.kind != policy::ReclaimOutcome::Kind::kPlanned) {
      firstPlanOnly = attempt == 0;
      if (out.kind == policy::ReclaimOutcome::Kind::kNotNeeded && evictedForThis.empty())
        return {Result::kNotNeeded, {}, firstPlanOnly};
      reason = std::move(out.reason);
      break;
    }
    const policy::ReclaimPlan& plan = *out.plan;
    if (settings_.dryRun) {
      recordDryRun(r, pod, plan);
      return {Result::kActed, {}, false};
    }
    // The waiting pod must still exist and wait, as the API server (the watch) says now: a pod
    // deleted or bound since the round's snapshot is worth no eviction.
    if (!stillWaits(*pod)) {
      spdlog::info("reclaim: {} no longer waits; nothing evicted for it", pod->key());
      return {evictedForThis.empty() ? Result::kNotNeeded : Result::kActed, {}, false};
    }
    const bool dropped = !evictVictims(r, plan, options, evictedForThis, reason);
    r.snap = mirror_.snapshot();  // file mode: the victims are gone already
    if (dropped) continue;
    holdForReclaimer(r, pod, plan, std::move(evictedForThis));
    return {Result::kActed, {}, false};
  }
  orphans_.insert(orphans_.end(), evictedForThis.begin(), evictedForThis.end());
  return {Result::kWaiting, std::move(reason), firstPlanOnly};
}

void ReclaimController::recordDryRun(Round& r, const policy::PodPtr& pod,
                                     const policy::ReclaimPlan& plan) {
  for (const auto& v : plan.victims) {
    r.releasing.push_back(v.pod);
    r.drainedQueues.insert(v.pod->queue);
  }
  r.excludedNodes.insert(plan.node);
  r.promised.push_back(pod);
  ++r.stats.planned;
  r.dryRun.push_back(plan);
  if (observer_) observer_->dryRun(plan);
}

bool ReclaimController::stillWaits(const policy::Pod& pod) const {
  const policy::PodPtr current = mirror_.findPod(pod.uid);
  return current != nullptr && current->nodeName.empty() && !current->isFinished() &&
         !current->terminating;
}

bool ReclaimController::evictVictims(Round& r, const policy::ReclaimPlan& plan,
                                     policy::ReclaimOptions& options,
                                     std::vector<policy::PodPtr>& evicted, std::string& reason) {
  for (const auto& victim : plan.victims) {
    EvictResult result = evictor_.evict(*victim.pod, victim.reason);
    if (result.outcome == EvictOutcome::kEvicted || result.outcome == EvictOutcome::kNotFound) {
      evicted.push_back(victim.pod);
      r.releasing.push_back(victim.pod);
      r.drainedQueues.insert(victim.pod->queue);
      if (result.outcome == EvictOutcome::kEvicted) {
        ++r.stats.evicted;
        ++r.evictedByQueue[victim.pod->queue];
        if (observer_) observer_->evicted(plan, victim);
      }
      continue;
    }
    ++r.stats.refused;
    if (observer_) observer_->evictionFailed(plan, victim, result);
    options.spared.insert(victim.pod->uid);
    reason = "eviction of " + victim.pod->key() + " " + evictOutcomeName(result.outcome) + ": " +
             result.message;
    return false;
  }
  return true;
}

void ReclaimController::holdForReclaimer(Round& r, const policy::PodPtr& pod,
                                         const policy::ReclaimPlan& plan,
                                         std::vector<policy::PodPtr> victims) {
  // Keep the freed GPUs for the reclaimer: no other pod (the victims' queue included) may take
  // them until it binds, or holdFor passes.
  policy::Reservation held;
  held.node = plan.node;
  held.gpus = pod->gpus;
  held.holder = pod->uid;
  held.queue = pod->queue;
  held.reason = "reclaim";
  held.holderName = pod->key();
  mirror_.reserve(std::move(held), settings_.holdFor);
  inFlight_[pod->uid] = {pod, plan.node, std::move(victims), r.now + settings_.holdFor};
  r.excludedNodes.insert(plan.node);
  r.promised.push_back(pod);
  ++r.stats.planned;
  if (observer_) observer_->reclaimed(plan);
}

}  // namespace gpufair::app
