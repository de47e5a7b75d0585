// ConsolidationController over a real Mirror, in file mode: the seed scenario (team-a's six
// movable 3-GPU pods 2,2,1,1 on four 10-GPU nodes, team-b's 8-GPU pod waiting) driven like
// kube-scheduler (filter, prioritize, bind on the mirror) with a test-side Job controller that
// recreates evicted pods; refusals, dry run, the timeout and what the controller tells.
#include "consolidation_controller.h"

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/filter.h"
#include "gpufair/policy/scorer.h"

#include "testing/builders.h"

namespace gpufair::app {
namespace {

using namespace std::chrono_literals;
using state::EvictOutcome;
using state::EvictResult;
using state::Mirror;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

// Evicts by script (default evicted) and deletes the pod from the mirror, as file mode does; its
// Job then creates a replacement: a new pending pod, same controller and labels, new uid.
class JobEvictor final : public state::Evictor {
 public:
  JobEvictor(Mirror& mirror, const Clock& clock) : mirror_(mirror), clock_(clock) {}
  EvictResult evict(const policy::Pod& pod, const std::string& reason) override {
    calls.push_back(pod.name);
    reasons.push_back(reason);
    auto it = script.find(pod.name);
    if (it != script.end()) return {it->second, "HTTP 429: Cannot evict pod"};
    mirror_.deletePod(pod.uid);
    if (recreate) {
      policy::Pod next = pod;
      next.name = pod.name + "-r";
      next.uid = pod.uid + "-r";
      next.nodeName.clear();
      next.phase = policy::PodPhase::kPending;
      next.labels.erase(kOverQuotaLabel);
      next.overQuota = false;
      next.created = clock_.now();
      next.started.reset();
      mirror_.upsertPod(next);
    }
    return {EvictOutcome::kEvicted, ""};
  }
  std::map<std::string, EvictOutcome> script;
  std::vector<std::string> calls;
  std::vector<std::string> reasons;
  bool recreate = true;

 private:
  Mirror& mirror_;
  const Clock& clock_;
};

class RecordingObserver final : public state::ConsolidationObserver {
 public:
  void moved(const policy::ConsolidationPlan&, const policy::ConsolidationMove& m) override {
    log.push_back("moved " + m.pod->name + " to " + m.to);
  }
  void evictionFailed(const policy::ConsolidationPlan&, const policy::ConsolidationMove& m,
                      const EvictResult& r) override {
    log.push_back(std::string("failed ") + m.pod->name + " " + state::evictOutcomeName(r.outcome));
  }
  void consolidating(const policy::ConsolidationPlan& plan) override {
    log.push_back("consolidating " + plan.waiting + " on " + plan.node);
  }
  void waiting(const policy::Pod& pod, const std::string&) override {
    log.push_back("waiting " + pod.key());
  }
  void dryRun(const policy::ConsolidationPlan& plan) override {
    log.push_back("dry-run " + plan.waiting + " on " + plan.node);
  }
  void gaveUp(const policy::ConsolidationPlan& plan) override {
    log.push_back("gave up " + plan.waiting);
  }
  std::vector<std::string> log;
};

ConsolidationSettings onSettings() {
  ConsolidationSettings s;
  s.enabled = true;
  s.holdFor = 60s;
  return s;
}

struct Fixture {
  explicit Fixture(ConsolidationSettings settings = onSettings())
      : clock(std::make_shared<testing::ManualClock>()),
        mirror(clock),
        evictor(mirror, *clock),
        controller(
            mirror, evictor, clock, settings, [this] { return leader.load(); }, &observer) {
    QuotaConfig quota;
    quota.queues = {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)};
    mirror.setQuotaConfig(quota);
    for (int i = 1; i <= 4; ++i) mirror.upsertNode(MakeNode("node-" + std::to_string(i)).gpus(10));
    const char* layout[] = {"node-1", "node-1", "node-2", "node-2", "node-3", "node-4"};
    for (int i = 0; i < 6; ++i) {
      policy::Pod p = MakePod("team-a", "a" + std::to_string(i + 1))
                          .gpus(3)
                          .on(layout[i])
                          .controller("job-a")
                          .label("job-name", "a")
                          .movable();
      p.started = clock->now() - std::chrono::minutes{500 - 80 * i};  // a6 the youngest
      p.created = p.started;
      mirror.upsertPod(p);
    }
    clock->advance(10s);
  }
  void submitB() {
    policy::Pod big = MakePod("team-b", "big").gpus(8);
    big.created = clock->now();
    mirror.notePending(big);
  }
  // kube-scheduler: every pending pod, filter and prioritize over all nodes, bind the best.
  void schedulePending() {
    const auto scorer = policy::makeBestFitScorer();
    // The pending list is the first snapshot's: kept alive while later ones replace it.
    const policy::SnapshotPtr first = mirror.snapshot();
    for (const auto& pod : first->pending()) {
      const policy::SnapshotPtr snap = mirror.snapshot();
      std::vector<std::string_view> names;
      for (const auto& n : snap->nodes()) names.push_back(n->name());
      const policy::FilterResult fr = policy::filter(*snap, *pod, names);
      if (fr.feasible.empty()) continue;
      const auto scores = policy::prioritize(*snap, *pod, fr.feasible, *scorer);
      auto best = std::max_element(scores.begin(), scores.end(),
                                   [](const auto& a, const auto& b) { return a.score < b.score; });
      if (mirror.assume(pod->uid, best->node).ok()) mirror.confirm(pod->uid);
    }
  }
  std::string nodeOf(const std::string& uid) const {
    const policy::PodPtr p = mirror.findPod(uid);
    return p == nullptr ? "(gone)" : p->nodeName;
  }

