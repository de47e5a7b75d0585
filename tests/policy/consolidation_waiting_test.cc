// planConsolidation for a pod asking for a share of one GPU, planGangConsolidation for a
// waiting gang (moves that make room for every member, or none), and which pods
// consolidationClassKey calls alike.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/consolidation.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;
using testing::resolved;
using testing::snapshotOf;
using Kind = ConsolidationOutcome::Kind;

const Timestamp kNow = Timestamp{std::chrono::hours{500'000}};

Pod ran(MakePod pod, int minutes) {
  Pod p = pod.obj();
  p.started = kNow - std::chrono::minutes{minutes};
  return p;
}

MakePod aPod(const std::string& name, const std::string& node) {
  return MakePod("team-a", name).on(node).controller("job-a").label("job-name", "a");
}

std::vector<QueueQuota> queues() {
  return {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(30)};
}

std::vector<std::string> moved(const ConsolidationPlan& plan) {
  std::vector<std::string> out;
  for (const auto& m : plan.moves) out.push_back(m.pod->name + " " + m.from + "->" + m.to);
  return out;
}

// Two one-GPU nodes: node-1 runs s1 (0.3, movable) and f1 (0.3), node-2 f2 (0.7). A 0.5 share
// waits: 0.7 GPU is free in total, at most 0.4 on one GPU. Moving s1 to node-2 frees 0.7 there.
struct ShareCase {
  std::vector<Pod> pods = {ran(aPod("s1", "node-1").share(0.3).gpuIndex(0).movable(), 30),
                           ran(aPod("f1", "node-1").share(0.3).gpuIndex(0), 30),
                           ran(aPod("f2", "node-2").share(0.7).gpuIndex(0), 30)};
  ConsolidationOutcome plan(double share = 0.5) const {
    const SnapshotPtr snap =
        snapshotOf({MakeNode("node-1").gpus(1), MakeNode("node-2").gpus(1)}, pods, queues());
    ConsolidationOptions options;
    options.now = kNow;
    return planConsolidation(*snap, resolved(*snap, MakePod("team-b", "half").share(share).obj()),
                             options);
  }
};

TEST(ConsolidationWaitingTest, AShareWaitingOnFragmentedGpusGetsOneMove) {
  ShareCase c;
  const ConsolidationOutcome out = c.plan();
  ASSERT_EQ(out.kind, Kind::kPlanned) << out.reason;
  EXPECT_EQ(out.plan->node, "node-1");
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"s1 node-1->node-2"});
  EXPECT_EQ(out.plan->gpus, 500);
  EXPECT_NE(out.plan->reason.find("team-b/half (0.5 GPUs) fits on node-1"), std::string::npos)
      << out.plan->reason;
}

TEST(ConsolidationWaitingTest, AShareWithoutMovablePodsOrFreeRoomGetsNoPlan) {
  ShareCase pinned;
  pinned.pods[0] = ran(aPod("s1", "node-1").share(0.3).gpuIndex(0), 30);
  const ConsolidationOutcome none = pinned.plan();
  EXPECT_EQ(none.kind, Kind::kNoPlan);
  EXPECT_TRUE(none.fragmented());
  EXPECT_NE(none.reason.find("0.7 GPUs free in total but at most 0.4 GPUs on one GPU"),
            std::string::npos)
      << none.reason;
  EXPECT_NE(none.reason.find("no movable pods"), std::string::npos) << none.reason;
  // 0.8 asked, 0.7 free in all: moving cannot help.
  EXPECT_EQ(ShareCase{}.plan(0.8).kind, Kind::kNotFragmented);
  // 0.4 fits on node-1 now.
  EXPECT_EQ(ShareCase{}.plan(0.4).kind, Kind::kNotNeeded);
}

