#include "gpufair/policy/admission.h"

#include <gtest/gtest.h>

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
        AdmissionCase{
            "IdleGpusHeldForOtherQueuesPendingInQuotaWork",
            [] {
              auto pods = teamAUsing(12);  // 8 free
              pods.push_back(MakePod("team-b", "waiting").gpus(8));
              return pods;
            }(),
            {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(10)},
            MakePod("team-a", "p").gpus(1),
            Code::kUnschedulable,
            false,
            "queue team-a at 12/10 GPUs (deserved) would borrow 1 GPU but only 0 GPUs are idle "
            "(8 free, 8 held for pending in-quota work of team-b 8)"},
        AdmissionCase{"OtherQueuesDemandBeyondItsDeservedHoldsNothing",
                      [] {
                        auto pods = teamAUsing(12);
                        pods.push_back(MakePod("team-b", "big").gpus(8));
                        return pods;
                      }(),
                      {MakeQueue("team-a").deserved(10), MakeQueue("team-b").deserved(3)},
                      MakePod("team-a", "p").gpus(5),
                      Code::kSuccess,
                      true,
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
