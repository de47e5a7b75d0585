#include "consolidation_controller.h"

#include <algorithm>
#include <exception>

#include <spdlog/spdlog.h>

#include "gpufair/policy/reclaim.h"
#include "gpufair/policy/reservation.h"

#include "round_support.h"

namespace gpufair::app {

using state::EvictOutcome;
using state::EvictResult;

// What one round knows beyond the snapshot: what is already moving and held.
struct ConsolidationController::Round {
  Timestamp now{};
  policy::SnapshotPtr snap;
  policy::ConsolidationOptions options;  // releasing, excluded nodes, spared
  ConsolidationRoundStats stats;
  std::vector<policy::ConsolidationPlan> dryRun;
  std::map<std::string, std::string> explained;
};

ConsolidationController::ConsolidationController(state::Mirror& mirror, state::Evictor& evictor,
                                                 ClockPtr clock, ConsolidationSettings settings,
                                                 std::function<bool()> isLeader,
                                                 state::ConsolidationObserver* observer)
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

ConsolidationController::~ConsolidationController() {
  stop();
}

void ConsolidationController::start() {
  loop_.start();
}

void ConsolidationController::stop() {
  loop_.stop();
}

std::vector<policy::ConsolidationPlan> ConsolidationController::lastDryRun() const {
  std::lock_guard lock(mu_);
  return lastDryRun_;
}

ConsolidationRoundStats ConsolidationController::lastRound() const {
  std::lock_guard lock(mu_);
  return lastRound_;
}

std::uint64_t ConsolidationController::movesTotal() const {
  std::lock_guard lock(mu_);
  return movesTotal_;
}

std::optional<std::string> ConsolidationController::explain(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = explained_.find(uid);
  if (it == explained_.end()) return std::nullopt;
  return it->second;
}

// Whether the waiting pod (uid) or gang (gang key) of an in-flight plan still waits.
bool ConsolidationController::waitsStill(const std::string& key) const {
  if (!key.starts_with(policy::kGangHolderPrefix)) {
    const policy::PodPtr waiting = mirror_.findPod(key);
    return waiting != nullptr && waiting->nodeName.empty() && !waiting->isFinished();
  }
  const policy::SnapshotPtr snap = mirror_.snapshot();
  return std::any_of(snap->pending().begin(), snap->pending().end(), [&](const policy::PodPtr& p) {
    return p->gangKey() == key && p->nodeName.empty() && !p->isFinished();
  });
}

void ConsolidationController::pruneInFlight(Round& r) {
  const std::vector<policy::Reservation> held = mirror_.reservations();
  auto holds = [&](const std::string& holder) {
    return std::any_of(held.begin(), held.end(),
                       [&](const policy::Reservation& x) { return x.holder == holder; });
  };
  for (auto it = inFlight_.begin(); it != inFlight_.end();) {
    InFlight& f = it->second;
    f.waits = waitsStill(it->first);
    const bool waits = f.waits;
    if (!waits) mirror_.releaseReservation(it->first);  // placed (taken) or gone
    auto& hs = f.holders;
    hs.erase(std::remove_if(hs.begin(), hs.end(), [&](const auto& h) { return !holds(h); }),
             hs.end());
    if (r.now >= f.until) {
      mirror_.releaseReservation(it->first);
      for (const auto& h : hs) mirror_.releaseReservation(h);
      ++r.stats.gaveUp;
      if (observer_) observer_->gaveUp(f.plan);
      it = inFlight_.erase(it);
      continue;
    }
    if (!waits && hs.empty()) {
      it = inFlight_.erase(it);
      continue;
    }
    auto& ms = f.movers;
    ms.erase(std::remove_if(ms.begin(), ms.end(),
                            [&](const policy::PodPtr& p) {
                              const policy::PodPtr now = mirror_.findPod(p->uid);
                              return now == nullptr || now->isFinished();
                            }),
             ms.end());
    ++it;
  }
  for (const auto& [key, f] : inFlight_) {
    if (f.waits) r.options.excludedNodes.insert(f.targets.begin(), f.targets.end());
    for (const auto& m : f.plan.moves) r.options.excludedNodes.insert(m.to);
    r.options.releasing.insert(r.options.releasing.end(), f.movers.begin(), f.movers.end());
  }
}

ConsolidationRoundStats ConsolidationController::runOnce() {
  std::lock_guard round(roundMu_);
  Round r;
  if (!settings_.enabled || (isLeader_ && !isLeader_())) {
    std::lock_guard lock(mu_);
    lastRound_ = r.stats;
    return r.stats;
  }
  r.stats.ran = true;
  r.now = clock_->now();
  r.options.now = r.now;
  pruneInFlight(r);
  r.snap = mirror_.snapshot();

  std::vector<policy::PodPtr> pending;
  std::vector<policy::PodPtr> gangs;  // the oldest pending member of each gang
  for (const auto& pod : r.snap->pending()) {
    if (pod->gpus <= 0 || !pod->nodeName.empty() || pod->isFinished()) continue;
    if (pod->inGang()) {
      if (pod->gangError.empty()) gangs.push_back(pod);
      continue;
    }
    if (inFlight_.count(pod->uid) > 0) {
      ++r.stats.fragmented;  // still waiting for the room made for it
      r.explained[pod->uid] = inFlight_.at(pod->uid).plan.reason + " (in progress)";
      continue;
    }
    pending.push_back(pod);
  }
  std::sort(pending.begin(), pending.end(),
            [](const auto& a, const auto& b) { return olderFirst(*a, *b); });
  int acted = 0;
  AlikeMemo<Attempt> alike;  // one plan per class of alike pods while the round is unchanged
  for (const policy::PodPtr& pod : pending) {
    if (acted >= settings_.maxPlansPerRound) break;
    const Attempt attempt = alike.get(policy::consolidationClassKey(*r.snap, *pod),
                                      [&] { return consolidateFor(r, pod); });
    if (attempt.fragmented) ++r.stats.fragmented;
    if (attempt.result == Result::kActed) ++acted;
    if (attempt.result == Result::kWaiting) {
      r.explained[pod->uid] = "waits on fragmentation: " + attempt.reason;
      if (observer_) observer_->waiting(*pod, attempt.reason);
    }
  }
  std::stable_sort(gangs.begin(), gangs.end(),
                   [](const auto& a, const auto& b) { return olderFirst(*a, *b); });
  std::set<std::string> gangsSeen;
  for (const policy::PodPtr& member : gangs) {
    if (!gangsSeen.insert(member->gangKey()).second) continue;
    if (acted >= settings_.maxPlansPerRound) break;
    if (consolidateGang(r, member) == Result::kActed) ++acted;
  }
  r.stats.inFlight = static_cast<int>(inFlight_.size());
  {
    std::lock_guard lock(mu_);
    lastRound_ = r.stats;
    movesTotal_ += static_cast<std::uint64_t>(r.stats.moved);
    explained_ = std::move(r.explained);
    if (settings_.dryRun) lastDryRun_ = std::move(r.dryRun);
  }
  if (roundHook_) roundHook_(r.stats);
  return r.stats;
}

bool ConsolidationController::reclaimServes(const Round& r, const policy::Pod& pod) const {
  if (!settings_.reclaimEnabled) return false;
  policy::ReclaimOptions options;
  options.now = r.now;
  options.releasing = r.options.releasing;
  return policy::planReclaim(*r.snap, pod, options).kind == policy::ReclaimOutcome::Kind::kPlanned;
}

ConsolidationController::Attempt ConsolidationController::consolidateFor(
    Round& r, const policy::PodPtr& pod) {
  Attempt out;
  auto done = [&out](Result result) {
    out.result = result;
    return out;
  };
  for (int attempt = 0; attempt < settings_.maxAttempts; ++attempt) {
    policy::ConsolidationOutcome planned = policy::planConsolidation(*r.snap, *pod, r.options);
    if (attempt == 0) out.fragmented = planned.fragmented();
    if (planned.kind != policy::ConsolidationOutcome::Kind::kPlanned) {
      out.alike = attempt == 0;  // nothing was moved for it: its class comes to the same
      out.reason = std::move(planned.reason);
      return done(planned.fragmented() ? Result::kWaiting : Result::kSkipped);
    }
    if (reclaimServes(r, *pod)) {
      r.explained[pod->uid] = "waits on fragmentation; reclaim frees a node for it first";
      return done(Result::kSkipped);
    }
    const policy::ConsolidationPlan& plan = *planned.plan;
    if (settings_.dryRun) {
      for (const auto& m : plan.moves) r.options.releasing.push_back(m.pod);
      r.options.excludedNodes.insert(plan.node);
      for (const auto& m : plan.moves) r.options.excludedNodes.insert(m.to);
      ++r.stats.planned;
      r.explained[pod->uid] = "dry run: " + plan.reason;
      r.dryRun.push_back(plan);
      if (observer_) observer_->dryRun(plan);
      return done(Result::kActed);
    }
    if (!stillWaits(*pod)) return done(Result::kSkipped);
    std::vector<policy::PodPtr> evicted;
    const bool complete = evictMovers(r, plan, evicted, out.reason);
    hold(r, pod, plan, std::move(evicted), complete);
    r.snap = mirror_.snapshot();  // file mode: the movers are gone already
    if (complete) {
      r.explained[pod->uid] = plan.reason;
      return done(Result::kActed);
    }
  }
  return done(Result::kWaiting);
}

ConsolidationController::Result ConsolidationController::consolidateGang(
    Round& r, const policy::PodPtr& member) {
  using Kind = policy::ConsolidationOutcome::Kind;
  const std::string key = member->gangKey();
  if (auto it = inFlight_.find(key); it != inFlight_.end()) {
    ++r.stats.fragmented;
    r.explained[member->uid] = it->second.plan.reason + " (in progress, gang)";
    return Result::kSkipped;
  }
  const policy::GangConsolidationOutcome out =
      policy::planGangConsolidation(*r.snap, *member, r.options);
  if (out.kind != Kind::kPlanned) {
    if (out.kind != Kind::kNoPlan) return Result::kSkipped;
    ++r.stats.fragmented;
    r.explained[member->uid] = "gang waits on fragmentation: " + out.reason;
    if (observer_) observer_->waiting(*member, out.reason);
    return Result::kWaiting;
  }
  ++r.stats.fragmented;
  for (const policy::ConsolidationPlan& plan : out.plans) {
    for (const auto& m : plan.moves) r.options.excludedNodes.insert(m.to);
    r.options.excludedNodes.insert(plan.node);
  }
  if (settings_.dryRun) {
    for (const policy::ConsolidationPlan& plan : out.plans) {
      for (const auto& m : plan.moves) r.options.releasing.push_back(m.pod);
      r.dryRun.push_back(plan);
      if (observer_) observer_->dryRun(plan);
    }
    ++r.stats.planned;
    r.explained[member->uid] = "dry run: " + out.reason;
    return Result::kActed;
  }
  // Every member's movers; the replacements of those gone are steered even if a later one is
  // refused (partial plans), the members' targets held only when all are gone.
  for (const policy::ConsolidationPlan& plan : out.plans) {
    std::vector<policy::PodPtr> evicted;
    std::string reason;
    const bool complete = evictMovers(r, plan, evicted, reason);
    hold(r, member, plan, std::move(evicted), /*holdTarget=*/false);
    if (!complete) {
      r.explained[member->uid] = "gang waits on fragmentation: " + reason;
      if (observer_) observer_->waiting(*member, reason);
      return Result::kWaiting;
    }
  }
  InFlight f;
  f.plan = out.plans.front();
  f.plan.reason = out.reason;
  f.until = r.now + settings_.holdFor;
  for (const policy::ConsolidationPlan& plan : out.plans) {
    policy::Reservation target;
    target.node = plan.node;
    target.gpus = plan.gpus;
    target.holder = key;
    target.queue = member->queue;
    target.reason = "consolidation";
    target.holderName = "gang " + member->gangName();
    mirror_.reserve(std::move(target), settings_.holdFor);
    f.targets.push_back(plan.node);
    if (observer_) observer_->consolidating(plan);
  }
  inFlight_[key] = std::move(f);
  ++r.stats.planned;
  r.explained[member->uid] = out.reason;
  r.snap = mirror_.snapshot();
  return Result::kActed;
}

bool ConsolidationController::stillWaits(const policy::Pod& pod) const {
  const policy::PodPtr current = mirror_.findPod(pod.uid);
  return current != nullptr && current->nodeName.empty() && !current->isFinished() &&
         !current->terminating;
}

bool ConsolidationController::evictMovers(Round& r, const policy::ConsolidationPlan& plan,
                                          std::vector<policy::PodPtr>& evicted,
                                          std::string& reason) {
  for (const auto& move : plan.moves) {
    const EvictResult result = evictor_.evict(*move.pod, move.reason);
    if (result.outcome == EvictOutcome::kEvicted || result.outcome == EvictOutcome::kNotFound) {
      evicted.push_back(move.pod);
      r.options.releasing.push_back(move.pod);
      if (result.outcome == EvictOutcome::kEvicted) {
        ++r.stats.moved;
        if (observer_) observer_->moved(plan, move);
      }
      continue;
    }
    ++r.stats.refused;
    if (observer_) observer_->evictionFailed(plan, move, result);
    r.options.spared.insert(move.pod->uid);
    reason = "eviction of " + move.pod->key() + " " + state::evictOutcomeName(result.outcome) +
             ": " + result.message;
    return false;
  }
  return true;
}

void ConsolidationController::hold(Round& r, const policy::PodPtr& pod,
                                   const policy::ConsolidationPlan& plan,
                                   std::vector<policy::PodPtr> evicted, bool holdTarget) {
  if (evicted.empty() && !holdTarget) return;
  InFlight f;
  f.plan = plan;
  f.targets = {plan.node};
  f.until = r.now + settings_.holdFor;
  if (holdTarget) {
    policy::Reservation target;
    target.node = plan.node;
    target.gpus = pod->gpus;
    target.holder = pod->uid;
    target.queue = pod->queue;
    target.reason = "consolidation";
    target.holderName = pod->key();
    mirror_.reserve(std::move(target), settings_.holdFor);
    r.options.excludedNodes.insert(plan.node);
  }
  // One hold per (replacement holder, node): pods of one Job with the same labels share it.
  std::map<std::pair<std::string, std::string>, policy::Reservation> steer;
  for (const auto& m : plan.moves) {
    if (std::find(evicted.begin(), evicted.end(), m.pod) == evicted.end()) continue;
    const std::string holder = policy::replacementHolder(*m.pod);
    policy::Reservation& res = steer[{holder, m.to}];
    res.node = m.to;
    res.gpus += m.pod->gpus;
    res.holder = holder;
    res.queue = m.pod->queue;
    res.reason = "consolidation move";
    res.holderName = "replacement of " + m.pod->key();
    r.options.excludedNodes.insert(m.to);
  }
  for (auto& [key, res] : steer) {
    f.holders.push_back(key.first);
    mirror_.reserve(std::move(res), settings_.holdFor);
  }
  f.movers = std::move(evicted);
  if (holdTarget) {
    ++r.stats.planned;
    if (observer_) observer_->consolidating(plan);
  }
  // A partial plan (a later mover refused) still steers the movers already gone; it is kept
  // under a key of its own so that the waiting pod may get another plan.
  const std::string key = holdTarget ? pod->uid : "partial:" + pod->uid + ":" + plan.node;
  inFlight_[key] = std::move(f);
}

}  // namespace gpufair::app