  std::shared_ptr<testing::ManualClock> clock;
  Mirror mirror;
  JobEvictor evictor;
  RecordingObserver observer;
  std::atomic<bool> leader{true};
  ConsolidationController controller;
};

TEST(ConsolidationControllerTest, SeedScenarioMovesOnePodAndPlacesBothWhereSteered) {
  Fixture f;
  f.submitB();
  f.schedulePending();  // kube-scheduler tries first: no node has 8 free
  EXPECT_EQ(f.nodeOf("uid-team-b-big"), "");
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_TRUE(stats.ran);
  EXPECT_EQ(stats.fragmented, 1);
  EXPECT_EQ(stats.planned, 1);
  EXPECT_EQ(stats.moved, 1);
  EXPECT_EQ(stats.inFlight, 1);
  EXPECT_EQ(f.evictor.calls, std::vector<std::string>{"a6"});
  ASSERT_EQ(f.evictor.reasons.size(), 1U);
  EXPECT_NE(f.evictor.reasons[0].find("moved to make room for team-b/big (8 GPUs)"),
            std::string::npos);
  // The target is held for big, node-1 for a6's replacement.
  std::map<std::string, std::string> held;
  for (const auto& r : f.mirror.reservations()) held[r.node] = r.holderName;
  EXPECT_EQ(held["node-4"], "team-b/big");
  EXPECT_EQ(held["node-1"], "replacement of team-a/a6");
  const std::optional<std::string> words = f.controller.explain("uid-team-b-big");
  ASSERT_TRUE(words.has_value());
  EXPECT_NE(words->find("so that team-b/big (8 GPUs) fits on node-4"), std::string::npos);

  f.schedulePending();  // kube-scheduler's next try: big and the replacement
  EXPECT_EQ(f.nodeOf("uid-team-b-big"), "node-4");
  EXPECT_EQ(f.nodeOf("uid-team-a-a6-r"), "node-1");  // the moved pod runs again, where planned
  EXPECT_TRUE(f.mirror.reservations().empty());
  const policy::SnapshotPtr snap = f.mirror.snapshot();
  EXPECT_EQ(snap->findQueue("team-a")->allocated, 18000);  // nothing in quota lost
  EXPECT_EQ(snap->findQueue("team-b")->allocated, 8000);
  EXPECT_TRUE(snap->pending().empty());

  const ConsolidationRoundStats after = f.controller.runOnce();
  EXPECT_EQ(after.inFlight, 0);
  EXPECT_EQ(after.fragmented, 0);
  EXPECT_EQ(after.moved, 0);
  EXPECT_EQ(f.controller.movesTotal(), 1U);
  EXPECT_EQ(f.observer.log,
            (std::vector<std::string>{"moved a6 to node-1", "consolidating team-b/big on node-4"}));
}

TEST(ConsolidationControllerTest, ARefusedEvictionSparesThePodAndTheNextPlanRuns) {
  Fixture f;
  f.evictor.script["a6"] = EvictOutcome::kRefused;
  f.submitB();
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.refused, 1);
  EXPECT_EQ(stats.moved, 1);
  EXPECT_EQ(f.evictor.calls, (std::vector<std::string>{"a6", "a5"}));
  EXPECT_EQ(f.observer.log, (std::vector<std::string>{"failed a6 refused", "moved a5 to node-1",
                                                      "consolidating team-b/big on node-3"}));
  f.schedulePending();
  EXPECT_EQ(f.nodeOf("uid-team-b-big"), "node-3");
  EXPECT_EQ(f.nodeOf("uid-team-a-a5-r"), "node-1");
}

