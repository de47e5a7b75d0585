#include "gpufair/policy/preemption.h"

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

std::string uid(const std::string& ns, const std::string& name) {
  return "uid-" + ns + "-" + name;
}

// Three full 8-GPU nodes:
//   n1: team-b/b-in (4, team-b's whole deserved 4), research/r1 (4, borrowed)
//   n2: team-a/a-run (8, team-a's whole deserved 8)
//   n3: research/r2, research/r3 (4 each, borrowed; research is the default queue, deserved 0)
// team-c (deserved 8) runs nothing.
std::vector<Pod> runningPods() {
  return {MakePod("team-b", "b-in").gpus(4).on("n1"),
          MakePod("research", "r1").gpus(4).on("n1").overQuota(),
          MakePod("team-a", "a-run").gpus(8).on("n2"),
          MakePod("research", "r2").gpus(4).on("n3").overQuota(),
          MakePod("research", "r3").gpus(4).on("n3").overQuota()};
}

std::vector<QueueQuota> queues() {
  return {MakeQueue("team-a").deserved(8), MakeQueue("team-b").deserved(4),
          MakeQueue("team-c").deserved(8)};
}

struct PreemptCase {
  std::string name;
  Pod preemptor;
  std::vector<NodeVictims> proposed;
  std::vector<NodeVictims> want;          // kept nodes and victims
  std::vector<std::string> droppedNodes;  // in the plan's order
  std::string reasonContains;             // of the first dropped node, when not empty
};

void PrintTo(const PreemptCase& c, std::ostream* os) {
  *os << c.name;
}

class PreemptionTest : public ::testing::TestWithParam<PreemptCase> {};

TEST_P(PreemptionTest, Plans) {
  const PreemptCase& c = GetParam();
  std::vector<Pod> pods = runningPods();
  pods.push_back(c.preemptor);  // pending, as the mirror lists it after /filter
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8), MakeNode("n3").gpus(8)}, pods, queues());
  const PreemptionPlan plan =
      planPreemption(*snap, testing::resolved(*snap, c.preemptor), c.proposed);
  ASSERT_EQ(plan.nodes.size(), c.want.size());
  for (std::size_t i = 0; i < c.want.size(); ++i) {
    EXPECT_EQ(plan.nodes[i].node, c.want[i].node);
    EXPECT_EQ(plan.nodes[i].podUids, c.want[i].podUids) << plan.nodes[i].node;
    EXPECT_EQ(plan.nodes[i].numPdbViolations, c.want[i].numPdbViolations);
    EXPECT_FALSE(plan.nodes[i].podUids.empty());
  }
  std::vector<std::string> dropped;
  for (const auto& d : plan.dropped) dropped.push_back(d.node);
  EXPECT_EQ(dropped, c.droppedNodes);
  if (!c.reasonContains.empty()) {
    ASSERT_FALSE(plan.dropped.empty());
    EXPECT_NE(plan.dropped.front().reason.find(c.reasonContains), std::string::npos)
        << plan.dropped.front().reason;
  }
}

const std::string kBIn = uid("team-b", "b-in");
const std::string kR1 = uid("research", "r1");
const std::string kR2 = uid("research", "r2");
const std::string kR3 = uid("research", "r3");
const std::string kARun = uid("team-a", "a-run");