// The seed layout (six movable 3-GPU pods 2,2,1,1 on four 10-GPU nodes: free 4,4,7,7) and team-b's
// gang of two 8-GPU pods: a6 leaves node-4, a5 leaves node-3, one move per member.
struct GangCase {
  int size = 2;
  std::vector<Pod> pods = {ran(aPod("a1", "node-1").gpus(3).movable(), 500),
                           ran(aPod("a2", "node-1").gpus(3).movable(), 400),
                           ran(aPod("a3", "node-2").gpus(3).movable(), 300),
                           ran(aPod("a4", "node-2").gpus(3).movable(), 250),
                           ran(aPod("a5", "node-3").gpus(3).movable(), 100),
                           ran(aPod("a6", "node-4").gpus(3).movable(), 50)};
  GangConsolidationOutcome plan(ConsolidationOptions options = {}) const {
    std::vector<Pod> all = pods;
    all.push_back(MakePod("team-b", "g-0").gpus(8).gang("g", size).obj());  // pending
    const SnapshotPtr snap = snapshotOf({MakeNode("node-1").gpus(10), MakeNode("node-2").gpus(10),
                                         MakeNode("node-3").gpus(10), MakeNode("node-4").gpus(10)},
                                        all, queues());
    options.now = kNow;
    return planGangConsolidation(
        *snap, resolved(*snap, MakePod("team-b", "g-0").gpus(8).gang("g", size).obj()), options);
  }
};

TEST(ConsolidationWaitingTest, AWaitingGangGetsRoomForEveryMember) {
  const GangConsolidationOutcome out = GangCase{}.plan();
  ASSERT_EQ(out.kind, Kind::kPlanned) << out.reason;
  EXPECT_EQ(out.gang, "gang:team-b/g");
  ASSERT_EQ(out.plans.size(), 2U);
  EXPECT_EQ(out.moves(), 2U);
  EXPECT_EQ(out.plans[0].node, "node-4");
  EXPECT_EQ(moved(out.plans[0]), std::vector<std::string>{"a6 node-4->node-1"});
  EXPECT_EQ(out.plans[1].node, "node-3");
  EXPECT_EQ(moved(out.plans[1]), std::vector<std::string>{"a5 node-3->node-2"});
  // Never the same node for two members, nor a mover's destination as a target.
  EXPECT_NE(out.plans[0].node, out.plans[1].node);
}

TEST(ConsolidationWaitingTest, AGangGetsRoomForAllItsMembersOrNone) {
  ConsolidationOptions one;
  one.maxMoves = 1;  // room for one member only: the gang gets nothing
  const GangConsolidationOutcome tight = GangCase{}.plan(one);
  EXPECT_EQ(tight.kind, Kind::kNoPlan);
  EXPECT_TRUE(tight.plans.empty());
  EXPECT_NE(tight.reason.find("member team-b/"), std::string::npos) << tight.reason;
  // Three members of 8 GPUs: 22 free in all, never 24.
  GangCase three;
  three.size = 3;
  const GangConsolidationOutcome big = three.plan();
  EXPECT_NE(big.kind, Kind::kPlanned);
  EXPECT_TRUE(big.plans.empty());
  // Nothing movable: no plan, and why.
  GangCase pinned;
  for (Pod& p : pinned.pods) p.labels.erase("gpufair.io/movable");
  const GangConsolidationOutcome none = pinned.plan();
  EXPECT_EQ(none.kind, Kind::kNoPlan);
  EXPECT_NE(none.reason.find("no movable pods"), std::string::npos) << none.reason;
}

