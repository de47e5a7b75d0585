#include "gpufair/state/mirror.h"

#include <thread>

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

class MirrorTest : public ::testing::Test {
 protected:
  MirrorTest() : clock_(std::make_shared<testing::ManualClock>()), mirror_(clock_, {30s, 600s}) {
    QuotaConfig quota;
    quota.queues = {MakeQueue("team-a").deserved(4).limit(6), MakeQueue("team-b").deserved(4)};
    mirror_.setQuotaConfig(quota);
    mirror_.upsertNode(MakeNode("n1").gpus(4));
    mirror_.upsertNode(MakeNode("n2").gpus(4));
  }
  MilliGpu usedOn(const std::string& node) { return mirror_.snapshot()->findNode(node)->used(); }

  std::shared_ptr<testing::ManualClock> clock_;
  Mirror mirror_;
};

TEST_F(MirrorTest, BoundPodsHoldGpusUntilFinishedOrDeleted) {
  mirror_.upsertPod(MakePod("team-a", "p").gpus(2).on("n1"));
  EXPECT_EQ(usedOn("n1"), testing::gpus(2));
  EXPECT_EQ(mirror_.snapshot()->findQueue("team-a")->allocated, testing::gpus(2));
  mirror_.upsertPod(MakePod("team-a", "p").gpus(2).on("n1").terminating());
  EXPECT_EQ(usedOn("n1"), testing::gpus(2));  // terminating still holds
  mirror_.upsertPod(MakePod("team-a", "p").gpus(2).on("n1").phase(policy::PodPhase::kSucceeded));
  EXPECT_EQ(usedOn("n1"), 0);
  mirror_.upsertPod(MakePod("team-a", "p").gpus(2).on("n1"));
  mirror_.deletePod("uid-team-a-p");
  EXPECT_EQ(usedOn("n1"), 0);
  EXPECT_EQ(mirror_.findPod("uid-team-a-p"), nullptr);
}

TEST_F(MirrorTest, SnapshotsAreImmutableAndShareUnchangedNodes) {
  mirror_.upsertPod(MakePod("team-a", "p").gpus(1).on("n1"));
  auto before = mirror_.snapshot();
  EXPECT_EQ(mirror_.snapshot(), before);  // nothing changed: same snapshot
  mirror_.upsertPod(MakePod("team-b", "q").gpus(3).on("n2"));
  auto after = mirror_.snapshot();
  EXPECT_GT(after->generation(), before->generation());
  EXPECT_EQ(before->findNode("n2")->used(), 0);  // the old snapshot did not move
  EXPECT_EQ(after->findNode("n2")->used(), testing::gpus(3));
  // n1 did not change: its NodeState is shared.
  EXPECT_EQ(before->findNode("n1"), after->findNode("n1"));
}

TEST_F(MirrorTest, OfferedPodsArePendingDemandThenAssumedThenConfirmed) {
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  auto snap = mirror_.snapshot();
  ASSERT_EQ(snap->pending().size(), 1u);
  EXPECT_EQ(snap->findQueue("team-a")->pending, testing::gpus(2));

  auto outcome = mirror_.assume("uid-team-a-p", "n1");
  ASSERT_TRUE(outcome.ok()) << outcome.error();
  EXPECT_FALSE(outcome->overQuota);
  EXPECT_EQ(outcome->queue, "team-a");
  snap = mirror_.snapshot();
  EXPECT_TRUE(snap->pending().empty());
  EXPECT_EQ(snap->findNode("n1")->used(), testing::gpus(2));
  EXPECT_TRUE(mirror_.isAssumed("uid-team-a-p"));

  // The watch shows the pod bound where we put it: confirmed.
  mirror_.upsertPod(MakePod("team-a", "p").gpus(2).on("n1"));
  EXPECT_FALSE(mirror_.isAssumed("uid-team-a-p"));
  clock_->advance(1h);
  EXPECT_EQ(mirror_.expire(), 0u);
  EXPECT_EQ(usedOn("n1"), testing::gpus(2));
}