INSTANTIATE_TEST_SUITE_P(
    Cases, PreemptionTest,
    ::testing::Values(
        // team-a at its deserved 8 asks for 4 more: borrowing (fair share 12).
        PreemptCase{"BorrowerLosesInQuotaVictimButKeepsBorrowedOne",
                    MakePod("team-a", "p").gpus(4),
                    {{"n1", {kBIn, kR1}, 0}},
                    {{"n1", {kR1}, 0}},
                    {},
                    ""},
        PreemptCase{"BorrowerDropsNodeThatNeedsInQuotaVictims",
                    MakePod("team-a", "p").gpus(4),
                    {{"n1", {kBIn}, 0}, {"n3", {kR2}, 0}},
                    {{"n3", {kR2}, 0}},
                    {"n1"},
                    "queue team-a would borrow, and victim team-b/b-in is within queue "
                    "team-b's deserved 4 GPUs"},
        PreemptCase{"BorrowedVictimsOfOneQueueAllGo",
                    MakePod("team-a", "p").gpus(4),
                    {{"n3", {kR2, kR3}, 0}},
                    {{"n3", {kR2, kR3}, 0}},
                    {},
                    ""},
        PreemptCase{"NumPdbViolationsCappedByKeptVictims",
                    MakePod("team-a", "p").gpus(4),
                    {{"n1", {kBIn, kR1}, 2}},
                    {{"n1", {kR1}, 1}},
                    {},
                    ""},
        PreemptCase{"UnknownVictimStays",
                    MakePod("team-a", "p").gpus(4),
                    {{"n3", {kR2, "uid-not-mirrored"}, 0}},
                    {{"n3", {kR2, "uid-not-mirrored"}, 0}},
                    {},
                    ""},
        PreemptCase{"UnknownNodeIsDropped",
                    MakePod("team-a", "p").gpus(4),
                    {{"n9", {kR2}, 0}},
                    {},
                    {"n9"},
                    "node n9 is not in gpufair's cluster view"},
        PreemptCase{"NodeWithoutVictimsIsDropped",
                    MakePod("team-a", "p").gpus(4),
                    {{"n3", {}, 0}},
                    {},
                    {"n3"},
                    "no victims proposed"},
        // A victim proposed for n3 that gpufair sees on n1 frees nothing on n3.
        PreemptCase{"VictimOnAnotherNodeFreesNothingHere",
                    MakePod("team-a", "p").gpus(4),
                    {{"n3", {kR1}, 0}},
                    {},
                    {"n3"},
                    "would not fit after the evictions"},
        // team-a would use 16 with a fair share of 14: no node can fix that.
        PreemptCase{"QueueMustStillAdmitThePreemptor",
                    MakePod("team-a", "p").gpus(8),
                    {{"n3", {kR2, kR3}, 0}},
                    {},
                    {"n3"},
                    "queue team-a would use 16 GPUs; deserved 8, fair share 14, no limit"},
        // Its own queue's pod makes room, and team-a then stays within deserved.
        PreemptCase{"OwnQueueVictimsStay",
                    MakePod("team-a", "p").gpus(8),
                    {{"n2", {kARun}, 0}},
                    {{"n2", {kARun}, 0}},
                    {},
                    ""},
        // team-c is within its deserved 8: in-quota victims are allowed when no node avoids them.
        PreemptCase{"InQuotaPreemptorMayTakeInQuotaVictims",
                    MakePod("team-c", "p").gpus(4),
                    {{"n1", {kBIn}, 0}},
                    {{"n1", {kBIn}, 0}},
                    {},
                    ""},
        PreemptCase{"BorrowedVictimsPreferredOverInQuotaOnes",
                    MakePod("team-c", "p").gpus(4),
                    {{"n1", {kBIn}, 0}, {"n3", {kR2}, 0}},
                    {{"n3", {kR2}, 0}},
                    {"n1"},
                    "within their queue's deserved quota, while other nodes need only borrowed"},
        PreemptCase{"PreemptorThatDoesNotFitEvenAfterEvictions",
                    MakePod("team-c", "p").gpus(8),
                    {{"n1", {kR1}, 0}},
                    {},
                    {"n1"},
                    "fewer than 8 GPUs free"},
        PreemptCase{"GpuLessPreemptorPassesThrough",
                    MakePod("team-a", "cpu"),
                    {{"n1", {kBIn}, 3}, {"n9", {"x"}, 0}},
                    {{"n1", {kBIn}, 3}, {"n9", {"x"}, 0}},
                    {},
                    ""}),
    [](const auto& info) { return info.param.name; });

// Victims of one queue are counted off its allocation borrowed-labelled and youngest first: the
// queue 4 GPUs over deserved gives up only its borrowed 4.
TEST(Preemption, VictimsOfOneQueueAreCountedOffBorrowedFirst) {
  Pod old = MakePod("team-x", "x-old").gpus(4).on("n1");
  old.created = Timestamp{std::chrono::seconds{1000}};
  Pod young = MakePod("team-x", "x-young").gpus(4).on("n1");
  young.created = Timestamp{std::chrono::seconds{2000}};
  Pod lent = MakePod("team-x", "x-lent").gpus(4).on("n2").overQuota();
  lent.created = Timestamp{std::chrono::seconds{500}};
  const Pod preemptor = MakePod("team-y", "p").gpus(4);
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)}, {old, young, lent, preemptor},
      {MakeQueue("team-x").deserved(8), MakeQueue("team-y").deserved(0)});
  const Pod p = testing::resolved(*snap, preemptor);

  // team-x holds 12 with deserved 8. On n1 the younger of the two unlabelled pods counts first and
  // is borrowed; the older would then take team-x below 8, so team-y (borrowing) cannot have it.
  std::vector<NodeVictims> n1{{"n1", {old.uid, young.uid}, 0}};
  PreemptionPlan plan = planPreemption(*snap, p, n1);
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_EQ(plan.nodes[0].podUids, std::vector<std::string>{young.uid});
  EXPECT_TRUE(plan.preemptorBorrowing);

  // Each node is judged on its own: n2's borrowed-labelled pod goes, and n1 still keeps only the
  // young pod.
  std::vector<NodeVictims> both{{"n2", {lent.uid}, 0}, {"n1", {old.uid, young.uid}, 0}};
  plan = planPreemption(*snap, p, both);
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[0].podUids, std::vector<std::string>{lent.uid});
  EXPECT_EQ(plan.nodes[1].podUids, std::vector<std::string>{young.uid});
}

