// ReclaimController over a real Mirror with a scripted Evictor: what a round evicts, what it holds,
// and how it reacts to refusals, dry run, leadership and its own thread.
#include "reclaim_controller.h"

#include <atomic>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "captured_logs.h"
#include "reclaim_runner.h"
#include "testing/builders.h"

namespace gpufair::app {
namespace {

using state::Evictor;
using state::EvictOutcome;
using state::EvictResult;
using state::Mirror;
using state::ReclaimObserver;

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

// Evicts by script: outcome per pod name (default evicted). `deletes` true acts like file mode
// (the pod leaves the mirror at once); false like a cluster (it stays until the watch says so).
class ScriptedEvictor final : public Evictor {
 public:
  ScriptedEvictor(Mirror& mirror, bool deletes) : mirror_(mirror), deletes_(deletes) {}
  EvictResult evict(const policy::Pod& pod, const std::string& reason) override {
    calls.push_back(pod.name);
    reasons.push_back(reason);
    auto it = script.find(pod.name);
    const EvictOutcome outcome = it == script.end() ? EvictOutcome::kEvicted : it->second;
    if (outcome != EvictOutcome::kEvicted) return {outcome, "HTTP 429: Cannot evict pod"};
    if (deletes_) mirror_.deletePod(pod.uid);
    return {EvictOutcome::kEvicted, ""};
  }
  std::map<std::string, EvictOutcome> script;
  std::vector<std::string> calls;
  std::vector<std::string> reasons;

 private:
  Mirror& mirror_;
  bool deletes_;
};

class RecordingObserver final : public ReclaimObserver {
 public:
  void evicted(const policy::ReclaimPlan&, const policy::ReclaimVictim& v) override {
    log.push_back("evicted " + v.pod->name);
  }
  void evictionFailed(const policy::ReclaimPlan&, const policy::ReclaimVictim& v,
                      const EvictResult& r) override {
    log.push_back(std::string("failed ") + v.pod->name + " " + state::evictOutcomeName(r.outcome));
  }
  void reclaimed(const policy::ReclaimPlan& plan) override {
    log.push_back("reclaimed " + plan.reclaimer + " on " + plan.node);
  }
  void waiting(const policy::Pod& pod, const std::string& reason) override {
    log.push_back("waiting " + pod.key() + ": " + reason);
  }
  void dryRun(const policy::ReclaimPlan& plan) override {
    log.push_back("dry-run " + plan.reclaimer + " on " + plan.node);
  }
  std::vector<std::string> log;
};

policy::Pod startedAgo(policy::Pod pod, const Clock& clock, int minutes) {
  pod.started = clock.now() - std::chrono::minutes{minutes};
  return pod;
}

// 4 nodes x 10 GPUs; team-a and team-b deserve 20 each; team-a runs 40 (node-4: 8 + 2), team-b
// is idle and then asks for 8 GPUs.
struct Fixture {
  explicit Fixture(bool deletes = true, ReclaimSettings settings = {}, bool offeredIsDemand = true)
      : clock(std::make_shared<testing::ManualClock>()),
        mirror(clock,
               [&] {
                 state::MirrorOptions options;
                 options.offeredPodsAreDemand = offeredIsDemand;
                 return options;
               }()),
        evictor(mirror, deletes),
        controller(
            mirror, evictor, clock, settings, [this] { return leader.load(); }, &observer) {
    QuotaConfig quota;
    quota.queues = {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)};
    mirror.setQuotaConfig(quota);
    for (int i = 1; i <= 4; ++i) mirror.upsertNode(MakeNode("node-" + std::to_string(i)).gpus(10));
    mirror.upsertPod(startedAgo(MakePod("team-a", "a1").gpus(10).on("node-1"), *clock, 300));
    mirror.upsertPod(startedAgo(MakePod("team-a", "a2").gpus(10).on("node-2"), *clock, 200));
    mirror.upsertPod(startedAgo(MakePod("team-a", "a3").gpus(10).on("node-3"), *clock, 100));
    mirror.upsertPod(startedAgo(MakePod("team-a", "a4").gpus(8).on("node-4"), *clock, 50));
    mirror.upsertPod(startedAgo(MakePod("team-a", "a5").gpus(2).on("node-4"), *clock, 40));
  }
  void submitB(const std::string& name = "big", double gpus = 8) {
    mirror.notePending(MakePod("team-b", name).gpus(gpus));
  }