TEST(ConsolidationControllerTest, DryRunMovesNothing) {
  ConsolidationSettings s = onSettings();
  s.dryRun = true;
  Fixture f(s);
  f.submitB();
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.planned, 1);
  EXPECT_EQ(stats.moved, 0);
  EXPECT_TRUE(f.evictor.calls.empty());
  EXPECT_TRUE(f.mirror.reservations().empty());
  ASSERT_EQ(f.controller.lastDryRun().size(), 1U);
  EXPECT_EQ(f.controller.lastDryRun()[0].node, "node-4");
  EXPECT_EQ(f.observer.log, std::vector<std::string>{"dry-run team-b/big on node-4"});
}

TEST(ConsolidationControllerTest, GivesUpAndReleasesTheHoldsAfterTheTimeout) {
  Fixture f;
  f.evictor.recreate = false;  // the Job does not come back (suspended, say)
  f.submitB();
  ASSERT_EQ(f.controller.runOnce().planned, 1);
  EXPECT_EQ(f.mirror.reservations().size(), 2U);
  f.clock->advance(30s);
  EXPECT_EQ(f.controller.runOnce().inFlight, 1);  // big still waits; nothing moves twice
  EXPECT_EQ(f.evictor.calls.size(), 1U);
  f.clock->advance(31s);
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.gaveUp, 1);
  // node-4 is free now: big fits without moving anything, so nothing is planned again.
  EXPECT_EQ(stats.planned, 0);
  EXPECT_TRUE(f.mirror.reservations().empty());
  EXPECT_EQ(f.observer.log.back(), "gave up team-b/big");
}

// Reclaim comes first: team-a above its deserved 12 borrows a5 and a6, and team-b's pod is within
// its deserved quota, so reclaim can free node-4 for big; consolidation leaves big to it and says
// so. With reclaim off (--reclaim=off or dry-run), consolidation moves a6 as in the seed scenario.
TEST(ConsolidationControllerTest, LeavesToReclaimWhatReclaimCanServe) {
  for (const bool reclaimOn : {true, false}) {
    ConsolidationSettings s = onSettings();
    s.reclaimEnabled = reclaimOn;
    Fixture f(s);
    QuotaConfig quota;
    quota.queues = {MakeQueue("team-a").deserved(12), MakeQueue("team-b").deserved(20)};
    f.mirror.setQuotaConfig(quota);
    for (const char* name : {"a5", "a6"}) {
      policy::Pod p = *f.mirror.findPod(std::string("uid-team-a-") + name);
      p.overQuota = true;
      p.labels[kOverQuotaLabel] = "true";
      f.mirror.upsertPod(p);
    }
    f.submitB();
    const ConsolidationRoundStats stats = f.controller.runOnce();
    EXPECT_EQ(stats.fragmented, 1) << reclaimOn;
    if (reclaimOn) {
      EXPECT_EQ(stats.planned, 0);
      EXPECT_TRUE(f.evictor.calls.empty());
      EXPECT_TRUE(f.mirror.reservations().empty());
      const std::optional<std::string> words = f.controller.explain("uid-team-b-big");
      ASSERT_TRUE(words.has_value());
      EXPECT_NE(words->find("reclaim frees a node for it first"), std::string::npos) << *words;
    } else {
      EXPECT_EQ(stats.planned, 1);
      EXPECT_EQ(f.evictor.calls, std::vector<std::string>{"a6"});
    }
  }
}

TEST(ConsolidationControllerTest, DisabledOrNotLeaderDoesNothing) {
  ConsolidationSettings off = onSettings();
  off.enabled = false;
  Fixture disabled(off);
  disabled.submitB();
  EXPECT_FALSE(disabled.controller.runOnce().ran);
  Fixture follower;
  follower.leader = false;
  follower.submitB();
  EXPECT_FALSE(follower.controller.runOnce().ran);
  EXPECT_TRUE(follower.evictor.calls.empty());
}

TEST(ConsolidationControllerTest, APodWithoutMovableNeighboursIsCountedAndExplained) {
  Fixture f;
  f.evictor.script = {{"a1", EvictOutcome::kRefused}, {"a2", EvictOutcome::kRefused},
                      {"a3", EvictOutcome::kRefused}, {"a4", EvictOutcome::kRefused},
                      {"a5", EvictOutcome::kRefused}, {"a6", EvictOutcome::kRefused}};
  f.submitB();
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.fragmented, 1);
  EXPECT_EQ(stats.planned, 0);
  EXPECT_EQ(stats.refused, 3);  // maxAttempts plans, each refused
  EXPECT_EQ(f.observer.log.back(), "waiting team-b/big");
  const std::optional<std::string> words = f.controller.explain("uid-team-b-big");
  ASSERT_TRUE(words.has_value());
  EXPECT_NE(words->find("waits on fragmentation"), std::string::npos) << *words;
  EXPECT_TRUE(f.mirror.reservations().empty());
}

