#include "gpufair/policy/undo_log.h"

#include <gtest/gtest.h>

#include "gpufair/policy/admission.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::gpus;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;
using testing::snapshotOf;

PodPtr podOn(const ClusterSnapshot& snap, std::string_view uid) {
  for (const auto& n : snap.nodes()) {
    for (const auto& p : n->pods()) {
      if (p->uid == uid) return p;
    }
  }
  return nullptr;
}

std::size_t at(const ClusterSnapshot& snap, std::string_view node) {
  return static_cast<std::size_t>(snap.nodeIndex(node));
}

class UndoLogTest : public ::testing::Test {
 protected:
  SnapshotPtr snap_ = snapshotOf(
      {MakeNode("n1").gpus(8).cpu(32).memGi(256), MakeNode("n2").gpus(4).cpu(16).memGi(64)},
      {MakePod("team-a", "a1").gpus(4).cpu(8).memGi(32).on("n1"),
       MakePod("team-a", "a2").gpus(2).on("n1").overQuota(),
       MakePod("team-b", "b1").gpus(2).cpu(4).on("n2")},
      {MakeQueue("team-a").deserved(4), MakeQueue("team-b").deserved(4)});
};

TEST_F(UndoLogTest, StartsAsTheSnapshot) {
  UndoLog log(*snap_);
  const std::size_t n1 = at(*snap_, "n1");
  EXPECT_EQ(log.used(n1), gpus(6));
  EXPECT_EQ(log.free(n1), gpus(2));
  EXPECT_EQ(log.fullyFreeGpus(n1), 2);
  EXPECT_EQ(log.cpuUsed(n1), 8000);
  EXPECT_FALSE(log.changed(n1));
  EXPECT_EQ(log.queue(log.queueIndex("team-a")).allocated, gpus(6));
  EXPECT_EQ(log.queueIndex("no-such-queue"), -1);
  EXPECT_EQ(log.checkpoint(), 0u);
  EXPECT_TRUE(log.changes().empty());
}

TEST_F(UndoLogTest, RemovingAPodFreesItsNodeAndQueueUntilRolledBack) {
  UndoLog log(*snap_);
  const std::size_t n1 = at(*snap_, "n1");
  const int a = log.queueIndex("team-a");
  const UndoLog::Mark mark = log.checkpoint();
  ASSERT_TRUE(log.removePod(podOn(*snap_, "uid-team-a-a2")));
  EXPECT_EQ(log.used(n1), gpus(4));
  EXPECT_EQ(log.fullyFreeGpus(n1), 4);
  EXPECT_EQ(log.queue(a).allocated, gpus(4));
  EXPECT_EQ(log.queue(a).overQuota, 0);
  EXPECT_EQ(log.queue(a).runningPods, 1);
  EXPECT_TRUE(log.isRemoved(*podOn(*snap_, "uid-team-a-a2")));
  EXPECT_EQ(log.podsOn(n1).size(), 1u);
  EXPECT_EQ(log.nodeAfter(n1).free(), gpus(4));
  // A second removal of the same pod changes nothing.
  EXPECT_FALSE(log.removePod(podOn(*snap_, "uid-team-a-a2")));

  log.rollback(mark);
  EXPECT_EQ(log.used(n1), gpus(6));
  EXPECT_EQ(log.fullyFreeGpus(n1), 2);
  EXPECT_EQ(log.queue(a).allocated, gpus(6));
  EXPECT_EQ(log.queue(a).overQuota, gpus(2));
  EXPECT_FALSE(log.changed(n1));
  EXPECT_FALSE(log.isRemoved(*podOn(*snap_, "uid-team-a-a2")));
}

TEST_F(UndoLogTest, RefusesPodsItDoesNotKnow) {
  UndoLog log(*snap_);
  auto stranger = std::make_shared<const Pod>(MakePod("team-a", "x").gpus(1).on("n1").obj());
  auto nowhere = std::make_shared<const Pod>(MakePod("team-a", "y").gpus(1).on("n9").obj());
  EXPECT_FALSE(log.removePod(stranger));
  EXPECT_FALSE(log.removePod(nowhere));
  EXPECT_FALSE(log.restorePod(*stranger));
  EXPECT_EQ(log.checkpoint(), 0u);
}

