// Mirror: bind (assume) and gang planning, decided outside the lock (see mirror.h).
#include <utility>
#include <variant>

#include "gpufair/state/mirror.h"

#include "bind_decision.h"

namespace gpufair::state {
namespace {

// Decisions made outside the lock before the last attempt, which holds it throughout: a decision
// is made again when the state changed while it was being made.
constexpr int kOptimisticAttempts = 3;

}  // namespace

detail::GangView Mirror::gangViewLocked(const std::string& gangKey) const {
  return detail::GangView{cache_.gangCount(gangKey), book_.heldBy(gangKey),
                          cache_.unplacedWithoutGpus(gangKey)};
}

detail::BindInputs Mirror::bindInputsLocked(std::string_view uid) const {
  detail::BindInputs in;
  in.snapshot = snapshotLocked();
  in.pod = cache_.findPod(uid);
  if (in.pod != nullptr && in.pod->inGang()) in.gang = gangViewLocked(in.pod->gangKey());
  return in;
}

void Mirror::commitAssumeLocked(policy::PodPtr placed) {
  cache_.assume(placed, clock_->now());
  if (!book_.empty()) {
    book_.take(*placed);
    book_.settle(cache_);
  }
}

Result<AssumeOutcome> Mirror::assume(std::string_view uid, std::string_view node) {
  return assumeWith(uid, node, nullptr);
}

Result<AssumeOutcome> Mirror::assume(std::string_view uid, std::string_view node,
                                     const policy::Scorer& scorer) {
  return assumeWith(uid, node, &scorer);
}

Result<AssumeOutcome> Mirror::assumeWith(std::string_view uid, std::string_view node,
                                         const policy::Scorer* scorer) {
  bool mayPlan = true;  // a gang is planned at most once per bind
  for (int attempt = 0;; ++attempt) {
    const bool holdLock = attempt >= kOptimisticAttempts;
    std::unique_lock lock(mu_);
    const detail::BindInputs in = bindInputsLocked(uid);
    const std::shared_ptr<const policy::Scorer> byDefault = scorer == nullptr ? scorer_ : nullptr;
    if (!holdLock) lock.unlock();
    detail::BindDecision decision =
        detail::decideBind(in, uid, node, scorer != nullptr ? scorer : byDefault.get(), mayPlan);
    if (auto* answer = std::get_if<Result<AssumeOutcome>>(&decision)) return std::move(*answer);
    if (!holdLock) lock.lock();
    if (!builder_.isCurrent(in.snapshot)) continue;  // changed meanwhile: decide again
    if (auto* reserve = std::get_if<detail::ReserveFirst>(&decision)) {
      book_.install(std::move(reserve->plan), clock_->now() + options_.gangTimeout);
      mayPlan = false;
      continue;
    }
    auto& place = std::get<detail::Place>(decision);
    commitAssumeLocked(std::move(place.placed));
    return std::move(place.outcome);
  }
}

Result<GangReservation> Mirror::reserveGang(const policy::Pod& member) {
  using R = Result<GangReservation>;
  if (!member.inGang()) return R::failure("pod " + member.key() + " is not in a gang");
  for (int attempt = 0;; ++attempt) {
    const bool holdLock = attempt >= kOptimisticAttempts;
    std::unique_lock lock(mu_);
    // Plan with the mirror's own copy of the pod when it has one (queue and gang resolved).
    policy::Pod pod = member;
    if (const policy::PodPtr known = cache_.findPod(member.uid)) pod = *known;
    pod.queue = policy::resolveQueue(quota_, pod.ns, pod.labels);
    policy::applyGangLabels(pod);
    const detail::GangView gang = gangViewLocked(pod.gangKey());
    const policy::SnapshotPtr snapshot = snapshotLocked();
    if (!holdLock) lock.unlock();
    detail::GangDecision decided = detail::decideGang(*snapshot, pod, gang, true);
    if (!decided.error.empty()) return R::failure(std::move(decided.error));
    if (!decided.planned) return GangReservation{false, std::move(decided.held)};
    if (!holdLock) lock.lock();
    if (!builder_.isCurrent(snapshot)) continue;  // changed meanwhile: plan again
    const bool planned =
        book_.install(std::move(decided.plan), clock_->now() + options_.gangTimeout);
    return GangReservation{planned, book_.heldBy(pod.gangKey())};
  }
}

}  // namespace gpufair::state