TEST_F(MirrorTest, WatchLagDoesNotUndoAnAssumption) {
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  ASSERT_TRUE(mirror_.assume("uid-team-a-p", "n1").ok());
  mirror_.upsertPod(MakePod("team-a", "p").gpus(2));  // an older, unbound version arrives
  EXPECT_EQ(usedOn("n1"), testing::gpus(2));
  EXPECT_TRUE(mirror_.isAssumed("uid-team-a-p"));
}

TEST_F(MirrorTest, UnconfirmedAssumptionsExpire) {
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  ASSERT_TRUE(mirror_.assume("uid-team-a-p", "n1").ok());
  clock_->advance(29s);
  EXPECT_EQ(mirror_.expire(), 0u);
  clock_->advance(2s);
  EXPECT_EQ(mirror_.expire(), 1u);
  EXPECT_EQ(usedOn("n1"), 0);
  auto pod = mirror_.findPod("uid-team-a-p");
  ASSERT_NE(pod, nullptr);
  EXPECT_TRUE(pod->nodeName.empty());  // pending again
}

TEST_F(MirrorTest, ConfirmAndForget) {
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  mirror_.notePending(MakePod("team-a", "q").gpus(2));
  ASSERT_TRUE(mirror_.assume("uid-team-a-p", "n1").ok());
  ASSERT_TRUE(mirror_.assume("uid-team-a-q", "n2").ok());
  mirror_.confirm("uid-team-a-p");
  mirror_.forget("uid-team-a-q");
  clock_->advance(1h);
  mirror_.expire();
  EXPECT_EQ(usedOn("n1"), testing::gpus(2));
  EXPECT_EQ(usedOn("n2"), 0);
}

TEST_F(MirrorTest, PendingPodsOnlyOfferedAreForgottenWhenUnseen) {
  mirror_.notePending(MakePod("team-a", "offered").gpus(1));
  mirror_.upsertPod(MakePod("team-a", "watched").gpus(1));  // from the API: stays
  clock_->advance(601s);
  EXPECT_EQ(mirror_.expire(), 1u);
  EXPECT_EQ(mirror_.findPod("uid-team-a-offered"), nullptr);
  EXPECT_NE(mirror_.findPod("uid-team-a-watched"), nullptr);
}

TEST_F(MirrorTest, AssumeRechecksFitAndQuota) {
  mirror_.upsertPod(MakePod("team-b", "big").gpus(3).on("n1"));
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  auto r = mirror_.assume("uid-team-a-p", "n1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "pod team-a/p no longer fits on node n1: fewer than 2 GPUs free");
  EXPECT_FALSE(mirror_.assume("no-such-uid", "n1").ok());
  EXPECT_FALSE(mirror_.assume("uid-team-a-p", "ghost").ok());

  mirror_.upsertPod(MakePod("team-a", "running").gpus(4).on("n2"));  // team-a at deserved 4
  mirror_.upsertNode(MakeNode("n4").gpus(4));
  mirror_.notePending(MakePod("team-a", "more").gpus(3));
  r = mirror_.assume("uid-team-a-more", "n4");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("limit"), std::string::npos) << r.error();
}

TEST_F(MirrorTest, BorrowedPlacementIsLabelledOverQuota) {
  mirror_.upsertPod(MakePod("team-a", "running").gpus(4).on("n2"));
  mirror_.notePending(MakePod("team-a", "extra").gpus(1));
  auto r = mirror_.assume("uid-team-a-extra", "n1");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->overQuota);
  auto pod = mirror_.findPod("uid-team-a-extra");
  EXPECT_TRUE(pod->overQuota);
  EXPECT_EQ(pod->labels.at(kOverQuotaLabel), "true");
  EXPECT_EQ(mirror_.snapshot()->findQueue("team-a")->overQuota, testing::gpus(1));
}

TEST_F(MirrorTest, QuotaChangeResolvesQueuesAgain) {
  mirror_.upsertPod(MakePod("research", "p").gpus(2).on("n1"));
  EXPECT_EQ(mirror_.snapshot()->findQueue(kDefaultQueueName)->allocated, testing::gpus(2));
  QuotaConfig quota = mirror_.quotaConfig();
  quota.queues.push_back(MakeQueue("research").deserved(2));
  mirror_.setQuotaConfig(quota);
  auto snap = mirror_.snapshot();
  EXPECT_EQ(snap->findQueue("research")->allocated, testing::gpus(2));
  EXPECT_EQ(snap->findQueue(kDefaultQueueName)->allocated, 0);
}

