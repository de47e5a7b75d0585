// Mirror: reservation and gang life cycles (see mirror.h).
#include <gtest/gtest.h>

#include "gpufair/state/mirror.h"

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

class MirrorReservationTest : public ::testing::Test {
 protected:
  MirrorReservationTest() : clock_(std::make_shared<testing::ManualClock>()), mirror_(clock_) {
    QuotaConfig quota;
    quota.queues = {MakeQueue("team-a").deserved(16), MakeQueue("team-b").deserved(32)};
    mirror_.setQuotaConfig(quota);
    for (const char* n : {"n1", "n2", "n3"}) mirror_.upsertNode(MakeNode(n).gpus(8));
  }
  policy::Reservation forTrain0(std::string node, double gpus) {
    return {std::move(node), testing::gpus(gpus), "uid-team-b-train-0",
            "team-b",        "reclaim",           "team-b/train-0"};
  }
  MilliGpu reservedOn(const std::string& node) {
    return mirror_.snapshot()->findNode(node)->reserved();
  }

  std::shared_ptr<testing::ManualClock> clock_;
  Mirror mirror_;
};

TEST_F(MirrorReservationTest, ReservedGpusAreShownAndKeptFromOthers) {
  mirror_.reserve(forTrain0("n1", 5.5), 60s);  // rounded up to whole GPUs
  EXPECT_EQ(reservedOn("n1"), testing::gpus(6));
  ASSERT_EQ(mirror_.snapshot()->reservations().size(), 1u);
  mirror_.notePending(MakePod("team-a", "p").gpus(4));
  auto refused = mirror_.assume("uid-team-a-p", "n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "pod team-a/p no longer fits on node n1: node n1: 6 GPUs reserved for team-b/train-0 "
            "(reclaim), of 8 whole GPUs free; pod needs 4 GPUs");
  EXPECT_TRUE(mirror_.assume("uid-team-a-p", "n2").ok());
}

TEST_F(MirrorReservationTest, TheHolderTakesItAtBindAndGivesItBackIfForgotten) {
  mirror_.reserve(forTrain0("n1", 8), 60s);
  mirror_.notePending(MakePod("team-b", "train-0").gpus(8));
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-0", "n1").ok());
  EXPECT_EQ(reservedOn("n1"), 0);
  EXPECT_TRUE(mirror_.reservations().empty());
  mirror_.forget("uid-team-b-train-0");  // bind failed: the GPUs are held for it again
  EXPECT_EQ(reservedOn("n1"), testing::gpus(8));
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-0", "n1").ok());
  mirror_.confirm("uid-team-b-train-0");
  mirror_.forget("uid-team-b-train-0");  // no effect on a bound pod
  EXPECT_EQ(reservedOn("n1"), 0);
  mirror_.deletePod("uid-team-b-train-0");  // the reservation is gone, not given back
  EXPECT_EQ(reservedOn("n1"), 0);
}

TEST_F(MirrorReservationTest, AHolderBoundElsewhereNeedsItsReservationNoMore) {
  mirror_.reserve(forTrain0("n1", 4), 60s);
  mirror_.upsertPod(MakePod("team-b", "train-0").gpus(4).on("n2"));  // seen bound by the watch
  EXPECT_EQ(reservedOn("n1"), 0);
  EXPECT_TRUE(mirror_.reservations().empty());
}

TEST_F(MirrorReservationTest, ExpiresAfterItsTtlOnTheInjectedClock) {
  mirror_.reserve(forTrain0("n1", 4), 60s);
  clock_->advance(59s);
  EXPECT_EQ(mirror_.expire(), 0u);
  EXPECT_EQ(reservedOn("n1"), testing::gpus(4));
  clock_->advance(1s);
  EXPECT_EQ(mirror_.expire(), 1u);
  EXPECT_EQ(reservedOn("n1"), 0);
}

TEST_F(MirrorReservationTest, ReleasedByHolderAndReplacedPerNode) {
  mirror_.reserve(forTrain0("n1", 4), 60s);
  mirror_.reserve(forTrain0("n1", 2), 60s);  // same holder and node: replaced
  mirror_.reserve(forTrain0("n2", 3), 60s);
  EXPECT_EQ(reservedOn("n1"), testing::gpus(2));
  EXPECT_EQ(mirror_.reservations().size(), 2u);
  mirror_.releaseReservation("uid-team-b-train-0");
  EXPECT_EQ(reservedOn("n1"), 0);
  EXPECT_EQ(reservedOn("n2"), 0);
  EXPECT_TRUE(mirror_.reservations().empty());
}

