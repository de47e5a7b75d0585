// planReclaim beyond the table (reclaim_test.cc): victim reasons, promised GPUs, reservations,
// pods without GPUs, and which pods reclaimClassKey calls alike.
#include <gtest/gtest.h>

#include "gpufair/policy/reclaim.h"

#include "reclaim_support.h"
#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using namespace reclaim_test;  // NOLINT(google-build-using-namespace): the shared test helpers
using Kind = ReclaimOutcome::Kind;

TEST(ReclaimTest, VictimReasonSaysHowFarOverItsFairShare) {
  // team-b waits for 20 GPUs in all, so team-a's fair share is its deserved 20.
  std::vector<Pod> pods = teamAEverywhere();
  pods.push_back(MakePod("team-b", "big").gpus(8));
  pods.push_back(MakePod("team-b", "more").gpus(12));
  auto snap = testing::snapshotOf(nodes(4, 10), pods, abTwenty());
  ReclaimOptions options;
  options.now = kNow;
  auto out =
      planReclaim(*snap, testing::resolved(*snap, MakePod("team-b", "big").gpus(8)), options);
  ASSERT_TRUE(out.plan.has_value());
  EXPECT_EQ(out.plan->victims.front().reason,
            "Reclaimed by queue team-b: team-a is 20 GPUs over its fair share of 20");
}

TEST(ReclaimTest, PromisedGpusCountForTheirQueue) {
  // team-b is owed 10; 8 are already promised to a waiting reclaimer, so 4 more are not owed.
  auto snap =
      testing::snapshotOf(nodes(2, 10),
                          {ran(MakePod("team-a", "a1").gpus(10).on("node-1"), 100),
                           ran(MakePod("team-a", "a2").gpus(10).on("node-2"), 100)},
                          {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(10)});
  ReclaimOptions options;
  options.now = kNow;
  options.promised.push_back(
      std::make_shared<const Pod>(testing::resolved(*snap, MakePod("team-b", "first").gpus(8))));
  auto out =
      planReclaim(*snap, testing::resolved(*snap, MakePod("team-b", "second").gpus(4)), options);
  EXPECT_EQ(out.kind, Kind::kNotEligible) << out.reason;
}

TEST(ReclaimTest, GpusReservedForOthersAreNotFreed) {
  // node-1's free GPUs are held for another reclaimer; freeing 8 there would not be enough.
  std::vector<Pod> pods = {ran(MakePod("team-a", "a1").gpus(6).on("node-1"), 1),
                           ran(MakePod("team-a", "a2").gpus(10).on("node-2"), 100),
                           MakePod("team-b", "b").gpus(8)};
  Reservation held;
  held.node = "node-1";
  held.gpus = testing::gpus(4);
  held.holder = "uid-team-c-other";
  held.queue = "team-c";
  held.reason = "reclaim";
  auto snap =
      testing::snapshotOf(nodes(2, 10), pods,
                          {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(10),
                           MakeQueue("team-c").deserved(10)},
                          {}, {held});
  ReclaimOptions options;
  options.now = kNow;
  auto out = planReclaim(*snap, testing::resolved(*snap, pods.back()), options);
  ASSERT_TRUE(out.plan.has_value()) << out.reason;
  EXPECT_EQ(out.plan->node, "node-2");
  // The holder itself may use them: for it, node-1 needs only a1 gone... and a1 is younger.
  Pod holder = testing::resolved(*snap, MakePod("team-c", "other").gpus(8));
  out = planReclaim(*snap, holder, options);
  ASSERT_TRUE(out.plan.has_value()) << out.reason;
  EXPECT_EQ(out.plan->node, "node-1");
}

TEST(ReclaimTest, PodWithoutGpusIsNotEligible) {
  auto snap = testing::snapshotOf(nodes(1, 10), {}, abTwenty());
  auto out = planReclaim(*snap, testing::resolved(*snap, MakePod("team-b", "cpu")), {});
  EXPECT_EQ(out.kind, Kind::kNotEligible);
  EXPECT_EQ(out.reason, "the pod requests no GPUs");
}

// Pods with one key come to the same outcome, word for word; what the planner reads of a pod
// tells keys apart, and pods it reads more of have none.
TEST(ReclaimTest, AlikePodsShareAClassKeyAndTheirOutcome) {
  const Reservation held{.node = "node-4",
                         .gpus = testing::gpus(2),
                         .holder = "uid-team-b-holder",
                         .queue = "team-b",
                         .reason = "consolidation"};
  std::vector<Pod> pods = teamAEverywhere();
  for (const char* name : {"w1", "w2", "holder"}) pods.push_back(MakePod("team-b", name).gpus(8));
  pods.push_back(MakePod("team-b", "small").gpus(4));
  pods.push_back(MakePod("team-b", "t4").gpus(8).models({"T4"}));
  pods.push_back(MakePod("team-b", "ganged").gpus(8).gang("g", 2));
  for (const bool protectedPods : {false, true}) {
    std::vector<QueueQuota> queues = abTwenty();
    if (protectedPods) queues[0] = minRuntime(queues[0], std::chrono::hours{1000});
    auto snap = testing::snapshotOf(nodes(4, 10), pods, queues, {}, {held});
    ReclaimOptions options;
    options.now = kNow;
    auto pod = [&](const char* name) {
      for (const PodPtr& p : snap->pending()) {
        if (p->name == name) return *p;
      }
      ADD_FAILURE() << name << " is not pending";
      return Pod{};
    };
    const std::string key = reclaimClassKey(*snap, pod("w1"), options);
    ASSERT_FALSE(key.empty());
    EXPECT_EQ(reclaimClassKey(*snap, pod("w2"), options), key);
    EXPECT_NE(reclaimClassKey(*snap, pod("small"), options), key);
    EXPECT_NE(reclaimClassKey(*snap, pod("t4"), options), key);
    EXPECT_EQ(reclaimClassKey(*snap, pod("holder"), options), "") << "holds node-4's 2 GPUs";
    EXPECT_EQ(reclaimClassKey(*snap, pod("ganged"), options), "");
    EXPECT_EQ(reclaimClassKey(*snap, *snap->nodes().front()->pods().front(), options), "")
        << "a bound pod";
    const ReclaimOutcome first = planReclaim(*snap, pod("w1"), options);
    const ReclaimOutcome second = planReclaim(*snap, pod("w2"), options);
    EXPECT_EQ(first.kind, protectedPods ? Kind::kNoPlan : Kind::kPlanned) << first.reason;
    EXPECT_EQ(second.kind, first.kind);
    if (first.kind != Kind::kPlanned) {
      EXPECT_EQ(second.reason, first.reason);
      EXPECT_EQ(first.reason.find("w1"), std::string::npos) << first.reason;
    } else {
      EXPECT_EQ(second.plan->node, first.plan->node);
      ASSERT_EQ(second.plan->victims.size(), first.plan->victims.size());
      for (std::size_t i = 0; i < first.plan->victims.size(); ++i)
        EXPECT_EQ(second.plan->victims[i].pod, first.plan->victims[i].pod);
    }
    ReclaimOptions promised = options;
    promised.promised.push_back(std::make_shared<const Pod>(pod("w1")));
    EXPECT_EQ(reclaimClassKey(*snap, pod("w1"), promised), "") << "promised already";
  }
}

}  // namespace
}  // namespace gpufair::policy