TEST_F(UndoLogTest, PlacingTakesWholeGpusCpuAndQueueUsage) {
  UndoLog log(*snap_);
  const std::size_t n2 = at(*snap_, "n2");
  const int b = log.queueIndex("team-b");
  Pod pod = MakePod("team-b", "new").gpus(2).cpu(6);
  pod.queue = "team-b";
  log.place(n2, std::make_shared<const Pod>(pod));
  EXPECT_EQ(log.used(n2), gpus(4));
  EXPECT_EQ(log.free(n2), 0);
  EXPECT_EQ(log.fullyFreeGpus(n2), 0);
  EXPECT_EQ(log.cpuFree(n2), 6000);
  EXPECT_EQ(log.queue(b).allocated, gpus(4));
  const auto changes = log.changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::kPlaced);
  EXPECT_EQ(changes[0].node, n2);
  EXPECT_EQ(changes[0].pod->nodeName, "n2");  // placed as bound there
  EXPECT_EQ(log.nodeAfter(n2).free(), 0);
  log.rollback(0);
  EXPECT_EQ(log.fullyFreeGpus(n2), 2);
  EXPECT_EQ(log.queue(b).allocated, gpus(2));
}

TEST_F(UndoLogTest, FractionalPlacementsShareOneGpuBestFit) {
  UndoLog log(*snap_);
  const std::size_t n2 = at(*snap_, "n2");
  log.place(n2, std::make_shared<const Pod>(MakePod("team-b", "half").share(0.5).obj()));
  EXPECT_EQ(log.fullyFreeGpus(n2), 1);
  log.place(n2, std::make_shared<const Pod>(MakePod("team-b", "quarter").share(0.25).obj()));
  EXPECT_EQ(log.fullyFreeGpus(n2), 1);  // best fit: the half-used GPU
  log.place(n2,
            std::make_shared<const Pod>(MakePod("team-b", "other").share(0.5).gpuIndex(3).obj()));
  EXPECT_EQ(log.fullyFreeGpus(n2), 0);  // its own GPU, as annotated
  log.rollback(2);
  EXPECT_EQ(log.fullyFreeGpus(n2), 1);
}

TEST_F(UndoLogTest, NestedCheckpointsRollBackInLayers) {
  UndoLog log(*snap_);
  const std::size_t n1 = at(*snap_, "n1");
  const UndoLog::Mark outer = log.checkpoint();
  log.removePod(podOn(*snap_, "uid-team-a-a1"));
  const UndoLog::Mark inner = log.checkpoint();
  log.removePod(podOn(*snap_, "uid-team-a-a2"));
  EXPECT_EQ(log.used(n1), 0);
  log.rollback(inner);
  EXPECT_EQ(log.used(n1), gpus(2));
  EXPECT_TRUE(log.isRemoved(*podOn(*snap_, "uid-team-a-a1")));
  log.rollback(outer);
  EXPECT_EQ(log.used(n1), gpus(6));
}

TEST_F(UndoLogTest, RestoreUndoesAnOlderRemovalAndCancelsItInChanges) {
  UndoLog log(*snap_);
  const std::size_t n1 = at(*snap_, "n1");
  log.removePod(podOn(*snap_, "uid-team-a-a1"));
  log.removePod(podOn(*snap_, "uid-team-a-a2"));
  const UndoLog::Mark mark = log.checkpoint();
  ASSERT_TRUE(log.restorePod(*podOn(*snap_, "uid-team-a-a1")));
  EXPECT_EQ(log.used(n1), gpus(4));
  EXPECT_EQ(log.cpuUsed(n1), 8000);
  auto net = log.changes();
  ASSERT_EQ(net.size(), 1u);
  EXPECT_EQ(net[0].pod->uid, "uid-team-a-a2");
  // Reported from the mark on, the restore is a change of its own.
  auto since = log.changes(mark);
  ASSERT_EQ(since.size(), 1u);
  EXPECT_EQ(since[0].kind, Change::Kind::kRestored);
  log.rollback(mark);
  EXPECT_EQ(log.used(n1), 0);
  EXPECT_EQ(log.changes().size(), 2u);
}

