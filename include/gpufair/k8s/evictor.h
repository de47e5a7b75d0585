// Reclaim in a cluster: KubeEvictor evicts victims through the policy/v1 Eviction API (so
// PodDisruptionBudgets are honoured: a 429 is a refusal the reclaim loop answers with another
// plan), and ReclaimEvents tells the victims and the reclaimer what happened, as pod Events.
// Thread-safety: both are safe to call from any thread (KubeClient and EventRecorder are).
#pragma once

#include <chrono>

#include "gpufair/k8s/client.h"
#include "gpufair/k8s/events.h"
#include "gpufair/state/ports.h"

namespace gpufair::k8s {

class KubeEvictor final : public state::Evictor {
 public:
  explicit KubeEvictor(KubeClientPtr client,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000})
      : client_(std::move(client)), timeout_(timeout) {}
  // POST .../pods/{name}/eviction with the pod's uid as precondition: 429 -> kRefused, 404 (or the
  // name now another pod's) -> kNotFound, anything else that fails -> kError with the server's
  // words.
  state::EvictResult evict(const policy::Pod& pod, const std::string& reason) override;

 private:
  KubeClientPtr client_;
  std::chrono::milliseconds timeout_;
};

// Pod Events for the reclaim loop (the recorder de-duplicates and rate-limits them):
//   victim      Normal  Reclaimed       "Reclaimed by queue team-b: team-a is 20 GPUs over ..."
//   reclaimer   Normal  Reclaiming      the plan's reason (which node, whose pods)
//   reclaimer   Warning ReclaimBlocked  an eviction was refused or failed (and why)
//   reclaimer   Normal  ReclaimWaiting  owed GPUs, but no plan is possible now (and why)
//   reclaimer   Normal  ReclaimDryRun   dry run: what would be evicted
class ReclaimEvents final : public state::ReclaimObserver {
 public:
  explicit ReclaimEvents(EventRecorder& recorder) : recorder_(recorder) {}

  void evicted(const policy::ReclaimPlan& plan, const policy::ReclaimVictim& victim) override;
  void evictionFailed(const policy::ReclaimPlan& plan, const policy::ReclaimVictim& victim,
                      const state::EvictResult& result) override;
  void reclaimed(const policy::ReclaimPlan& plan) override;
  void waiting(const policy::Pod& reclaimer, const std::string& reason) override;
  void dryRun(const policy::ReclaimPlan& plan) override;

 private:
  void onReclaimer(const policy::ReclaimPlan& plan, EventType type, const EventReason& why,
                   std::string message);
  EventRecorder& recorder_;
};

// Pod Events for the consolidation loop:
//   mover     Normal  MovedForConsolidation  "moved to make room for team-b/big (8 GPUs) on ..."
//   waiting   Normal  Consolidating          the plan's reason (who moves where)
//   waiting   Warning ConsolidationBlocked   a mover's eviction was refused or failed (and why)
//   waiting   Normal  ConsolidationWaiting   waits on fragmentation; no plan now (and why)
//   waiting   Normal  ConsolidationDryRun    dry run: what would move
//   waiting   Warning ConsolidationGaveUp    the holds timed out
class ConsolidationEvents final : public state::ConsolidationObserver {
 public:
  explicit ConsolidationEvents(EventRecorder& recorder) : recorder_(recorder) {}

  void moved(const policy::ConsolidationPlan& plan, const policy::ConsolidationMove& move) override;
  void evictionFailed(const policy::ConsolidationPlan& plan, const policy::ConsolidationMove& move,
                      const state::EvictResult& result) override;
  void consolidating(const policy::ConsolidationPlan& plan) override;
  void waiting(const policy::Pod& pod, const std::string& reason) override;
  void dryRun(const policy::ConsolidationPlan& plan) override;
  void gaveUp(const policy::ConsolidationPlan& plan) override;

 private:
  void onWaiting(const policy::ConsolidationPlan& plan, EventType type, const EventReason& why,
                 std::string message);
  EventRecorder& recorder_;
};

// "dry run: would evict team-a/a4, team-a/a5 on node-4 for team-b/big (...)"
std::string describeDryRun(const policy::ReclaimPlan& plan);

}  // namespace gpufair::k8s
