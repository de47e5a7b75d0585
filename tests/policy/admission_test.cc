#include "gpufair/policy/admission.h"

#include <gtest/gtest.h>

#include "gpufair/policy/fair_share.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

struct AdmissionCase {
  std::string name;
  std::vector<Pod> pods;  // bound pods (with node) and other pending pods
  std::vector<QueueQuota> queues;
  Pod pod;  // the pod asking
  Code code;
  bool overQuota;
  std::string reason;  // exact reason, when not empty
};

void PrintTo(const AdmissionCase& c, std::ostream* os) {
  *os << c.name;
}

class AdmissionTest : public ::testing::TestWithParam<AdmissionCase> {};

TEST_P(AdmissionTest, Decides) {
  const AdmissionCase& c = GetParam();
  // Two 10-GPU nodes: 20 GPUs in all.
  auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(10), MakeNode("n2").gpus(10)}, c.pods, c.queues);
  Admission a = admit(*snap, testing::resolved(*snap, c.pod));
  EXPECT_EQ(a.status.code(), c.code) << a.status.reason();
  EXPECT_EQ(a.overQuota, c.overQuota);
  if (!c.reason.empty()) {
    EXPECT_EQ(a.status.reason(), c.reason);
  }
}

std::vector<Pod> teamAUsing(int gpus) {
  std::vector<Pod> pods;
  for (int i = 0; i < gpus; ++i) {
    pods.push_back(MakePod("team-a", "a" + std::to_string(i)).gpus(1).on(i < 10 ? "n1" : "n2"));
  }
  return pods;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AdmissionTest,
    ::testing::Values(
        AdmissionCase{"NoGpuPassesEvenOverLimit",
                      teamAUsing(4),
                      {MakeQueue("team-a").deserved(2).limit(4)},
                      MakePod("team-a", "cpu-only"),
                      Code::kSuccess,
                      false,
                      ""},
        AdmissionCase{"WithinDeserved",
                      teamAUsing(2),
                      {MakeQueue("team-a").deserved(5).limit(8)},
                      MakePod("team-a", "p").gpus(3),
                      Code::kSuccess,
                      false,
                      ""},
        AdmissionCase{"BeyondLimitIsUnresolvable",
                      teamAUsing(6),
                      {MakeQueue("team-a").deserved(4).limit(6)},
                      MakePod("team-a", "p").gpus(1),
                      Code::kUnschedulableAndUnresolvable,
                      false,
                      "queue team-a at 6/6 GPUs (limit); pod needs 1 GPU"},
        AdmissionCase{"BorrowsIdleGpus",
                      teamAUsing(4),
                      {MakeQueue("team-a").deserved(4).limit(10)},
                      MakePod("team-a", "p").gpus(2),
                      Code::kSuccess,
                      true,
                      ""},
        AdmissionCase{"NoLimitCappedOnlyByCluster",
                      teamAUsing(12),
                      {MakeQueue("team-a").deserved(2)},
                      MakePod("team-a", "p").gpus(8),
                      Code::kSuccess,
                      true,
                      ""},
        AdmissionCase{"PartlyOverDeservedIsBorrowed",
                      teamAUsing(3),
                      {MakeQueue("team-a").deserved(4)},
                      MakePod("team-a", "p").gpus(2),
                      Code::kSuccess,
                      true,
                      ""},
        AdmissionCase{"FairShareKeepsIdleGpusForOtherQueuesInQuotaWork",
                      [] {
                        auto pods = teamAUsing(12);  // 8 free
                        pods.push_back(MakePod("team-b", "waiting").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(10)},
                      MakePod("team-a", "p").gpus(1),
                      Code::kUnschedulable,
                      false,
                      "queue team-a would use 13 GPUs; deserved 10, fair share 12, no limit"},
        // Within its fair share, but research (default queue) holds 7 borrowed GPUs, so the 3
        // free ones are all needed by team-b's in-quota work.
        AdmissionCase{
            "IdleGpusHeldForOtherQueuesPendingInQuotaWork",
            [] {
              auto pods = teamAUsing(10);
              pods.push_back(MakePod("research", "r").gpus(7).on("n2"));
              pods.push_back(MakePod("team-b", "waiting").gpus(5));
              return pods;
            }(),
            {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(5)},
            MakePod("team-a", "p").gpus(1),
            Code::kUnschedulable,
            false,
            "queue team-a at 10/10 GPUs (deserved) would borrow 1 GPU but only 0 GPUs are idle "
            "(3 free, 5 held for pending in-quota work of team-b 5)"},
        // team-b's demand beyond its deserved 3 holds no idle GPUs back, but it does earn
        // team-b half of the 7 idle ones: team-a's fair share is 10 + 4 (the odd GPU by name).
        AdmissionCase{"OtherQueuesDemandBeyondItsDeservedHoldsNothing",
                      [] {
                        auto pods = teamAUsing(12);
                        pods.push_back(MakePod("team-b", "big").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(3)},
                      MakePod("team-a", "p").gpus(2),
                      Code::kSuccess,
                      true,
                      ""},
        AdmissionCase{"BorrowingStopsAtFairShare",
                      [] {
                        auto pods = teamAUsing(12);
                        pods.push_back(MakePod("team-b", "big").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(3)},
                      MakePod("team-a", "p").gpus(5),
                      Code::kUnschedulable,
                      false,
                      "queue team-a would use 17 GPUs; deserved 10, fair share 14, no limit"},
        AdmissionCase{"FairShareRefusalNamesTheLimit",
                      [] {
                        auto pods = teamAUsing(12);
                        pods.push_back(MakePod("team-b", "big").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10).limit(16), MakeQueue("team-b").deserved(3)},
                      MakePod("team-a", "p").gpus(4),
                      Code::kUnschedulable,
                      false,
                      "queue team-a would use 16 GPUs; deserved 10, fair share 14, limit 16"},
        // Weight 3 against 1: team-a's share of the 7 idle GPUs is 5 (capped by its demand).
        AdmissionCase{"HigherWeightBorrowsMore",
                      [] {
                        auto pods = teamAUsing(12);
                        pods.push_back(MakePod("team-b", "big").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10).weight(3), MakeQueue("team-b").deserved(3)},
                      MakePod("team-a", "p").gpus(3),
                      Code::kSuccess,
                      true,
                      ""},
        AdmissionCase{"HigherWeightStillStopsAtItsShare",
                      [] {
                        auto pods = teamAUsing(12);
                        pods.push_back(MakePod("team-b", "big").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10).weight(3), MakeQueue("team-b").deserved(3)},
                      MakePod("team-a", "p").gpus(5),
                      Code::kUnschedulable,
                      false,
                      "queue team-a would use 17 GPUs; deserved 10, fair share 15, no limit"},
        AdmissionCase{"WithinDeservedIgnoresFairShare",
                      [] {
                        auto pods = teamAUsing(4);
                        pods.push_back(MakePod("team-b", "big").gpus(30));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(10)},
                      MakePod("team-a", "p").gpus(6),
                      Code::kSuccess,
                      false,
                      ""},
        AdmissionCase{
            "ZeroWeightDoesNotBorrow",
            teamAUsing(4),
            {MakeQueue("team-a").deserved(4).weight(0)},
            MakePod("team-a", "p").gpus(1),
            Code::kUnschedulable,
            false,
            "queue team-a at 4/4 GPUs (deserved) and its overQuotaWeight is 0: it does not "
            "borrow; pod needs 1 GPU"},
        AdmissionCase{"UnknownQueueLabel",
                      {},
                      {MakeQueue("team-a").deserved(4)},
                      MakePod("team-a", "p").gpus(1).queue("nope"),
                      Code::kUnschedulableAndUnresolvable,
                      false,
                      "label gpufair.io/queue=nope names a queue that does not exist"},
        AdmissionCase{"NamespaceInNoQueueUsesDefaultQueue",
                      {},
                      {MakeQueue("team-a").deserved(4)},
                      MakePod("research", "p").gpus(2),
                      Code::kSuccess,
                      true,
                      ""}),
    [](const auto& info) { return info.param.name; });

// The idle-GPU problem of issue 4: 4 nodes x 10 GPUs, team-a and team-b deserve 20 each. While
// team-b is idle team-a may borrow all of it; once team-b waits for 8, team-a's fair share drops to
// 32 and it cannot take GPUs that team-b's work needs.
TEST(AdmissionFairShare, FollowsTheOtherQueuesDemand) {
  const std::vector<Node> nodes{MakeNode("n1").gpus(10), MakeNode("n2").gpus(10),
                                MakeNode("n3").gpus(10), MakeNode("n4").gpus(10)};
  const std::vector<QueueQuota> queues{MakeQueue("team-a").deserved(20),
                                       MakeQueue("team-b").deserved(20)};
  std::vector<Pod> running;
  for (int i = 1; i <= 3; ++i) {
    Pod p = MakePod("team-a", "a" + std::to_string(i)).gpus(10).on("n" + std::to_string(i));
    if (i == 3) p = MakePod("team-a", "a3").gpus(10).on("n3").overQuota();
    running.push_back(p);
  }
  running.push_back(MakePod("team-a", "a4").gpus(2).on("n4").overQuota());
  const Pod more = MakePod("team-a", "more").gpus(8);

  auto idle = testing::snapshotOf(nodes, running, queues);
  Admission a = admit(*idle, testing::resolved(*idle, more));
  EXPECT_TRUE(a.status.isOk()) << a.status.reason();
  EXPECT_TRUE(a.overQuota);
  EXPECT_EQ(fairShareCounting(*idle, testing::resolved(*idle, more)), testing::gpus(40));

  running.push_back(MakePod("team-b", "b").gpus(8));
  auto busy = testing::snapshotOf(nodes, running, queues);
  EXPECT_EQ(busy->findQueue("team-b")->fairShare, testing::gpus(8));
  a = admit(*busy, testing::resolved(*busy, more));
  EXPECT_EQ(a.status.code(), Code::kUnschedulable);
  EXPECT_EQ(a.status.reason(),
            "queue team-a would use 40 GPUs; deserved 20, fair share 32, no limit");
  // team-b is within its deserved quota: always admitted (reclaim or preemption makes room).
  EXPECT_TRUE(admit(*busy, testing::resolved(*busy, MakePod("team-b", "b").gpus(8))).status.isOk());
}

// What-if admission on a copy: once a plan frees team-a's borrowed GPUs, team-b borrows.
TEST(AdmitAfter, DecidesOnQueuesAsAPlanLeavesThem) {
  auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(10), MakeNode("n2").gpus(10)},
                          [] {
                            auto pods = teamAUsing(20);
                            pods.push_back(MakePod("team-b", "p").gpus(6));
                            return pods;
                          }(),
                          {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(4)});
  const Pod pod = testing::resolved(*snap, MakePod("team-b", "p").gpus(6));
  const MilliGpu share = fairShareCounting(*snap, pod);
  EXPECT_EQ(share, testing::gpus(6));
  Admission now = admit(*snap, pod);
  EXPECT_EQ(now.status.code(), Code::kUnschedulable) << now.status.reason();

  std::vector<QueueState> queues(snap->queues().begin(), snap->queues().end());
  queues[0].allocated -= testing::gpus(6);  // six of team-a's borrowed GPUs evicted
  Admission after = admitAfter(queues, snap->free() + testing::gpus(6), pod, share);
  EXPECT_TRUE(after.status.isOk()) << after.status.reason();
  EXPECT_TRUE(after.overQuota);
  // The same plan cannot lift team-b above its fair share.
  Admission tooBig = admitAfter(queues, snap->free() + testing::gpus(6),
                                testing::resolved(*snap, MakePod("team-b", "q").gpus(7)), share);
  EXPECT_EQ(tooBig.status.reason(),
            "queue team-b would use 7 GPUs; deserved 4, fair share 6, no limit");
}

TEST(FitsNode, Reasons) {
  NodeState node(MakeNode("n1").gpus(8),
                 {std::make_shared<const Pod>(MakePod("a", "x").gpus(6).on("n1"))}, 1);
  EXPECT_TRUE(fitsNode(node, MakePod("a", "p").gpus(2)).isOk());
  Status s = fitsNode(node, MakePod("a", "p").gpus(3));
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(), "fewer than 3 GPUs free");
  s = fitsNode(node, MakePod("a", "p").gpus(9));
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reason(), "node n1 has 8 GPUs; pod needs 9 GPUs");

  NodeState cordoned(MakeNode("c").gpus(8).unschedulable(), {}, 1);
  EXPECT_EQ(fitsNode(cordoned, MakePod("a", "p").gpus(1)).code(),
            Code::kUnschedulableAndUnresolvable);
  NodeState deleting(MakeNode("d").gpus(8).deleting(), {}, 1);
  EXPECT_EQ(fitsNode(deleting, MakePod("a", "p").gpus(1)).reason(), "node d is being deleted");
}

}  // namespace
}  // namespace gpufair::policy
