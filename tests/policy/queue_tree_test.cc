// Queue trees and queue priority in the engine: fair share top-down, usage summed upwards,
// admission level by level.
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/snapshot.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::gpus;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

// A queue of the table: amounts in GPUs; parent by index (-1: top level).
struct T {
  std::string name;
  int parent;
  double deserved;
  double demand;
  double weight = 1;
  std::optional<double> limit = std::nullopt;
  int priority = 0;
};

struct TreeCase {
  std::string name;
  std::vector<T> queues;
  double capacity;
  std::vector<double> want;  // in queue order
};

void PrintTo(const TreeCase& c, std::ostream* os) {
  *os << c.name;
}

class TreeFairShareTest : public ::testing::TestWithParam<TreeCase> {};

TEST_P(TreeFairShareTest, Shares) {
  const TreeCase& c = GetParam();
  std::vector<FairShareInput> inputs;
  for (const T& q : c.queues) {
    FairShareInput in;
    in.name = q.name;
    in.parent = q.parent;
    in.deserved = gpus(q.deserved);
    in.demand = gpus(q.demand);
    in.overQuotaWeight = q.weight;
    in.priority = q.priority;
    if (q.limit) in.limit = gpus(*q.limit);
    inputs.push_back(in);
  }
  const MilliGpu capacity = gpus(c.capacity);
  const auto got = computeFairShares(inputs, capacity, fairShareGranularity(inputs, capacity));
  std::vector<MilliGpu> want;
  for (double w : c.want) want.push_back(gpus(w));
  EXPECT_EQ(got, want);
}

// Demands of parents are their subtree's, as QueueState sums them.
INSTANTIATE_TEST_SUITE_P(
    Cases, TreeFairShareTest,
    ::testing::Values(
        // dept-a's idle deserved goes to a1 (sibling) before b1 (cousin); flat it would be 15/25.
        TreeCase{"SiblingBorrowsBeforeCousin",
                 {{"dept-a", -1, 20, 30},
                  {"a1", 0, 10, 30},
                  {"a2", 0, 10, 0},
                  {"dept-b", -1, 20, 30},
                  {"b1", 3, 20, 30}},
                 40,
                 {20, 20, 0, 20, 20}},
        TreeCase{"DepartmentLimitCapsItsChildrenWhileAnotherIsIdle",
                 {{"dept-a", -1, 0, 40, 1, 10},
                  {"a1", 0, 0, 20},
                  {"a2", 0, 0, 20},
                  {"dept-b", -1, 20, 0}},
                 40,
                 {10, 5, 5, 0}},
        TreeCase{"HigherPriorityBorrowsFirst",
                 {{"low", -1, 0, 30, 1, std::nullopt, 0}, {"high", -1, 0, 30, 1, std::nullopt, 1}},
                 40,
                 {10, 30}},
        TreeCase{"WeightSplitsWithinOnePriority",
                 {{"a", -1, 0, 30, 1, std::nullopt, 1},
                  {"b", -1, 0, 30, 3, std::nullopt, 1},
                  {"c", -1, 0, 30, 1, std::nullopt, 0}},
                 20,
                 {5, 15, 0}},
        TreeCase{"PriorityDoesNotTouchDeserved",
                 {{"low", -1, 10, 30, 1, std::nullopt, 0}, {"high", -1, 0, 30, 1, std::nullopt, 5}},
                 30,
                 {10, 20}},
        TreeCase{"ThreeLevels",
                 {{"r", -1, 40, 105},
                  {"m", 0, 30, 55},
                  {"x", 1, 10, 50},
                  {"y", 1, 10, 5},
                  {"z", 0, 10, 50}},
                 60,
                 {60, 40, 35, 5, 20}},
        TreeCase{"ChildLimitsCapTheParentSoNothingStrands",
                 {{"dept", -1, 0, 20}, {"c1", 0, 0, 20, 1, 5}, {"other", -1, 0, 100}},
                 40,
                 {5, 5, 35}},
        TreeCase{"PriorityAmongDepartmentsThenAmongTeams",
                 {{"prod", -1, 0, 40, 1, std::nullopt, 1},
                  {"p1", 0, 0, 20, 1, std::nullopt, 0},
                  {"p2", 0, 0, 20, 1, std::nullopt, 2},
                  {"research", -1, 0, 40}},
                 30,
                 {30, 10, 20, 0}},
        TreeCase{"CycleOrBadParentCountsAsTopLevel",
                 {{"a", 1, 0, 10}, {"b", 0, 0, 10}, {"c", 7, 0, 10}},
                 30,
                 {10, 10, 10}}));