TEST_F(MirrorReservationTest, ReservedGpusAreChargedToTheQueue) {
  QuotaConfig quota;
  quota.queues = {MakeQueue("team-b").deserved(8).limit(8)};
  mirror_.setQuotaConfig(quota);
  mirror_.reserve(forTrain0("n1", 6), 60s);
  mirror_.notePending(MakePod("team-b", "other").gpus(4));
  auto refused = mirror_.assume("uid-team-b-other", "n2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "pod team-b/other is not admitted: queue team-b at 6/8 GPUs (limit); pod needs 4 GPUs");
}

// Gangs.

TEST_F(MirrorReservationTest, AGangIsReservedWholeTakenByItsMembersAndReleasedWhenBound) {
  mirror_.upsertPod(MakePod("team-a", "small").gpus(2).on("n3"));
  mirror_.notePending(MakePod("team-b", "train-0").gpus(8).gang("train", 2));
  auto reserved = mirror_.reserveGang(*mirror_.findPod("uid-team-b-train-0"));
  ASSERT_TRUE(reserved.ok()) << reserved.error();
  EXPECT_TRUE(reserved->planned);
  ASSERT_EQ(reserved->reservations.size(), 2u);
  EXPECT_EQ(reserved->reservations[0].node, "n1");
  EXPECT_EQ(reserved->reservations[1].node, "n2");
  EXPECT_EQ(reserved->reservations[0].holder, "gang:team-b/train");
  EXPECT_EQ(reserved->reservations[0].reason, "gang of 2 × 8 GPUs");
  // Asking again changes nothing.
  auto again = mirror_.reserveGang(*mirror_.findPod("uid-team-b-train-0"));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->planned);
  EXPECT_EQ(again->reservations.size(), 2u);

  ASSERT_TRUE(mirror_.assume("uid-team-b-train-0", "n1").ok());
  EXPECT_EQ(reservedOn("n1"), 0);
  EXPECT_EQ(reservedOn("n2"), testing::gpus(8));
  mirror_.confirm("uid-team-b-train-0");
  mirror_.notePending(MakePod("team-b", "train-1").gpus(8).gang("train", 2));
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-1", "n2").ok());
  EXPECT_EQ(reservedOn("n2"), 0);
  EXPECT_TRUE(mirror_.reservations().empty());  // every reserved GPU is taken
  mirror_.confirm("uid-team-b-train-1");
  EXPECT_TRUE(mirror_.reservations().empty());
}

TEST_F(MirrorReservationTest, TwoGangsRacingForRoomForOne) {
  mirror_.upsertPod(MakePod("team-a", "small").gpus(1).on("n3"));
  mirror_.notePending(MakePod("team-b", "a-0").gpus(8).gang("a", 2));
  mirror_.notePending(MakePod("team-b", "b-0").gpus(8).gang("b", 2));
  auto first = mirror_.reserveGang(*mirror_.findPod("uid-team-b-a-0"));
  ASSERT_TRUE(first.ok()) << first.error();
  auto second = mirror_.reserveGang(*mirror_.findPod("uid-team-b-b-0"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error(), "gang b needs 2 × 8 GPUs; no node has 8 free");
  EXPECT_EQ(mirror_.reservations().size(), 2u);  // nothing of b's was reserved
}

TEST_F(MirrorReservationTest, AGangThatDoesNotCompleteInTimeLosesItsReservations) {
  MirrorOptions options;
  options.gangTimeout = 120s;
  Mirror mirror(clock_, options);
  mirror.upsertNode(MakeNode("n1").gpus(8));
  mirror.upsertNode(MakeNode("n2").gpus(8));
  mirror.notePending(MakePod("team-b", "train-0").gpus(8).gang("train", 2));
  ASSERT_TRUE(mirror.reserveGang(*mirror.findPod("uid-team-b-train-0")).ok());
  ASSERT_TRUE(mirror.assume("uid-team-b-train-0", "n1").ok());
  mirror.confirm("uid-team-b-train-0");
  clock_->advance(119s);
  mirror.expire();
  EXPECT_EQ(mirror.snapshot()->findNode("n2")->reserved(), testing::gpus(8));
  clock_->advance(1s);
  mirror.expire();
  EXPECT_EQ(mirror.snapshot()->findNode("n2")->reserved(), 0);
  EXPECT_TRUE(mirror.reservations().empty());
}

TEST_F(MirrorReservationTest, AGangMemberWhoLeavesGivesItsShareBack) {
  mirror_.notePending(MakePod("team-b", "train-0").gpus(4).gang("train", 2));
  auto reserved = mirror_.reserveGang(*mirror_.findPod("uid-team-b-train-0"));
  ASSERT_TRUE(reserved.ok()) << reserved.error();
  ASSERT_EQ(reserved->reservations.size(), 1u);  // both members fit on one node
  const std::string node = reserved->reservations[0].node;
  EXPECT_EQ(reservedOn(node), testing::gpus(8));
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-0", node).ok());
  EXPECT_EQ(reservedOn(node), testing::gpus(4));
  mirror_.upsertPod(MakePod("team-b", "train-0").gpus(4).gang("train", 2).on(node));
  mirror_.upsertPod(MakePod("team-b", "train-0")
                        .gpus(4)
                        .gang("train", 2)
                        .on(node)
                        .phase(policy::PodPhase::kFailed));
  EXPECT_EQ(reservedOn(node), testing::gpus(8));
}

TEST_F(MirrorReservationTest, AGangMemberWithAReservationIsAdmittedForTheWholeGang) {
  QuotaConfig quota;
  quota.queues = {MakeQueue("team-b").deserved(16).limit(16)};
  mirror_.setQuotaConfig(quota);
  mirror_.notePending(MakePod("team-b", "train-0").gpus(8).gang("train", 2));
  ASSERT_TRUE(mirror_.reserveGang(*mirror_.findPod("uid-team-b-train-0")).ok());
  // The reservation is charged, yet its own members bind within it.
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-0", "n1").ok());
  mirror_.notePending(MakePod("team-b", "train-1").gpus(8).gang("train", 2));
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-1", "n2").ok());
  // A third pod of the queue is over the limit.
  mirror_.notePending(MakePod("team-b", "extra").gpus(1));
  EXPECT_FALSE(mirror_.assume("uid-team-b-extra", "n3").ok());
}

TEST_F(MirrorReservationTest, BindingTheFirstMemberReservesForTheWholeGang) {
  mirror_.upsertPod(MakePod("team-a", "small").gpus(1).on("n1"));
  mirror_.notePending(MakePod("team-b", "train-0").gpus(8).gang("train", 2));
  // Bound without a filter first (a scheduler that does not ask): the gang is planned here.
  auto refused = mirror_.assume("uid-team-b-train-0", "n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "pod team-b/train-0 cannot bind to node n1: gang train has room reserved on n2, n3, "
            "not on node n1");
  ASSERT_TRUE(mirror_.assume("uid-team-b-train-0", "n2").ok());
  EXPECT_EQ(reservedOn("n3"), testing::gpus(8));
}

TEST_F(MirrorReservationTest, AGangThatCannotFitIsNotBoundPartly) {
  mirror_.upsertPod(MakePod("team-a", "small").gpus(1).on("n1"));
  mirror_.upsertPod(MakePod("team-a", "small2").gpus(1).on("n2"));
  mirror_.notePending(MakePod("team-b", "train-0").gpus(8).gang("train", 2));
  auto refused = mirror_.assume("uid-team-b-train-0", "n3");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "pod team-b/train-0 cannot bind to node n3: gang train needs 2 × 8 GPUs; 1 node has 8 "
            "free");
  EXPECT_TRUE(mirror_.reservations().empty());
}

