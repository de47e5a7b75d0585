#include "gpufair/k8s/evictor.h"

#include "gpufair/k8s/api.h"

namespace gpufair::k8s {

state::EvictResult KubeEvictor::evict(const policy::Pod& pod, const std::string& /*reason*/) {
  EvictionResult result = evictPod(*client_, pod.ns, pod.name, pod.uid, timeout_);
  switch (result.outcome) {
    case EvictionOutcome::kEvicted:
      return {state::EvictOutcome::kEvicted, ""};
    case EvictionOutcome::kBlocked:
      return {state::EvictOutcome::kRefused, std::move(result.message)};
    case EvictionOutcome::kNotFound:
      return {state::EvictOutcome::kNotFound, std::move(result.message)};
    case EvictionOutcome::kError:
      break;
  }
  return {state::EvictOutcome::kError, std::move(result.message)};
}

std::string describeDryRun(const policy::ReclaimPlan& plan) {
  std::string victims;
  for (const auto& v : plan.victims) victims += (victims.empty() ? "" : ", ") + v.pod->key();
  return "dry run: would evict " + victims + " on " + plan.node + " for " + plan.reclaimer + " (" +
         plan.reason + ")";
}

void ReclaimEvents::onReclaimer(const policy::ReclaimPlan& plan, EventType type,
                                const EventReason& why, std::string message) {
  const auto slash = plan.reclaimer.find('/');
  recorder_.recordPod(plan.reclaimer.substr(0, slash), plan.reclaimer.substr(slash + 1),
                      plan.reclaimerUid, type, why, std::move(message));
}

void ReclaimEvents::evicted(const policy::ReclaimPlan& /*plan*/,
                            const policy::ReclaimVictim& victim) {
  const policy::Pod& pod = *victim.pod;
  recorder_.recordPod(pod.ns, pod.name, pod.uid, EventType::kNormal, events::kReclaimed,
                      victim.reason);
}

void ReclaimEvents::evictionFailed(const policy::ReclaimPlan& plan,
                                   const policy::ReclaimVictim& victim,
                                   const state::EvictResult& result) {
  onReclaimer(plan, EventType::kWarning, events::kReclaimBlocked,
              "could not evict " + victim.pod->key() + " (" +
                  state::evictOutcomeName(result.outcome) + "): " + result.message +
                  "; trying another plan");
}

void ReclaimEvents::reclaimed(const policy::ReclaimPlan& plan) {
  onReclaimer(plan, EventType::kNormal, events::kReclaiming, plan.reason);
}

void ReclaimEvents::waiting(const policy::Pod& reclaimer, const std::string& reason) {
  recorder_.recordPod(reclaimer.ns, reclaimer.name, reclaimer.uid, EventType::kNormal,
                      events::kReclaimWaiting, reason);
}

void ReclaimEvents::dryRun(const policy::ReclaimPlan& plan) {
  onReclaimer(plan, EventType::kNormal, events::kReclaimDryRun, describeDryRun(plan));
}

void ConsolidationEvents::onWaiting(const policy::ConsolidationPlan& plan, EventType type,
                                    const EventReason& why, std::string message) {
  const auto slash = plan.waiting.find('/');
  recorder_.recordPod(plan.waiting.substr(0, slash), plan.waiting.substr(slash + 1),
                      plan.waitingUid, type, why, std::move(message));
}

void ConsolidationEvents::moved(const policy::ConsolidationPlan& /*plan*/,
                                const policy::ConsolidationMove& move) {
  const policy::Pod& pod = *move.pod;
  recorder_.recordPod(pod.ns, pod.name, pod.uid, EventType::kNormal, events::kMovedForConsolidation,
                      move.reason);
}

void ConsolidationEvents::evictionFailed(const policy::ConsolidationPlan& plan,
                                         const policy::ConsolidationMove& move,
                                         const state::EvictResult& result) {
  onWaiting(plan, EventType::kWarning, events::kConsolidationBlocked,
            "could not evict " + move.pod->key() + " (" + state::evictOutcomeName(result.outcome) +
                "): " + result.message + "; trying another plan");
}

void ConsolidationEvents::consolidating(const policy::ConsolidationPlan& plan) {
  onWaiting(plan, EventType::kNormal, events::kConsolidating, plan.reason);
}

void ConsolidationEvents::waiting(const policy::Pod& pod, const std::string& reason) {
  recorder_.recordPod(pod.ns, pod.name, pod.uid, EventType::kNormal, events::kConsolidationWaiting,
                      "waits on fragmentation: " + reason);
}

void ConsolidationEvents::dryRun(const policy::ConsolidationPlan& plan) {
  onWaiting(plan, EventType::kNormal, events::kConsolidationDryRun, "dry run: " + plan.reason);
}

void ConsolidationEvents::gaveUp(const policy::ConsolidationPlan& plan) {
  onWaiting(plan, EventType::kWarning, events::kConsolidationGaveUp,
            "gave up: the room made on " + plan.node + " was not taken in time; holds released");
}

}  // namespace gpufair::k8s
