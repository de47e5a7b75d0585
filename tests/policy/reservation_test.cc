// Fit, quota and scoring with reservations on nodes.
#include "gpufair/policy/reservation.h"

#include <gtest/gtest.h>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/filter.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

Reservation reclaimFor(std::string node, double gpus, std::string uid = "uid-team-b-train-0") {
  return {std::move(node), testing::gpus(gpus), std::move(uid),
          "team-b",        "reclaim",           "team-b/train-0"};
}

Reservation gangOn(std::string node, double gpus) {
  return {std::move(node), testing::gpus(gpus),  "gang:team-b/train",
          "team-b",        "gang of 4 × 8 GPUs", "gang team-b/train"};
}

TEST(Reservation, HolderIsThePodOrItsGang) {
  const Pod pod = MakePod("team-b", "train-0").gpus(8).gang("train", 4);
  EXPECT_TRUE(isHolder(pod, "uid-team-b-train-0"));
  EXPECT_TRUE(isHolder(pod, "gang:team-b/train"));
  EXPECT_FALSE(isHolder(pod, "gang:team-b/trai"));
  EXPECT_FALSE(isHolder(pod, "gang:team-a/train"));
  EXPECT_FALSE(isHolder(pod, "gang:team-b/train-x"));
  EXPECT_FALSE(isHolder(pod, ""));
  const Pod loner = MakePod("team-b", "train").gpus(8);
  EXPECT_FALSE(isHolder(loner, "gang:team-b/train"));
  EXPECT_EQ(describe(reclaimFor("n1", 4)), "4 GPUs reserved for team-b/train-0 (reclaim)");
  EXPECT_EQ(describe({"n1", 1000, "uid-x", "q", "", ""}), "1 GPU reserved for uid-x");
}

struct FitCase {
  const char* name;
  std::vector<Pod> running;       // on n1 (8 GPUs)
  std::vector<Reservation> held;  // on n1
  Pod pod;
  bool fits;
  std::string reason;  // when it does not fit
};

class ReservationFit : public ::testing::TestWithParam<FitCase> {};

TEST_P(ReservationFit, DecidesAndExplains) {
  const FitCase& c = GetParam();
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8)}, c.running, {}, {}, c.held);
  const NodeState& node = *snap->findNode("n1");
  EXPECT_EQ(nodeFits(node, c.pod), c.fits);
  const Status status = fitsNode(node, c.pod);
  EXPECT_EQ(status.isOk(), c.fits) << status.reason();
  if (!c.fits) {
    EXPECT_EQ(status.reason(), c.reason);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReservationFit,
    ::testing::Values(
        FitCase{"OthersFitBesideTheReservation",
                {},
                {reclaimFor("n1", 4)},
                MakePod("team-a", "p").gpus(4),
                true,
                ""},
        FitCase{"OthersMayNotTakeReservedGpus",
                {},
                {reclaimFor("n1", 4)},
                MakePod("team-a", "p").gpus(5),
                false,
                "node n1: 4 GPUs reserved for team-b/train-0 (reclaim), of 8 whole GPUs free; pod "
                "needs 5 GPUs"},
        FitCase{"TheHolderPodTakesThem",
                {},
                {reclaimFor("n1", 4)},
                MakePod("team-b", "train-0").gpus(8),
                true,
                ""},
        FitCase{"AGangMemberTakesItsGangsGpus",
                {},
                {gangOn("n1", 8)},
                MakePod("team-b", "train-3").gpus(8).gang("train", 4),
                true,
                ""},
        FitCase{"AnotherGangDoesNot",
                {},
                {gangOn("n1", 8)},
                MakePod("team-b", "eval-0").gpus(1).gang("eval", 2),
                false,
                "node n1: 8 GPUs reserved for gang team-b/train (gang of 4 × 8 GPUs), of 8 whole "
                "GPUs free; pod needs 1 GPU"},
        // Reserved GPUs still held by terminating victims: nothing is left for others.
        FitCase{"ReservedBeforeVictimsLeave",
                {MakePod("team-a", "victim").gpus(4).on("n1").terminating(),
                 MakePod("team-a", "stays").gpus(2).on("n1")},
                {reclaimFor("n1", 4)},
                MakePod("team-a", "p").gpus(1),
                false,
                "node n1: 4 GPUs reserved for team-b/train-0 (reclaim), of 2 whole GPUs free; pod "
                "needs 1 GPU"},
        FitCase{"HolderFitsInWhatIsFree",
                {MakePod("team-a", "victim").gpus(4).on("n1").terminating()},
                {reclaimFor("n1", 4)},
                MakePod("team-b", "train-0").gpus(4),
                true,
                ""},
        // Shares of a GPU already in use are never reserved.
        FitCase{"FractionalPodUsesASharedGpu",
                {MakePod("team-a", "half").share(0.5).gpuIndex(0).on("n1")},
                {reclaimFor("n1", 7)},
                MakePod("team-a", "quarter").share(0.25),
                true,
                ""},
        FitCase{"FractionalPodMayNotTakeAReservedWholeGpu",
                {MakePod("team-a", "most").share(0.9).gpuIndex(0).on("n1")},
                {reclaimFor("n1", 7)},
                MakePod("team-a", "quarter").share(0.25),
                false,
                "node n1: 7 GPUs reserved for team-b/train-0 (reclaim), of 7 whole GPUs free; pod "
                "needs 0.25 of one GPU"},
        FitCase{"SeveralReservationsAreCounted",
                {},
                {reclaimFor("n1", 2), reclaimFor("n1", 2, "uid-other"), gangOn("n1", 2)},
                MakePod("team-a", "p").gpus(3),
                false,
                "node n1: 2 GPUs reserved for gang team-b/train (gang of 4 × 8 GPUs) and 2 more "
                "reservations, of 8 whole GPUs free; pod needs 3 GPUs"}),
    [](const ::testing::TestParamInfo<FitCase>& info) { return info.param.name; });

