// The gang planner and the gang rules of filter.
#include "gpufair/policy/gang.h"

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

std::vector<Node> eightGpuNodes(int n) {
  std::vector<Node> nodes;
  for (int i = 1; i <= n; ++i) nodes.push_back(MakeNode("n" + std::to_string(i)).gpus(8));
  return nodes;
}

Pod member(int i, double gpus = 8, int size = 4) {
  return MakePod("team-b", "train-" + std::to_string(i)).gpus(gpus).gang("train", size);
}

struct PlanCase {
  const char* name;
  std::vector<Node> nodes;
  std::vector<Pod> pods;  // running (with a node) or pending members
  Pod member;             // the member offered
  std::vector<QueueQuota> queues;
  std::vector<std::string> nodesPlanned;  // slot nodes in plan order; empty: refused
  std::string reason;                     // refusal
};

class GangPlanTest : public ::testing::TestWithParam<PlanCase> {};

TEST_P(GangPlanTest, PlansEveryMemberOrExplains) {
  const PlanCase& c = GetParam();
  std::vector<Pod> pods = c.pods;
  pods.push_back(c.member);
  // Unless a case says otherwise, team-b deserves all it asks: room decides.
  auto snap = testing::snapshotOf(
      c.nodes, pods,
      c.queues.empty() ? std::vector<QueueQuota>{MakeQueue("team-b").deserved(64)} : c.queues);
  const GangPlan plan = planGang(*snap, testing::resolved(*snap, c.member));
  std::vector<std::string> planned;
  for (const auto& s : plan.slots) planned.push_back(s.node);
  if (c.reason.empty()) {
    ASSERT_TRUE(plan.status.isOk()) << plan.status.reason();
    EXPECT_EQ(planned, c.nodesPlanned);
    // The offered member always has a slot of its own.
    EXPECT_TRUE(std::any_of(plan.slots.begin(), plan.slots.end(),
                            [&](const GangSlot& s) { return s.uid == c.member.uid; }));
  } else {
    EXPECT_FALSE(plan.status.isOk());
    EXPECT_EQ(plan.status.reason(), c.reason);
    EXPECT_TRUE(plan.slots.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GangPlanTest,
    ::testing::Values(
        PlanCase{
            "FourByEightOnTheFourEmptyNodes",
            eightGpuNodes(6),
            {MakePod("team-a", "s1").gpus(1).on("n2"), MakePod("team-a", "s2").gpus(2).on("n5")},
            member(0),
            {},
            {"n1", "n3", "n4", "n6"},
            ""},
        PlanCase{
            "RefusedWholeWhenOnlySomeFit",
            eightGpuNodes(6),
            {MakePod("team-a", "s1").gpus(1).on("n1"), MakePod("team-a", "s2").gpus(1).on("n2"),
             MakePod("team-a", "s3").gpus(1).on("n3"), MakePod("team-a", "s4").gpus(1).on("n4")},
            member(0),
            {},
            {},
            "gang train needs 4 × 8 GPUs; 2 nodes have 8 free"},
        PlanCase{"KnownPendingMembersArePlannedToo",
                 eightGpuNodes(3),
                 {member(1), member(2), member(3, 1)},
                 member(0),
                 {},
                 {},
                 "gang train needs 3 × 8 GPUs + 1 × 1 GPU; 3 nodes have 8 free, not enough for "
                 "every member at once"},
        PlanCase{"EnoughNodesOneByOneButNotTogether",
                 {MakeNode("n1").gpus(8).model("V100"), MakeNode("n2").gpus(8).model("V100")},
                 {MakePod("team-b", "train-1").gpus(8).gang("train", 2).models({"A100"})},
                 member(0, 8, 2),
                 {},
                 {},
                 "gang train needs 2 × 8 GPUs; 2 nodes have 8 free, not enough for every member at "
                 "once"},
        PlanCase{"OnlyTheMissingMembersArePlanned",
                 eightGpuNodes(3),
                 {MakePod("team-b", "train-1").gpus(8).gang("train", 4).on("n1"),
                  MakePod("team-b", "train-2").gpus(8).gang("train", 4).on("n2")},
                 member(0),
                 {},
                 {},
                 "gang train needs 2 × 8 GPUs more (2 of 4 placed); 1 node has 8 free"},
        PlanCase{"RunningMembersLeaveLessToPlace",
                 eightGpuNodes(4),
                 {MakePod("team-b", "train-1").gpus(8).gang("train", 4).on("n1"),
                  MakePod("team-b", "train-2").gpus(8).gang("train", 4).on("n2")},
                 member(0),
                 {},
                 {"n3", "n4"},
                 ""},
        PlanCase{"SmallMembersShareANodeBestFitFirst",
                 {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)},
                 {MakePod("team-a", "s").gpus(4).on("n2")},
                 member(0, 2, 3),
                 {},
                 {"n2", "n2", "n1"},
                 ""},
        PlanCase{"QuotaIsChargedForTheWholeGang",
                 eightGpuNodes(6),
                 {},
                 member(0),
                 {MakeQueue("team-b").deserved(16).limit(24)},
                 {},
                 "gang train needs 4 pods (4 × 8 GPUs), 32 GPUs in all: queue team-b at 0/24 GPUs "
                 "(limit); pod needs 32 GPUs"},
        // Greedy would put the offered (any-model) member on n1 and leave the V100-only member
        // nowhere; the search backs out of that.
        PlanCase{"BacktracksOutOfAGreedyDeadEnd",
                 {MakeNode("n1").gpus(4).model("V100"), MakeNode("n2").gpus(4).model("A100")},
                 {MakePod("team-b", "train-1").gpus(4).gang("train", 2).models({"V100"})},
                 member(0, 4, 2),
                 {},
                 {"n2", "n1"},
                 ""},
        PlanCase{"MixedShapesAreNamed",
                 {MakeNode("n1").gpus(8)},
                 {MakePod("team-b", "train-1").gpus(2).gang("train", 3)},
                 member(0, 8, 3),
                 {},
                 {},
                 "gang train needs 2 × 8 GPUs + 1 × 2 GPUs; 1 node has 8 free"}),
    [](const ::testing::TestParamInfo<PlanCase>& info) { return info.param.name; });

TEST(GangPlan, ACompleteGangNeedsNothing) {
  auto snap = testing::snapshotOf(eightGpuNodes(2),
                                  {MakePod("team-b", "train-1").gpus(8).gang("train", 1).on("n1")});
  const GangPlan plan = planGang(*snap, member(0, 8, 1));
  EXPECT_TRUE(plan.status.isOk());
  EXPECT_TRUE(plan.slots.empty());
  EXPECT_EQ(plan.placed, 1);
}

TEST(GangPlan, TheSearchIsBounded) {
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(4).model("V100"), MakeNode("n2").gpus(4).model("A100")},
      {MakePod("team-b", "train-1").gpus(4).gang("train", 2).models({"V100"})});
  GangPlanOptions options;
  options.maxSteps = 1;
  const GangPlan plan = planGang(*snap, testing::resolved(*snap, member(0, 4, 2)), options);
  EXPECT_EQ(plan.status.reason(),
            "gang train needs 2 × 4 GPUs; 2 nodes have 4 free; no placement found within 1 tries");
}