TEST(ConsolidationWaitingTest, AGangThatFitsOrIsNotAdmittedIsNotPlanned) {
  GangCase fits;
  fits.pods.resize(2);  // node-1 full-ish, node-2..4 empty: two 8-GPU members fit now
  EXPECT_EQ(fits.plan().kind, Kind::kNotNeeded);
  GangCase limited;
  const std::vector<Pod> pods = limited.pods;
  const SnapshotPtr snap = snapshotOf(
      {MakeNode("node-1").gpus(10), MakeNode("node-2").gpus(10), MakeNode("node-3").gpus(10),
       MakeNode("node-4").gpus(10)},
      pods, {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(8).limit(8)});
  ConsolidationOptions options;
  options.now = kNow;
  const GangConsolidationOutcome refused = planGangConsolidation(
      *snap, resolved(*snap, MakePod("team-b", "g-0").gpus(8).gang("g", 2).obj()), options);
  EXPECT_EQ(refused.kind, Kind::kNotEligible) << refused.reason;
  EXPECT_NE(refused.reason.find("does not admit the gang"), std::string::npos) << refused.reason;
  // A pod outside any gang is not this planner's.
  EXPECT_EQ(planGangConsolidation(*snap, resolved(*snap, MakePod("team-b", "solo").gpus(8).obj()),
                                  options)
                .kind,
            Kind::kNotEligible);
}

// Pods with one key come to the same outcome, word for word, with movers and without; what the
// planner reads of a pod tells keys apart, and pods it reads more of have none.
TEST(ConsolidationWaitingTest, AlikePodsShareAClassKeyAndTheirOutcome) {
  for (const bool movable : {true, false}) {
    std::vector<Pod> pods;
    const char* layout[] = {"node-1", "node-1", "node-2", "node-2", "node-3", "node-4"};
    for (int i = 0; i < 6; ++i) {
      MakePod a = aPod("a" + std::to_string(i + 1), layout[i]).gpus(3);
      if (movable) a.movable();
      pods.push_back(ran(a, 500 - 80 * i));
    }
    for (const char* name : {"w1", "w2", "holder"}) pods.push_back(MakePod("team-b", name).gpus(8));
    pods.push_back(MakePod("team-b", "small").gpus(4));
    pods.push_back(MakePod("team-b", "v100").gpus(8).models({"V100"}));
    pods.push_back(MakePod("team-b", "ganged").gpus(8).gang("g", 2));
    const Reservation held{.node = "node-1",
                           .gpus = testing::gpus(1),
                           .holder = "uid-team-b-holder",
                           .queue = "team-b",
                           .reason = "reclaim"};
    std::vector<Node> nodes;
    for (int i = 1; i <= 4; ++i) nodes.push_back(MakeNode("node-" + std::to_string(i)).gpus(10));
    auto snap = snapshotOf(nodes, pods, queues(), {}, {held});
    auto pending = [&](const char* name) {
      for (const PodPtr& p : snap->pending()) {
        if (p->name == name) return *p;
      }
      ADD_FAILURE() << name << " is not pending";
      return Pod{};
    };
    const std::string key = consolidationClassKey(*snap, pending("w1"));
    ASSERT_FALSE(key.empty());
    EXPECT_EQ(consolidationClassKey(*snap, pending("w2")), key);
    EXPECT_NE(consolidationClassKey(*snap, pending("small")), key);
    EXPECT_NE(consolidationClassKey(*snap, pending("v100")), key);
    EXPECT_EQ(consolidationClassKey(*snap, pending("holder")), "");
    EXPECT_EQ(consolidationClassKey(*snap, pending("ganged")), "");
    EXPECT_EQ(consolidationClassKey(*snap, resolved(*snap, MakePod("team-b", "unlisted").gpus(8))),
              "")
        << "not counted among the pending pods";
    ConsolidationOptions options;
    options.now = kNow;
    const ConsolidationOutcome first = planConsolidation(*snap, pending("w1"), options);
    const ConsolidationOutcome second = planConsolidation(*snap, pending("w2"), options);
    EXPECT_EQ(first.kind, movable ? Kind::kPlanned : Kind::kNoPlan) << first.reason;
    EXPECT_EQ(second.kind, first.kind);
    if (first.kind == Kind::kPlanned) {
      EXPECT_EQ(second.plan->node, first.plan->node);
      EXPECT_EQ(moved(*second.plan), moved(*first.plan));
    } else {
      EXPECT_EQ(second.reason, first.reason);
    }
  }
}

}  // namespace
}  // namespace gpufair::policy
