// planReclaim: table-driven clusters, each with the reclaimer, what it should decide, and on
// which node with which victims.
#include "gpufair/policy/reclaim.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/admission.h"

#include "reclaim_support.h"
#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;
using Kind = ReclaimOutcome::Kind;
using namespace reclaim_test;  // NOLINT(google-build-using-namespace): the shared test helpers

struct Case {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<QueueQuota> queues;
  Pod reclaimer;
  Kind kind = Kind::kPlanned;
  std::string node;                      // planned: the node
  std::vector<std::string> victims;      // planned: victim names, in eviction order
  std::string reason;                    // substring of the outcome's reason
  std::vector<std::string> spared = {};  // uids not to choose
  std::vector<std::string> releasing = {};
  std::vector<std::string> excludedNodes = {};
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

const Case kCases[] = {
    {"YoungestSinglePodThatFreesANode",
     nodes(4, 10),
     teamAEverywhere(),
     abTwenty(),
     MakePod("team-b", "big").gpus(8),
     Kind::kPlanned,
     "node-4",
     {"a4"},
     "queue team-b (0/20 GPUs deserved) reclaims 8 GPUs on node-4 for team-b/big by evicting 1 "
     "pod of team-a"},
    {"FewestEvictionsBeatsYouth",
     nodes(2, 10),
     {ran(MakePod("team-a", "old").gpus(10).on("node-1"), 500),
      ran(MakePod("team-a", "y1").gpus(5).on("node-2"), 10),
      ran(MakePod("team-a", "y2").gpus(5).on("node-2"), 5)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "big").gpus(8),
     Kind::kPlanned,
     "node-1",
     {"old"},
     ""},
    {"QueueMostOverGivesFirst",
     nodes(2, 8),
     {ran(MakePod("team-a", "a").gpus(8).on("node-1"), 10),
      ran(MakePod("team-c", "c").gpus(8).on("node-2"), 500)},
     {MakeQueue("team-a").deserved(4), MakeQueue("team-b").deserved(8),
      MakeQueue("team-c").deserved(0)},
     MakePod("team-b", "b").gpus(4),
     Kind::kPlanned,
     "node-2",
     {"c"},
     "Reclaimed by queue team-b: team-c is 4 GPUs over its fair share of 4"},
    {"WeightsDecideWhoGivesBack",
     nodes(4, 10),
     {ran(MakePod("team-a", "a1").gpus(10).on("node-1"), 300),
      ran(MakePod("team-a", "a2").gpus(10).on("node-2"), 200),
      ran(MakePod("team-c", "c1").gpus(10).on("node-3"), 20),
      ran(MakePod("team-c", "c2").gpus(10).on("node-4"), 10)},
     {MakeQueue("team-a").deserved(0).weight(1), MakeQueue("team-b").deserved(10),
      MakeQueue("team-c").deserved(0).weight(3)},
     MakePod("team-b", "b").gpus(10),
     Kind::kPlanned,
     "node-2",
     {"a2"},
     "team-a is 10 GPUs over its fair share of 10"},
    {"BelowFairShareReclaimsDownToTheVictimsShare",
     nodes(4, 10),
     teamAEverywhere(),
     {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(4)},
     MakePod("team-b", "big").gpus(8),
     Kind::kPlanned,
     "node-4",
     {"a4"},
     "queue team-b (0/8 GPUs fair share) reclaims 8 GPUs on node-4"},
    {"NeverBelowDeserved",
     nodes(4, 10),
     teamAEverywhere(),
     {MakeQueue("team-a").deserved(35), MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "big").gpus(8),
     Kind::kNoPlan,
     "",
     {},
     "leaves at most 2 GPUs free on one node"},
    {"QueueWithinDeservedIsNoVictim",
     nodes(1, 10),
     {ran(MakePod("team-a", "a").gpus(10).on("node-1"), 100)},
     {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "b").gpus(2),
     Kind::kNoPlan,
     "",
     {},
     "no other queue holds more than it is owed"},
    {"ReclaimerAboveDeservedAndFairShareMayNotReclaim",
     nodes(4, 10),
     teamAEverywhere(),
     {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(4).weight(0)},
     MakePod("team-b", "big").gpus(8),
     Kind::kNotEligible,
     "",
     {},
     "queue team-b would hold 8 GPUs with this pod, above its deserved 4 and its fair share 4"},
    {"FitsAlready",
     nodes(2, 10),
     {ran(MakePod("team-a", "a").gpus(10).on("node-1"), 100)},
     abTwenty(),
     MakePod("team-b", "b").gpus(8),
     Kind::kNotNeeded,
     "",
     {},
     "fits on node node-2 now"},
    {"MinRuntimeProtectsYoungPods",
     nodes(2, 10),
     {ran(MakePod("team-a", "young").gpus(10).on("node-1"), 5),
      ran(MakePod("team-a", "old").gpus(10).on("node-2"), 60)},
     {minRuntime(MakeQueue("team-a").deserved(0), std::chrono::minutes{10}),
      MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-2",
     {"old"},
     ""},
    {"MinRuntimeProtectsEverything",
     nodes(1, 10),
     {ran(MakePod("team-a", "young").gpus(10).on("node-1"), 5)},
     {minRuntime(MakeQueue("team-a").deserved(0), std::chrono::minutes{10}),
      MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "b").gpus(8),
     Kind::kNoPlan,
     "",
     {},
     "1 pod is protected by reclaimMinRuntime"},
    {"GangGoesTogether",
     nodes(2, 10),
     {ran(MakePod("team-a", "g-0").gpus(10).on("node-1").gang("g", 2), 5),
      ran(MakePod("team-a", "g-1").gpus(10).on("node-2").gang("g", 2), 5)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-1",
     {"g-0", "g-1"},
     "by evicting 2 pods of team-a"},
    {"GangWithAProtectedMemberStays",
     nodes(2, 10),
     {ran(MakePod("team-a", "g-0").gpus(10).on("node-1").gang("g", 2), 60),
      ran(MakePod("team-a", "g-1").gpus(10).on("node-2").gang("g", 2), 1)},
     {minRuntime(MakeQueue("team-a").deserved(0), std::chrono::minutes{10}),
      MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "b").gpus(8),
     Kind::kNoPlan,
     "",
     {},
     "protected by reclaimMinRuntime"},
    {"GangOfOtherNamespaceIsAnotherGang",
     nodes(2, 10),
     {ran(MakePod("team-a", "g-0").gpus(10).on("node-1").gang("g", 2), 60),
      ran(MakePod("team-c", "g-1").gpus(10).on("node-2").gang("g", 2), 1)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(20),
      MakeQueue("team-c").deserved(0)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-1",
     {"g-0"},
     ""},
    {"SparedPodIsNotChosen",
     nodes(2, 10),
     {ran(MakePod("team-a", "pdb").gpus(10).on("node-1"), 1),
      ran(MakePod("team-a", "other").gpus(10).on("node-2"), 100)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-2",
     {"other"},
     "",
     {"uid-team-a-pdb"}},
    {"ReleasingPodsAreCountedAsGone",
     nodes(1, 10),
     {ran(MakePod("team-a", "going").gpus(10).on("node-1"), 1)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "b").gpus(8),
     Kind::kNotNeeded,
     "",
     {},
     "once pods being evicted there are gone",
     {},
     {"uid-team-a-going"}},
    {"ExcludedNodeIsNotUsed",
     nodes(2, 10),
     {ran(MakePod("team-a", "a1").gpus(10).on("node-1"), 1),
      ran(MakePod("team-a", "a2").gpus(10).on("node-2"), 100)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-2",
     {"a2"},
     "",
     {},
     {},
     {"node-1"}},
    {"TerminatingPodsAreNotVictims",
     nodes(1, 10),
     {ran(MakePod("team-a", "t").gpus(10).on("node-1").terminating(), 100)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(20)},
     MakePod("team-b", "b").gpus(8),
     Kind::kNoPlan,
     "",
     {},
     ""},
    {"SeveralSmallPodsWhenNeeded",
     nodes(1, 8),
     {ran(MakePod("team-a", "s1").gpus(2).on("node-1"), 40),
      ran(MakePod("team-a", "s2").gpus(2).on("node-1"), 30),
      ran(MakePod("team-a", "s3").gpus(2).on("node-1"), 20),
      ran(MakePod("team-a", "s4").gpus(2).on("node-1"), 10)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(8)},
     MakePod("team-b", "b").gpus(5),
     Kind::kPlanned,
     "node-1",
     {"s4", "s3", "s2"},
     ""},
    {"HeadroomLimitsTheVictims",
     nodes(1, 8),
     {ran(MakePod("team-a", "s1").gpus(2).on("node-1"), 40),
      ran(MakePod("team-a", "s2").gpus(2).on("node-1"), 30),
      ran(MakePod("team-a", "s3").gpus(2).on("node-1"), 20),
      ran(MakePod("team-a", "s4").gpus(2).on("node-1"), 10)},
     {MakeQueue("team-a").deserved(4), MakeQueue("team-b").deserved(8)},
     MakePod("team-b", "b").gpus(5),
     Kind::kNoPlan,
     "",
     {},
     "leaves at most 4 GPUs free on one node"},
    {"FractionalPodsFreeAWholeGpu",
     {MakeNode("node-1").gpus(2)},
     {ran(MakePod("team-a", "f1").share(0.5).gpuIndex(0).on("node-1"), 40),
      ran(MakePod("team-a", "f2").share(0.5).gpuIndex(0).on("node-1"), 30),
      ran(MakePod("team-a", "f3").share(0.5).gpuIndex(1).on("node-1"), 20)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(2)},
     MakePod("team-b", "b").gpus(1),
     Kind::kPlanned,
     "node-1",
     {"f3"},
     ""},
    {"LabelledBorrowedPodsGoFirst",
     nodes(2, 10),
     {ran(MakePod("team-a", "in-quota").gpus(10).on("node-1"), 1),
      ran(MakePod("team-a", "borrowed").gpus(10).on("node-2").overQuota(), 500)},
     {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-2",
     {"borrowed"},
     ""},
    {"LabelledBorrowedPodsBeforeFewerEvictions",
     nodes(2, 10),
     {ran(MakePod("team-a", "in-quota").gpus(10).on("node-1"), 1),
      ran(MakePod("team-a", "b1").gpus(5).on("node-2").overQuota(), 500),
      ran(MakePod("team-a", "b2").gpus(5).on("node-2").overQuota(), 400)},
     {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "b").gpus(8),
     Kind::kPlanned,
     "node-2",
     {"b2", "b1"},
     ""},
    {"InQuotaPodsStaySafeWhenBorrowedOnesAreProtected",
     nodes(2, 10),
     {ran(MakePod("team-a", "in-quota").gpus(10).on("node-1"), 500),
      ran(MakePod("team-a", "borrowed").gpus(10).on("node-2").overQuota(), 1)},
     {minRuntime(MakeQueue("team-a").deserved(10), std::chrono::minutes{10}),
      MakeQueue("team-b").deserved(10)},
     MakePod("team-b", "b").gpus(8),
     Kind::kNoPlan,
     "",
     {},
     "1 pod is protected by reclaimMinRuntime"},
    {"ModelMismatchIsNotCandidate",
     {MakeNode("node-1").gpus(8).model("T4"), MakeNode("node-2").gpus(8).model("A100")},
     {ran(MakePod("team-a", "t4").gpus(8).on("node-1"), 1),
      ran(MakePod("team-a", "a100").gpus(8).on("node-2"), 100)},
     {MakeQueue("team-a").deserved(0), MakeQueue("team-b").deserved(8)},
     MakePod("team-b", "b").gpus(8).models({"A100"}),
     Kind::kPlanned,
     "node-2",
     {"a100"},
     ""},
};

class ReclaimTest : public ::testing::TestWithParam<Case> {};

std::vector<PodPtr> podsNamed(const ClusterSnapshot& snap, const std::vector<std::string>& uids) {
  std::vector<PodPtr> out;
  for (const auto& n : snap.nodes()) {
    for (const auto& p : n->pods()) {
      if (std::find(uids.begin(), uids.end(), p->uid) != uids.end()) out.push_back(p);
    }
  }
  return out;
}

TEST_P(ReclaimTest, Plans) {
  const Case& c = GetParam();
  // The reclaimer is pending in the snapshot, as kube-scheduler's /filter made it.
  std::vector<Pod> all = c.pods;
  all.push_back(c.reclaimer);
  auto snap = testing::snapshotOf(c.nodes, all, c.queues);
  const Pod pod = testing::resolved(*snap, c.reclaimer);
  ReclaimOptions options;
  options.now = kNow;
  options.spared.insert(c.spared.begin(), c.spared.end());
  options.releasing = podsNamed(*snap, c.releasing);
  options.excludedNodes.insert(c.excludedNodes.begin(), c.excludedNodes.end());

  const ReclaimOutcome out = planReclaim(*snap, pod, options);
  EXPECT_EQ(reclaimKindName(out.kind), std::string(reclaimKindName(c.kind))) << out.reason;
  std::string text = out.reason;
  if (out.plan) {
    for (const auto& v : out.plan->victims) text += " | " + v.reason;
  }
  EXPECT_NE(text.find(c.reason), std::string::npos) << text;
  if (c.kind != Kind::kPlanned) {
    EXPECT_FALSE(out.plan.has_value());
    return;
  }
  ASSERT_TRUE(out.plan.has_value());
  EXPECT_EQ(out.plan->node, c.node);
  std::vector<std::string> victims;
  for (const auto& v : out.plan->victims) {
    victims.push_back(v.pod->name);
    EXPECT_NE(v.reason.find("Reclaimed by queue " + pod.queue + ": "), std::string::npos)
        << v.reason;
  }
  EXPECT_EQ(victims, c.victims);

  // The plan is deterministic, and after the evictions the reclaimer fits on the node.
  const ReclaimOutcome again = planReclaim(*snap, pod, options);
  ASSERT_TRUE(again.plan.has_value());
  EXPECT_EQ(again.plan->node, out.plan->node);
  EXPECT_EQ(again.plan->reason, out.plan->reason);
  std::vector<Pod> remaining;
  for (const auto& p : c.pods) {
    const bool evicted = std::any_of(out.plan->victims.begin(), out.plan->victims.end(),
                                     [&](const ReclaimVictim& v) { return v.pod->uid == p.uid; });
    if (!evicted) remaining.push_back(p);
  }
  auto after = testing::snapshotOf(c.nodes, remaining, c.queues);
  EXPECT_TRUE(nodeFits(*after->findNode(out.plan->node), pod));
  const QueueState* victimQueue = after->findQueue(out.plan->victims.front().pod->queue);
  EXPECT_GE(victimQueue->allocated, victimQueue->quota.gpu.deserved);
}

INSTANTIATE_TEST_SUITE_P(Table, ReclaimTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gpufair::policy