// Each node is planned on a copy that is rolled back: what one node's plan evicts does not count
// on the next node.
TEST(Preemption, EachNodeStartsFromTheSnapshot) {
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(4), MakeNode("n2").gpus(4)},
      {MakePod("team-x", "x1").gpus(4).on("n1"), MakePod("team-x", "x2").gpus(4).on("n2"),
       MakePod("team-y", "p").gpus(4)},
      {MakeQueue("team-x").deserved(4).weight(0), MakeQueue("team-y").deserved(0)});
  const Pod p = testing::resolved(*snap, MakePod("team-y", "p").gpus(4));
  std::vector<NodeVictims> proposed{{"n1", {uid("team-x", "x1")}, 0},
                                    {"n2", {uid("team-x", "x2")}, 0}};
  const PreemptionPlan plan = planPreemption(*snap, p, proposed);
  // team-x holds 8 with deserved 4: either pod alone is borrowed, on either node.
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[0].podUids, std::vector<std::string>{uid("team-x", "x1")});
  EXPECT_EQ(plan.nodes[1].podUids, std::vector<std::string>{uid("team-x", "x2")});
}

// GPUs reserved on the node for another holder stay out of reach after the evictions (n1: 6 of 8
// reserved for team-z, so evicting x1 leaves 2 for a 4-GPU pod): evicting
// there would free GPUs the preemptor cannot take, so the node is dropped with the reason.
TEST(Preemption, ReservationForAnotherHolderKeepsNodeOut) {
  const Pod preemptor = MakePod("team-y", "p").gpus(4);
  const std::vector<Reservation> held{
      {"n1", 6000, "uid-team-z-waiting", "team-z", "reclaim", "team-z/waiting"}};
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)},
                                  {MakePod("team-x", "x1").gpus(4).on("n1").overQuota(),
                                   MakePod("team-x", "x2").gpus(4).on("n2").overQuota(), preemptor},
                                  {MakeQueue("team-x").deserved(0), MakeQueue("team-y").deserved(8),
                                   MakeQueue("team-z").deserved(8)},
                                  {}, held);
  const Pod p = testing::resolved(*snap, preemptor);
  std::vector<NodeVictims> proposed{{"n1", {uid("team-x", "x1")}, 0},
                                    {"n2", {uid("team-x", "x2")}, 0}};
  const PreemptionPlan plan = planPreemption(*snap, p, proposed);
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_EQ(plan.nodes[0].node, "n2");
  ASSERT_EQ(plan.dropped.size(), 1u);
  EXPECT_EQ(plan.dropped[0].node, "n1");
  EXPECT_NE(plan.dropped[0].reason.find("would not fit after the evictions"), std::string::npos)
      << plan.dropped[0].reason;
}

TEST(Preemption, UnknownPreemptorQueueDropsEveryNode) {
  auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(4)}, {MakePod("team-x", "x1").gpus(4).on("n1")},
                          {MakeQueue("team-x").deserved(0)});
  const Pod p = testing::resolved(*snap, MakePod("team-x", "p").gpus(4).queue("nope"));
  std::vector<NodeVictims> proposed{{"n1", {uid("team-x", "x1")}, 0}};
  const PreemptionPlan plan = planPreemption(*snap, p, proposed);
  EXPECT_TRUE(plan.nodes.empty());
  ASSERT_EQ(plan.dropped.size(), 1u);
  EXPECT_NE(plan.dropped[0].reason.find("names a queue that does not exist"), std::string::npos)
      << plan.dropped[0].reason;
}

}  // namespace
}  // namespace gpufair::policy