// A round plans once per class of alike pods while nothing changes, and still explains each.
TEST(ConsolidationControllerTest, AlikeWaitingPodsAreEachCountedAndExplained) {
  Fixture f;
  for (int i = 1; i <= 6; ++i) {  // nothing may move
    policy::Pod p = *f.mirror.findPod("uid-team-a-a" + std::to_string(i));
    p.labels.erase(kMovableLabel);
    f.mirror.upsertPod(p);
  }
  for (const char* name : {"w1", "w2", "w3"}) f.mirror.notePending(MakePod("team-b", name).gpus(8));
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.fragmented, 3);
  EXPECT_EQ(stats.planned, 0);
  EXPECT_EQ(f.observer.log, (std::vector<std::string>{"waiting team-b/w1", "waiting team-b/w2",
                                                      "waiting team-b/w3"}));
  const std::optional<std::string> first = f.controller.explain("uid-team-b-w1");
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("waits on fragmentation: "), std::string::npos) << *first;
  EXPECT_NE(first->find("no movable pods"), std::string::npos) << *first;
  for (const char* name : {"w2", "w3"})
    EXPECT_EQ(f.controller.explain(std::string("uid-team-b-") + name), first) << name;
}

// A plan changes the round: the next alike pod is planned afresh, on what the first plan left.
TEST(ConsolidationControllerTest, AlikePodsArePlannedAfreshAfterAPlan) {
  ConsolidationSettings s = onSettings();
  s.dryRun = true;
  Fixture f(s);
  for (const char* name : {"w1", "w2"}) f.mirror.notePending(MakePod("team-b", name).gpus(8));
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.planned, 2);
  EXPECT_EQ(stats.fragmented, 2);
  const auto plans = f.controller.lastDryRun();
  ASSERT_EQ(plans.size(), 2U);
  EXPECT_EQ(plans[0].waiting, "team-b/w1");
  EXPECT_EQ(plans[1].waiting, "team-b/w2");
  EXPECT_NE(plans[0].node, plans[1].node);
  EXPECT_NE(plans[0].moves.front().pod->uid, plans[1].moves.front().pod->uid);
}

// team-b's gang of two 8-GPU pods waits on the seed layout: one move per member (a6 off node-4,
// a5 off node-3), both targets held for the gang; kube-scheduler then places both members there
// and the replacements where planned.
TEST(ConsolidationControllerTest, AWaitingGangGetsRoomForAllItsMembers) {
  Fixture f;
  for (int i = 0; i < 2; ++i) {
    policy::Pod m = MakePod("team-b", "g-" + std::to_string(i)).gpus(8).gang("g", 2);
    m.created = f.clock->now();
    f.mirror.notePending(m);
  }
  f.schedulePending();
  EXPECT_EQ(f.nodeOf("uid-team-b-g-0"), "");
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.fragmented, 1);
  EXPECT_EQ(stats.planned, 1);
  EXPECT_EQ(stats.moved, 2);
  EXPECT_EQ(f.evictor.calls, (std::vector<std::string>{"a6", "a5"}));
  std::map<std::string, std::string> held;
  for (const auto& r : f.mirror.reservations()) held[r.node] = r.holder;
  EXPECT_EQ(held["node-4"], "gang:team-b/g");
  EXPECT_EQ(held["node-3"], "gang:team-b/g");
  f.schedulePending();
  const std::set<std::string> members = {f.nodeOf("uid-team-b-g-0"), f.nodeOf("uid-team-b-g-1")};
  EXPECT_EQ(members, (std::set<std::string>{"node-3", "node-4"}));
  // The replacements (one Job, same labels: either may take either hold) where planned.
  const std::set<std::string> replacements = {f.nodeOf("uid-team-a-a6-r"),
                                              f.nodeOf("uid-team-a-a5-r")};
  EXPECT_EQ(replacements, (std::set<std::string>{"node-1", "node-2"}));
  EXPECT_TRUE(f.mirror.snapshot()->pending().empty());
  EXPECT_EQ(f.controller.runOnce().inFlight, 0);
  EXPECT_TRUE(f.mirror.reservations().empty());
}

// A gang of three 8-GPU pods: 22 GPUs are free in all (and team-b deserves 20): there is no room
// for every member, so nothing moves, not even for the members that could be served.
TEST(ConsolidationControllerTest, AGangWithoutRoomForAllMembersMovesNothing) {
  Fixture f;
  for (int i = 0; i < 3; ++i) {
    policy::Pod m = MakePod("team-b", "g-" + std::to_string(i)).gpus(8).gang("g", 3);
    m.created = f.clock->now();
    f.mirror.notePending(m);
  }
  const ConsolidationRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.moved, 0);
  EXPECT_TRUE(f.evictor.calls.empty());
  EXPECT_TRUE(f.mirror.reservations().empty());
}

}  // namespace
}  // namespace gpufair::app