TEST_F(MirrorTest, PodsOnUnknownNodesAppearWhenTheNodeDoes) {
  mirror_.upsertPod(MakePod("team-a", "early").gpus(2).on("n3"));
  EXPECT_EQ(mirror_.snapshot()->findNode("n3"), nullptr);
  mirror_.upsertNode(MakeNode("n3").gpus(4));
  EXPECT_EQ(usedOn("n3"), testing::gpus(2));
  mirror_.deleteNode("n3");
  EXPECT_EQ(mirror_.snapshot()->findNode("n3"), nullptr);
}

TEST_F(MirrorTest, ConcurrentReadersAndWriters) {
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) {
      auto snap = mirror_.snapshot();
      MilliGpu sum = 0;
      for (const auto& n : snap->nodes()) sum += n->used();
      ASSERT_EQ(sum, snap->allocated());
    }
  });
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "p" + std::to_string(i % 50);
    mirror_.upsertPod(MakePod("team-b", name).gpus(i % 3).on(i % 2 ? "n1" : "n2"));
    if (i % 7 == 0) mirror_.deletePod("uid-team-b-" + name);
  }
  stop = true;
  reader.join();
}

}  // namespace
}  // namespace gpufair::state

namespace gpufair::state {
namespace {

TEST_F(MirrorTest, RelistDropsWhatWasDeletedWhileAway) {
  mirror_.upsertPod(MakePod("team-a", "kept").gpus(1).on("n1"));
  mirror_.upsertPod(MakePod("team-a", "deleted").gpus(2).on("n1"));
  mirror_.notePending(MakePod("team-b", "offered").gpus(1));
  mirror_.replacePods(
      {MakePod("team-a", "kept").gpus(1).on("n1"), MakePod("team-b", "new").gpus(1).on("n2")});
  EXPECT_EQ(usedOn("n1"), testing::gpus(1));
  EXPECT_EQ(usedOn("n2"), testing::gpus(1));
  EXPECT_EQ(mirror_.findPod("uid-team-a-deleted"), nullptr);
  EXPECT_NE(mirror_.findPod("uid-team-b-offered"),
            nullptr);  // only offered: not the list's business

  mirror_.replaceNodes({MakeNode("n2").gpus(8)});
  auto snap = mirror_.snapshot();
  EXPECT_EQ(snap->findNode("n1"), nullptr);
  EXPECT_EQ(snap->findNode("n2")->allocatable(), testing::gpus(8));
  EXPECT_EQ(snap->nodes().size(), 1u);
}

TEST_F(MirrorTest, RelistKeepsAssumptionsTheServerHasNotSeenYet) {
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  ASSERT_TRUE(mirror_.assume("uid-team-a-p", "n1").ok());
  mirror_.replacePods({MakePod("team-a", "p").gpus(2)});  // listed, still unbound
  EXPECT_EQ(usedOn("n1"), testing::gpus(2));
}

}  // namespace
}  // namespace gpufair::state

namespace gpufair::state {
namespace {

TEST_F(MirrorTest, ReofferingAnUnchangedPendingPodPublishesNothingNew) {
  mirror_.notePending(MakePod("team-a", "p").gpus(2));
  auto first = mirror_.snapshot();
  for (int i = 0; i < 3; ++i) mirror_.notePending(MakePod("team-a", "p").gpus(2));
  EXPECT_EQ(mirror_.snapshot(), first);  // same snapshot object: nothing was rebuilt
  // A changed request is news.
  mirror_.notePending(MakePod("team-a", "p").gpus(3));
  auto changed = mirror_.snapshot();
  EXPECT_NE(changed, first);
  EXPECT_EQ(changed->findQueue("team-a")->pending, testing::gpus(3));
  // Re-offers still keep it from expiring.
  clock_->advance(500s);
  mirror_.notePending(MakePod("team-a", "p").gpus(3));
  clock_->advance(500s);
  EXPECT_EQ(mirror_.expire(), 0u);
  EXPECT_NE(mirror_.findPod("uid-team-a-p"), nullptr);
}

}  // namespace
}  // namespace gpufair::state