  std::shared_ptr<testing::ManualClock> clock;
  Mirror mirror;
  ScriptedEvictor evictor;
  RecordingObserver observer;
  std::atomic<bool> leader{true};
  ReclaimController controller;
};

TEST(ReclaimControllerTest, EvictsTheFewestBorrowedPodsAndHoldsTheNode) {
  Fixture f;
  f.submitB();
  ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_TRUE(stats.ran);
  EXPECT_EQ(stats.owed, 1);
  EXPECT_EQ(stats.planned, 1);
  EXPECT_EQ(stats.evicted, 1);
  EXPECT_EQ(stats.inFlight, 1);
  EXPECT_EQ(f.evictor.calls, std::vector<std::string>{"a4"});
  EXPECT_EQ(f.evictor.reasons.front(),
            "Reclaimed by queue team-b: team-a is 8 GPUs over its fair share of 32");
  EXPECT_EQ(f.observer.log,
            (std::vector<std::string>{"evicted a4", "reclaimed team-b/big on node-4"}));
  EXPECT_EQ(f.mirror.snapshot()->findNode("node-4")->free(), testing::gpus(8));
  EXPECT_EQ(f.controller.evictionsTotal(), 1u);
  EXPECT_EQ(f.controller.evictionsByQueue(), (std::map<std::string, std::uint64_t>{{"team-a", 1}}));

  // The freed GPUs are held for team-b/big.
  const auto held = f.mirror.reservations();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].node, "node-4");
  EXPECT_EQ(held[0].holder, "uid-team-b-big");
  EXPECT_EQ(held[0].gpus, testing::gpus(8));
  EXPECT_EQ(held[0].queue, "team-b");

  // The next round evicts nothing more: the reclaim is in flight until team-b/big binds.
  stats = f.controller.runOnce();
  EXPECT_EQ(stats.evicted, 0);
  EXPECT_EQ(stats.inFlight, 1);
  ASSERT_TRUE(f.mirror.assume("uid-team-b-big", "node-4").ok());
  f.mirror.confirm("uid-team-b-big");
  stats = f.controller.runOnce();
  EXPECT_EQ(stats.inFlight, 0);
  EXPECT_EQ(f.evictor.calls.size(), 1u);
  EXPECT_TRUE(f.mirror.reservations().empty());
}

// Against an API server a late /filter for a pod already deleted is no demand: reclaim evicts
// nothing for it (in a real cluster it evicted a running pod for such a phantom). Once the watch
// shows the pod, it is demand and reclaim acts.
TEST(ReclaimControllerTest, APodOnlyOfferedIsNoDemandAgainstAnApiServer) {
  Fixture f(/*deletes=*/true, {}, /*offeredIsDemand=*/false);
  f.submitB();
  ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.owed, 0);
  EXPECT_EQ(stats.evicted, 0);
  EXPECT_TRUE(f.evictor.calls.empty());
  f.mirror.upsertPod(MakePod("team-b", "big").gpus(8));
  stats = f.controller.runOnce();
  EXPECT_EQ(stats.evicted, 1);
  EXPECT_EQ(f.evictor.calls, std::vector<std::string>{"a4"});
}

TEST(ReclaimControllerTest, VictimsStillShowingAreNotEvictedTwice) {
  Fixture f(/*deletes=*/false);
  f.submitB();
  f.controller.runOnce();
  ASSERT_EQ(f.evictor.calls, std::vector<std::string>{"a4"});
  // The watch has not deleted a4 yet; a second pending pod of team-b must not make the loop evict
  // for the same GPUs again, nor plan on node-4.
  f.submitB("second", 8);
  const ReclaimRoundStats stats = f.controller.runOnce();
  ASSERT_EQ(f.evictor.calls.size(), 2u);
  EXPECT_NE(f.evictor.calls[1], "a4");
  EXPECT_EQ(stats.evicted, 1);
  EXPECT_EQ(stats.inFlight, 2);
}