TEST(ReservationSnapshot, ListsEveryReservationAndWhatEachPodHolds) {
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)}, {}, {}, {},
                                  {gangOn("n2", 8), reclaimFor("n1", 4), gangOn("n1", 0)});
  ASSERT_EQ(snap->reservations().size(), 2u);  // empty reservations are dropped
  EXPECT_EQ(snap->reservations()[0].node, "n1");
  EXPECT_EQ(snap->reservations()[1].holder, "gang:team-b/train");
  EXPECT_EQ(snap->findNode("n1")->reserved(), testing::gpus(4));
  const Pod member = MakePod("team-b", "train-1").gpus(8).gang("train", 4);
  EXPECT_EQ(snap->reservedFor(member), testing::gpus(8));
  EXPECT_EQ(snap->findNode("n2")->wholeGpusFor(member), 8);
  EXPECT_EQ(snap->findNode("n2")->wholeGpusFor(MakePod("team-a", "x").gpus(1)), 0);
  const GangState* gang = snap->findGang("gang:team-b/train");
  ASSERT_NE(gang, nullptr);
  EXPECT_EQ(gang->reserved, testing::gpus(8));
}

TEST(ReservationQuota, ReservedGpusAreChargedToTheirQueue) {
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)}, {MakePod("team-b", "run").gpus(2).on("n2")},
      {MakeQueue("team-b").deserved(8).limit(8)}, {}, {reclaimFor("n1", 4)});
  // Another team-b pod: the 4 GPUs reserved for train-0 count as team-b's.
  Admission other = admit(*snap, testing::resolved(*snap, MakePod("team-b", "p").gpus(3)));
  EXPECT_EQ(other.status.reason(), "queue team-b at 6/8 GPUs (limit); pod needs 3 GPUs");
  // The holder is not charged twice for its own reservation.
  Admission holder = admit(*snap, testing::resolved(*snap, MakePod("team-b", "train-0").gpus(4)));
  EXPECT_TRUE(holder.status.isOk()) << holder.status.reason();
}

TEST(ReservationScore, TheHolderScoresItsReservedNodeHighest) {
  auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8), MakeNode("n3").gpus(8)},
                          {MakePod("team-a", "a").gpus(7).on("n3")}, {}, {}, {reclaimFor("n1", 4)});
  auto scorer = makeScorer("binpack");
  ASSERT_NE(scorer, nullptr);
  const std::vector<std::string_view> candidates = {"n1", "n2", "n3"};
  auto holder = prioritize(*snap, MakePod("team-b", "train-0").gpus(1), candidates, *scorer);
  EXPECT_EQ(holder[0].score, 10);
  EXPECT_LE(holder[1].score, 9);
  EXPECT_LE(holder[2].score, 9);
  // Anyone else: binpack prefers n3, the fullest.
  auto other = prioritize(*snap, MakePod("team-a", "p").gpus(1), candidates, *scorer);
  EXPECT_EQ(other[2].score, 10);
}

}  // namespace
}  // namespace gpufair::policy