TEST(GangPlan, ReservationsGroupSlotsByNode) {
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)}, {},
                                  {MakeQueue("team-b").deserved(32)});
  const GangPlan plan = planGang(*snap, testing::resolved(*snap, member(0, 3, 4)));
  ASSERT_TRUE(plan.status.isOk()) << plan.status.reason();
  const auto reservations = plan.reservations();
  ASSERT_EQ(reservations.size(), 2u);
  EXPECT_EQ(reservations[0].node, "n1");
  EXPECT_EQ(reservations[0].gpus, testing::gpus(6));
  EXPECT_EQ(reservations[1].gpus, testing::gpus(6));
  EXPECT_EQ(reservations[0].holder, "gang:team-b/train");
  EXPECT_EQ(reservations[0].queue, "team-b");
  EXPECT_EQ(reservations[0].reason, "gang of 4 × 3 GPUs");
  EXPECT_EQ(reservations[0].holderName, "gang team-b/train");
}

TEST(GangPlan, CpuAndMemoryCountWhenChecked) {
  SnapshotOptions options;
  options.fit.checkCpuMemory = true;
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8).cpu(16).memGi(64), MakeNode("n2").gpus(8).cpu(64).memGi(64)}, {}, {},
      options);
  const Pod pod = MakePod("team-b", "train-0").gpus(2).cpu(10).gang("train", 3);
  const GangPlan plan = planGang(*snap, testing::resolved(*snap, pod));
  ASSERT_TRUE(plan.status.isOk()) << plan.status.reason();
  std::vector<std::string> nodes;
  for (const auto& s : plan.slots) nodes.push_back(s.node);
  EXPECT_EQ(nodes, (std::vector<std::string>{"n1", "n2", "n2"}));
}

// filter() on gang members.

std::vector<std::string_view> allOf(const ClusterSnapshot& snap) {
  std::vector<std::string_view> names;
  for (const auto& n : snap.nodes()) names.push_back(n->name());
  return names;
}