TEST(ReclaimControllerTest, RefusedEvictionDropsThePlanAndTriesTheNext) {
  Fixture f;
  f.evictor.script["a4"] = EvictOutcome::kRefused;
  f.submitB();
  const ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(f.evictor.calls, (std::vector<std::string>{"a4", "a3"}));
  EXPECT_EQ(stats.refused, 1);
  EXPECT_EQ(stats.evicted, 1);
  EXPECT_EQ(stats.planned, 1);
  EXPECT_EQ(f.observer.log.front(), "failed a4 refused");
  EXPECT_EQ(f.observer.log.back(), "reclaimed team-b/big on node-3");
  EXPECT_NE(f.mirror.findPod("uid-team-a-a4"), nullptr);
}

TEST(ReclaimControllerTest, GivesUpAfterMaxAttemptsAndSaysWhy) {
  ReclaimSettings settings;
  settings.maxAttempts = 2;
  Fixture f(true, settings);
  for (const char* name : {"a1", "a2", "a3", "a4"}) f.evictor.script[name] = EvictOutcome::kError;
  f.submitB();
  const ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(f.evictor.calls, (std::vector<std::string>{"a4", "a3"}));
  EXPECT_EQ(stats.waiting, 1);
  EXPECT_EQ(stats.planned, 0);
  ASSERT_FALSE(f.observer.log.empty());
  EXPECT_NE(f.observer.log.back().find("waiting team-b/big: eviction of team-a/a3 error"),
            std::string::npos)
      << f.observer.log.back();
}

TEST(ReclaimControllerTest, DryRunEvictsNothingAndReportsThePlan) {
  ReclaimSettings settings;
  settings.dryRun = true;
  Fixture f(true, settings);
  f.submitB();
  const ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_TRUE(f.evictor.calls.empty());
  EXPECT_EQ(stats.planned, 1);
  EXPECT_EQ(stats.evicted, 0);
  const auto plans = f.controller.lastDryRun();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].node, "node-4");
  ASSERT_EQ(plans[0].victims.size(), 1u);
  EXPECT_EQ(plans[0].victims[0].pod->name, "a4");
  EXPECT_EQ(f.observer.log, std::vector<std::string>{"dry-run team-b/big on node-4"});
  EXPECT_NE(f.mirror.findPod("uid-team-a-a4"), nullptr);
  EXPECT_EQ(f.controller.evictionsTotal(), 0u);
  EXPECT_TRUE(f.mirror.reservations().empty());
}

// A round plans once per class of alike pods while nothing changes (a backlog of thousands of
// owed pods cost one plan each), but every waiting pod is still told why.
TEST(ReclaimControllerTest, AlikeWaitingPodsAreEachToldWhy) {
  Fixture f;
  QuotaConfig quota;
  quota.queues = {MakeQueue("team-a").deserved(20).obj(), MakeQueue("team-b").deserved(20).obj()};
  quota.queues[0].reclaimMinRuntime = std::chrono::hours{1000};  // nothing of team-a may go
  f.mirror.setQuotaConfig(quota);
  for (int i = 1; i <= 5; ++i) f.submitB("w" + std::to_string(i), 2);
  const ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.owed, 5);
  EXPECT_EQ(stats.waiting, 5);
  EXPECT_TRUE(f.evictor.calls.empty());
  ASSERT_EQ(f.observer.log.size(), 5u);
  const std::string why =
      ": no node can be freed for the pod (2 GPUs, queue team-b): evicting what the rules allow "
      "leaves at most 0 GPUs free on one node; 5 pods are protected by reclaimMinRuntime";
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(f.observer.log[static_cast<std::size_t>(i - 1)],
              "waiting team-b/w" + std::to_string(i) + why);
  }
}

// serve's log: one line per reason and round at info, each pod's at debug.
TEST(ReclaimControllerTest, ServeLogsOneLinePerReasonAndRound) {
  testsupport::CapturedLogs logs;
  Fixture f;
  QuotaConfig quota;
  quota.queues = {MakeQueue("team-a").deserved(20).obj(), MakeQueue("team-b").deserved(20).obj()};
  quota.queues[0].reclaimMinRuntime = std::chrono::hours{1000};
  f.mirror.setQuotaConfig(quota);
  for (int i = 1; i <= 5; ++i) f.submitB("w" + std::to_string(i), 2);
  ReclaimRunner runner(f.mirror, {}, f.clock, nullptr);
  runner.controller().runOnce();
  const std::string text = logs.text();
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("\"level\":\"info\""), 1u) << text;
  EXPECT_EQ(count("reclaim: team-b/w1 and 4 more owed pods wait: no node can be freed"), 1u)
      << text;
  EXPECT_EQ(count("\"level\":\"debug\""), 5u) << text;
}