TEST(QueueTree, SnapshotSumsUsageUpwardsAndSplitsTopDown) {
  const std::vector<QueueQuota> queues = {
      MakeQueue("research").namespaces({}).deserved(12),
      MakeQueue("team-a").parent("research").deserved(6),
      MakeQueue("team-b").parent("research").deserved(6),
      MakeQueue("ops").deserved(4),
  };
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)},
      {MakePod("team-a", "a1").gpus(4).on("n1"), MakePod("team-b", "b1").gpus(2).on("n1"),
       MakePod("team-a", "a2").gpus(6), MakePod("ops", "o1").gpus(2).on("n2")},
      queues);
  const QueueState* research = snap->findQueue("research");
  const QueueState* teamA = snap->findQueue("team-a");
  ASSERT_NE(research, nullptr);
  ASSERT_NE(teamA, nullptr);
  EXPECT_EQ(research->allocated, gpus(6));
  EXPECT_EQ(research->pending, gpus(6));
  EXPECT_EQ(research->runningPods, 2);
  EXPECT_EQ(research->children, 2);
  EXPECT_EQ(teamA->depth, 1);
  EXPECT_EQ(teamA->parentIndex, static_cast<int>(research - snap->queues().data()));
  // 16 GPUs: research wants 12 (its deserved), ops 2, 2 stay idle; within research team-a takes
  // team-b's unused deserved.
  EXPECT_EQ(research->fairShare, gpus(12));
  EXPECT_EQ(teamA->fairShare, gpus(10));
  EXPECT_EQ(snap->findQueue("team-b")->fairShare, gpus(2));
  EXPECT_EQ(snap->findQueue("ops")->fairShare, gpus(2));
}

struct TreeAdmissionCase {
  std::string name;
  std::vector<Pod> pods;
  Pod pod;
  Code code;
  bool overQuota;
  std::string reason;  // exact when not empty
};

void PrintTo(const TreeAdmissionCase& c, std::ostream* os) {
  *os << c.name;
}

class TreeAdmissionTest : public ::testing::TestWithParam<TreeAdmissionCase> {};

// research (limit 10) > team-a (deserved 4), team-b (deserved 4); ops (deserved 4); 20 GPUs.
TEST_P(TreeAdmissionTest, Decides) {
  const TreeAdmissionCase& c = GetParam();
  const std::vector<QueueQuota> queues = {
      MakeQueue("research").namespaces({}).deserved(8).limit(10),
      MakeQueue("team-a").parent("research").deserved(4),
      MakeQueue("team-b").parent("research").deserved(4),
      MakeQueue("ops").deserved(4),
  };
  auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(10), MakeNode("n2").gpus(10)}, c.pods, queues);
  const Admission a = admit(*snap, testing::resolved(*snap, c.pod));
  EXPECT_EQ(a.status.code(), c.code) << a.status.reason();
  EXPECT_EQ(a.overQuota, c.overQuota);
  if (!c.reason.empty()) {
    EXPECT_EQ(a.status.reason(), c.reason);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TreeAdmissionTest,
    ::testing::Values(
        TreeAdmissionCase{"WithinDeservedAdmitted",
                          {},
                          MakePod("team-a", "p").gpus(4),
                          Code::kSuccess,
                          false,
                          ""},
        TreeAdmissionCase{"SiblingBorrowsItsSiblingsIdleDeserved",
                          {MakePod("team-a", "r").gpus(4).on("n1")},
                          MakePod("team-a", "p").gpus(4),
                          Code::kSuccess,
                          true,
                          ""},
        TreeAdmissionCase{
            "ParentLimitRefusesAndNamesTheLevel",
            {MakePod("team-a", "r").gpus(6).on("n1"), MakePod("team-b", "s").gpus(4).on("n2")},
            MakePod("team-b", "p").gpus(1),
            Code::kUnschedulableAndUnresolvable,
            false,
            "queue research at 10/10 GPUs (limit), parent of team-b; pod needs 1 "
            "GPU"},
        TreeAdmissionCase{"ParentQueueTakesNoPods",
                          {},
                          MakePod("x", "p").gpus(1).label(kQueueLabel, "research"),
                          Code::kUnschedulableAndUnresolvable,
                          false,
                          "queue research is a parent queue (of 2 queues): pods run in its child "
                          "queues"},
        TreeAdmissionCase{"FlatQueueBesideTheTreeUnchanged",
                          {},
                          MakePod("ops", "p").gpus(12),
                          Code::kSuccess,
                          true,
                          ""}));

}  // namespace
}  // namespace gpufair::policy