TEST_F(MirrorReservationTest, AMemberWithoutGpusNeedsNoReservedRoom) {
  // An MPI-style gang: a launcher without GPUs and two 8-GPU workers.
  mirror_.upsertPod(MakePod("team-b", "launcher").gang("train", 3));
  mirror_.notePending(MakePod("team-b", "worker-0").gpus(8).gang("train", 3));
  auto reserved = mirror_.reserveGang(*mirror_.findPod("uid-team-b-worker-0"));
  ASSERT_TRUE(reserved.ok()) << reserved.error();
  MilliGpu total = 0;
  for (const auto& r : reserved->reservations) total += r.gpus;
  EXPECT_EQ(total, testing::gpus(16));  // two workers, not three
  EXPECT_EQ(reserved->reservations[0].reason, "gang of 2 × 8 GPUs");
}

// Consolidation steers a moved pod's replacement: a new pod of the same controller with the same
// labels (gpufair.io/ labels aside) holds the reservation; siblings already running do not.
TEST_F(MirrorReservationTest, AReplacementHoldsItsMovedPredecessorsReservation) {
  const policy::Pod moved =
      MakePod("team-a", "job-0").gpus(3).on("n1").controller("job-uid").label("job-name", "job");
  mirror_.upsertPod(MakePod("team-a", "sibling")
                        .gpus(2)
                        .on("n2")
                        .controller("job-uid")
                        .label("job-name", "job")
                        .obj());
  policy::Reservation r{"n2",     testing::gpus(3),     policy::replacementHolder(moved),
                        "team-a", "consolidation move", "replacement of team-a/job-0"};
  clock_->advance(10s);
  mirror_.reserve(r, 60s);
  EXPECT_EQ(reservedOn("n2"), testing::gpus(3));
  // The sibling (created before the reservation) changes; it takes nothing.
  policy::Pod sibling = *mirror_.findPod("uid-team-a-sibling");
  sibling.created = clock_->now() - 60s;
  mirror_.upsertPod(sibling);
  EXPECT_EQ(reservedOn("n2"), testing::gpus(3));
  // Another pod of another controller may not use the held GPUs; the replacement may.
  mirror_.notePending(MakePod("team-a", "other").gpus(6).controller("rs-uid"));
  EXPECT_FALSE(mirror_.assume("uid-team-a-other", "n2").ok());
  policy::Pod replacement = MakePod("team-a", "job-1")
                                .gpus(3)
                                .controller("job-uid")
                                .label("job-name", "job")
                                .label(kOverQuotaLabel, "true");
  replacement.created = clock_->now();
  mirror_.notePending(replacement);
  EXPECT_EQ(mirror_.snapshot()->reservedFor(replacement), testing::gpus(3));
  ASSERT_TRUE(mirror_.assume("uid-team-a-job-1", "n2").ok());
  EXPECT_EQ(reservedOn("n2"), 0);
  mirror_.confirm("uid-team-a-job-1");
  EXPECT_TRUE(mirror_.reservations().empty());
}

}  // namespace
}  // namespace gpufair::state