TEST(GangFilter, AnUnusableGangSizeIsRefusedEverywhere) {
  auto snap = testing::snapshotOf(eightGpuNodes(2), {});
  Pod pod = MakePod("team-b", "train-0")
                .gpus(8)
                .label(kGangLabel, "train")
                .annotation(kGangSizeAnnotation, "four");
  applyGangLabels(pod);
  const FilterResult r = filter(*snap, pod, allOf(*snap));
  EXPECT_TRUE(r.feasible.empty());
  ASSERT_EQ(r.unresolvable.size(), 2u);
  EXPECT_EQ(r.unresolvable[0].reason,
            "annotation gpufair.io/gang-size of pod team-b/train-0: \"four\" is not a whole number "
            "from 1 to 100000");
}

TEST(GangFilter, MembersAreSteeredToTheirGangsReservations) {
  const Reservation held{"n2",     testing::gpus(8),     "gang:team-b/train",
                         "team-b", "gang of 2 × 8 GPUs", "gang team-b/train"};
  auto snap = testing::snapshotOf(eightGpuNodes(3), {}, {}, {}, {held});
  const FilterResult r = filter(*snap, testing::resolved(*snap, member(1, 8, 2)), allOf(*snap));
  EXPECT_EQ(r.feasible, (std::vector<std::string_view>{"n2"}));
  ASSERT_EQ(r.failed.size(), 2u);
  EXPECT_EQ(r.failed[0].reason, "gang train has GPUs reserved on n2; its pods go there");
  // Someone else is kept off n2.
  const FilterResult other =
      filter(*snap, testing::resolved(*snap, MakePod("team-a", "p").gpus(1)), allOf(*snap));
  EXPECT_EQ(other.feasible, (std::vector<std::string_view>{"n1", "n3"}));
}

TEST(GangFilter, WithoutReservationsAFittingGangGoesWhereItsPlanPutsIt) {
  auto snap = testing::snapshotOf(eightGpuNodes(3), {MakePod("team-a", "s").gpus(1).on("n1")},
                                  {MakeQueue("team-b").deserved(64)});
  const FilterResult r = filter(*snap, testing::resolved(*snap, member(0, 8, 2)), allOf(*snap));
  EXPECT_EQ(r.feasible, (std::vector<std::string_view>{"n2", "n3"}));
  const FilterResult refused =
      filter(*snap, testing::resolved(*snap, member(0, 8, 3)), allOf(*snap));
  EXPECT_TRUE(refused.feasible.empty());
  ASSERT_EQ(refused.failed.size(), 3u);
  EXPECT_EQ(refused.failed[0].reason, "gang train needs 3 × 8 GPUs; 2 nodes have 8 free");
}

TEST(GangFilter, MembersOfACompleteGangAreOrdinaryPods) {
  auto snap = testing::snapshotOf(eightGpuNodes(2),
                                  {MakePod("team-b", "train-1").gpus(8).gang("train", 1).on("n1")});
  const FilterResult r = filter(*snap, testing::resolved(*snap, member(0, 2, 1)), allOf(*snap));
  EXPECT_EQ(r.feasible, (std::vector<std::string_view>{"n2"}));
}

TEST(GangLabels, AreReadFromTheLabelAndTheAnnotation) {
  struct Case {
    const char* label;
    const char* size;  // nullptr: no annotation
    std::string gang;
    int gangSize;
    std::string error;
  };
  const Case cases[] = {
      {"train", "4", "train", 4, ""},
      {"train", " 2 ", "train", 2, ""},
      {"", "4", "", 0, ""},
      {"train", nullptr, "train", 0,
       "pod ns/p is in gang train (label gpufair.io/gang) but has no annotation "
       "gpufair.io/gang-size saying how many pods the gang has"},
      {"train", "0", "train", 0,
       "annotation gpufair.io/gang-size of pod ns/p: \"0\" is not a whole number from 1 to 100000"},
      {"train", "2.5", "train", 0,
       "annotation gpufair.io/gang-size of pod ns/p: \"2.5\" is not a whole number from 1 to "
       "100000"},
      {"train", "99999999999", "train", 0,
       "annotation gpufair.io/gang-size of pod ns/p: \"99999999999\" is not a whole number from 1 "
       "to 100000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.label) + " / " + (c.size ? c.size : "(none)"));
    Pod pod = MakePod("ns", "p").label(kGangLabel, c.label);
    if (c.size != nullptr) pod.annotations[kGangSizeAnnotation] = c.size;
    applyGangLabels(pod);
    EXPECT_EQ(pod.gang, c.gang);
    EXPECT_EQ(pod.gangSize, c.gangSize);
    EXPECT_EQ(pod.gangError, c.error);
  }
}

}  // namespace
}  // namespace gpufair::policy