TEST_F(UndoLogTest, CommitKeepsTheChangesAndForgetsTheirUndo) {
  UndoLog log(*snap_);
  const std::size_t n1 = at(*snap_, "n1");
  log.removePod(podOn(*snap_, "uid-team-a-a2"));
  const auto kept = log.commit();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].kind, Change::Kind::kRemoved);
  EXPECT_EQ(log.checkpoint(), 0u);
  log.rollback(0);  // nothing left to undo
  EXPECT_EQ(log.used(n1), gpus(4));
  EXPECT_TRUE(log.isRemoved(*podOn(*snap_, "uid-team-a-a2")));
}

TEST_F(UndoLogTest, ChargesAndReservationsAreUndone) {
  UndoLog log(*snap_);
  const std::size_t n1 = at(*snap_, "n1");
  const int b = log.queueIndex("team-b");
  log.chargeQueue(b, gpus(3));
  EXPECT_EQ(log.queue(b).allocated, gpus(5));
  ASSERT_TRUE(log.reserve({"n1", gpus(2), "uid-x", "team-b", "reclaim", "x"}));
  EXPECT_FALSE(log.reserve({"n9", gpus(2), "uid-x", "team-b", "reclaim", "x"}));
  const Pod other = MakePod("team-a", "other").gpus(1);
  Pod holder = MakePod("team-b", "x").gpus(1);
  holder.uid = "uid-x";
  EXPECT_EQ(log.wholeGpusFor(n1, other), 0);
  EXPECT_EQ(log.wholeGpusFor(n1, holder), 2);
  EXPECT_EQ(log.nodeAfter(n1).reserved(), gpus(2));
  const auto changes = log.changes();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].kind, Change::Kind::kCharged);
  EXPECT_EQ(changes[1].kind, Change::Kind::kReserved);
  EXPECT_EQ(changes[1].reservation.holder, "uid-x");
  log.rollback(0);
  EXPECT_EQ(log.queue(b).allocated, gpus(2));
  EXPECT_EQ(log.wholeGpusFor(n1, other), 2);
  EXPECT_FALSE(log.changed(n1));
}

TEST_F(UndoLogTest, AdmissionReadsTheWorkingQueues) {
  // team-b holds 2 of its deserved 4: a 4-GPU pod would borrow. With b1 removed, it is within.
  UndoLog log(*snap_);
  Pod pod = MakePod("team-b", "big").gpus(4);
  pod.queue = "team-b";
  log.removePod(podOn(*snap_, "uid-team-b-b1"));
  const Admission after = admitAfter(log.queues(), snap_->free() + gpus(2), pod, gpus(4));
  EXPECT_TRUE(after.status.isOk()) << after.status.reason();
  EXPECT_FALSE(after.overQuota);
}

TEST(UndoLog, RemovalOnASharedGpuLaysTheNodeOutAgain) {
  auto snap =
      snapshotOf({MakeNode("n1").gpus(2)}, {MakePod("t", "f1").share(0.5).gpuIndex(0).on("n1"),
                                            MakePod("t", "f2").share(0.5).gpuIndex(0).on("n1"),
                                            MakePod("t", "w").gpus(1).on("n1")});
  UndoLog log(*snap);
  EXPECT_EQ(log.fullyFreeGpus(0), 0);
  log.place(0, std::make_shared<const Pod>(MakePod("t", "late").share(0.25).obj()));
  log.removePod(podOn(*snap, "uid-t-f1"));
  log.removePod(podOn(*snap, "uid-t-f2"));
  // Laid out again as the snapshot builder would: w on GPU 0, the late quarter on GPU 1.
  EXPECT_EQ(log.nodeAfter(0).fullyFreeGpus(), log.fullyFreeGpus(0));
  EXPECT_EQ(log.fullyFreeGpus(0), 0);
  log.rollback(1);
  EXPECT_EQ(log.fullyFreeGpus(0), 0);
  EXPECT_EQ(log.used(0), gpus(2.25));
}

}  // namespace
}  // namespace gpufair::policy