// An act changes the round: the next pod of the same class is planned afresh, not given the
// first one's outcome.
TEST(ReclaimControllerTest, AlikePodsEachGetTheirOwnPlan) {
  ReclaimSettings settings;
  settings.dryRun = true;
  Fixture f(true, settings);
  f.submitB("first", 8);
  f.submitB("second", 8);
  const ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.planned, 2);
  const auto plans = f.controller.lastDryRun();
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_NE(plans[0].node, plans[1].node);
}

TEST(ReclaimControllerTest, OnlyTheLeaderEvicts) {
  Fixture f;
  f.leader = false;
  f.submitB();
  EXPECT_FALSE(f.controller.runOnce().ran);
  EXPECT_TRUE(f.evictor.calls.empty());
  f.leader = true;
  EXPECT_TRUE(f.controller.runOnce().ran);
  EXPECT_EQ(f.evictor.calls.size(), 1u);
}

TEST(ReclaimControllerTest, DisabledDoesNothing) {
  ReclaimSettings settings;
  settings.enabled = false;
  Fixture f(true, settings);
  f.submitB();
  EXPECT_FALSE(f.controller.runOnce().ran);
  EXPECT_TRUE(f.evictor.calls.empty());
}

TEST(ReclaimControllerTest, InFlightReclaimExpiresAfterHoldFor) {
  ReclaimSettings settings;
  settings.holdFor = std::chrono::seconds{60};
  Fixture f(/*deletes=*/false, settings);
  f.submitB();
  f.controller.runOnce();
  EXPECT_EQ(f.controller.lastRound().inFlight, 1);
  f.clock->advance(std::chrono::seconds{61});
  f.mirror.deletePod("uid-team-a-a4");  // the watch finally reports the victim gone
  const ReclaimRoundStats stats = f.controller.runOnce();
  EXPECT_EQ(stats.inFlight, 0);
  EXPECT_EQ(stats.evicted, 0);  // team-b/big fits on node-4 now: nothing more to evict
  EXPECT_TRUE(f.mirror.reservations().empty());
}

TEST(ReclaimControllerTest, MostOwedQueueGoesFirst) {
  ReclaimSettings settings;
  settings.maxReclaimsPerRound = 1;
  auto clock = std::make_shared<testing::ManualClock>();
  Mirror mirror(clock);
  QuotaConfig quota;
  quota.queues = {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(4),
                  MakeQueue("team-c").deserved(16)};
  mirror.setQuotaConfig(quota);
  mirror.upsertNode(MakeNode("node-1").gpus(8));
  mirror.upsertNode(MakeNode("node-2").gpus(8));
  mirror.upsertPod(MakePod("team-a", "a1").gpus(8).on("node-1"));
  mirror.upsertPod(MakePod("team-a", "a2").gpus(8).on("node-2"));
  mirror.notePending(MakePod("team-b", "b").gpus(4));
  mirror.notePending(MakePod("team-c", "c").gpus(4));
  ScriptedEvictor evictor(mirror, true);
  RecordingObserver observer;
  ReclaimController controller(mirror, evictor, clock, settings, {}, &observer);
  controller.runOnce();
  ASSERT_FALSE(observer.log.empty());
  EXPECT_EQ(observer.log.back(), "reclaimed team-c/c on node-1");
}

TEST(ReclaimControllerTest, ThreadRunsRoundsUntilStopped) {
  ReclaimSettings settings;
  settings.period = std::chrono::milliseconds{10};
  Fixture f(true, settings);
  f.submitB();
  f.controller.start();
  for (int i = 0; i < 500 && f.controller.evictionsTotal() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  f.controller.stop();
  f.controller.stop();  // idempotent
  EXPECT_EQ(f.controller.evictionsTotal(), 1u);
  EXPECT_EQ(f.mirror.findPod("uid-team-a-a4"), nullptr);
}

}  // namespace
}  // namespace gpufair::app
