// Requeuer: once gpufair's view is complete, the pods kube-scheduler parked while gpufair could not
// decide (PodScheduled False) are touched (an annotation patch is a pod update, which
// kube-scheduler's queue answers by retrying the pod). Against the validating fake API server.
#include "gpufair/k8s/requeuer.h"

#include <gtest/gtest.h>

#include "gpufair/k8s/api.h"
#include "gpufair/state/mirror.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::MakeNode;
using gpufair::testing::MakePod;
using gpufair::testing::ManualClock;

class RequeuerTest : public ::testing::Test {
 protected:
  RequeuerTest() {
    fake_.start();
    client_ = fake::clientOf(fake_);
    mirror_.upsertNode(MakeNode("node-1").gpus(8));
  }
  // A pod both in the API server and in the mirror, as the watch would have it; failed: with
  // PodScheduled False (kube-scheduler tried it and parked it), as the pod sink records it.
  void pending(const std::string& name, const std::string& scheduler, bool failed = true) {
    auto created = fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", name));
    const std::string uid = created["metadata"]["uid"];
    mirror_.upsertPod(MakePod("team-a", name).uid(uid).gpus(1).scheduler(scheduler));
    failures_->set(uid, failed);
  }
  // kube-scheduler reports a failed cycle: the watch brings PodScheduled False.
  void fails(const std::string& name) {
    failures_->set(fake_.get("/api/v1/namespaces/team-a/pods/" + name).value()["metadata"]["uid"],
                   true);
  }
  RequeuerOptions withFailures() {
    RequeuerOptions options;
    options.failures = failures_;
    return options;
  }
  std::string requeuedAt(const std::string& name) {
    auto pod = fake_.get("/api/v1/namespaces/team-a/pods/" + name);
    if (!pod) return "gone";
    return pod->value("/metadata/annotations/gpufair.io~1requeued-at"_json_pointer, std::string());
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  state::Mirror mirror_{clock_};
  std::shared_ptr<SchedulingFailures> failures_ = std::make_shared<SchedulingFailures>();
};

TEST_F(RequeuerTest, TouchesThePendingPodsOfItsSchedulerWhenTheViewBecomesComplete) {
  pending("train-1", "gpufair");
  pending("train-2", "gpufair");
  pending("other", "default-scheduler");
  mirror_.upsertPod(MakePod("team-a", "running").gpus(1).on("node-1").scheduler("gpufair"));
  Requeuer requeuer(client_, clock_, withFailures());

  EXPECT_EQ(requeuer.tick(false, true, *mirror_.snapshot()), 0u) << "still starting";
  EXPECT_EQ(requeuedAt("train-1"), "");
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 2u);
  EXPECT_EQ(requeuedAt("train-1"), formatTime(clock_->now()));
  EXPECT_EQ(requeuedAt("train-2"), formatTime(clock_->now()));
  EXPECT_EQ(requeuedAt("other"), "") << "not gpufair's pod";
  EXPECT_EQ(requeuer.touched(), 2u);

  // Only on the rise: staying complete touches nothing more.
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 0u);
  // A relist (not complete, then complete again) touches them again.
  clock_->advance(std::chrono::seconds{30});
  requeuer.tick(false, true, *mirror_.snapshot());
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 2u);
  EXPECT_EQ(requeuedAt("train-1"), formatTime(clock_->now()));
}

TEST_F(RequeuerTest, PodsKubeSchedulerHasNotTriedAreNotTouched) {
  // Created before any scheduler ran (gpufair's start-up in a new cluster): no PodScheduled False.
  for (int i = 0; i < 3; ++i) pending("new-" + std::to_string(i), "gpufair", false);
  pending("parked", "gpufair");
  Requeuer requeuer(client_, clock_, withFailures());
  fake_.clearRequests();
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 1u);
  EXPECT_EQ(requeuedAt("parked"), formatTime(clock_->now()));
  EXPECT_EQ(requeuedAt("new-0"), "") << "in kube-scheduler's active queue: no write needed";
  EXPECT_EQ(fake_.requests("PATCH", "/api/v1/namespaces/team-a/pods/new-0").size(), 0u);
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 0u);
  EXPECT_EQ(requeuer.touched(), 1u);
}

TEST_F(RequeuerTest, APodWhoseFailureIsReportedJustAfterTheRiseIsTouchedWhileWatched) {
  pending("in-flight", "gpufair", false);  // its cycle was refused just before the rise
  pending("late", "gpufair", false);
  Requeuer requeuer(client_, clock_, withFailures());
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 0u);
  clock_->advance(std::chrono::seconds{5});
  fails("in-flight");  // kube-scheduler's status update arrives after the rise
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 1u);
  EXPECT_EQ(requeuedAt("in-flight"), formatTime(clock_->now()));
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 0u) << "touched once";
  // After the watch window a failure is gpufair's own refusal with a complete view: not touched.
  clock_->advance(std::chrono::seconds{30});
  requeuer.tick(true, true, *mirror_.snapshot());
  fails("late");
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 0u);
  EXPECT_EQ(requeuedAt("late"), "");
  // The next rise (a relist) touches it: it failed while gpufair's view was incomplete.
  requeuer.tick(false, true, *mirror_.snapshot());
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 2u);
  EXPECT_EQ(requeuedAt("late"), formatTime(clock_->now()));
}

TEST_F(RequeuerTest, WithoutSchedulingFailuresEveryPendingPodCounts) {
  pending("never-tried", "gpufair", false);
  Requeuer requeuer(client_, clock_);
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 1u);
  EXPECT_EQ(requeuedAt("never-tried"), formatTime(clock_->now()));
}

TEST_F(RequeuerTest, OnlyTheLeaderWritesAndInBatches) {
  for (int i = 0; i < 5; ++i) pending("p-" + std::to_string(i), "gpufair");
  RequeuerOptions options = withFailures();
  options.perTick = 2;
  Requeuer requeuer(client_, clock_, options);
  EXPECT_EQ(requeuer.tick(true, false, *mirror_.snapshot()), 0u);
  EXPECT_EQ(requeuer.pending(), 5u) << "kept for when this replica leads";
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 2u);
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 2u);
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 1u);
  EXPECT_EQ(requeuer.pending(), 0u);
}

TEST_F(RequeuerTest, PodsBoundOrDeletedSinceAreSkipped) {
  pending("bound-meanwhile", "gpufair");
  pending("deleted-meanwhile", "gpufair");
  pending("still-waiting", "gpufair");
  Requeuer requeuer(client_, clock_, withFailures());
  requeuer.tick(true, false, *mirror_.snapshot());  // queued; this replica does not lead yet
  ASSERT_EQ(requeuer.pending(), 3u);
  const std::string uid =
      fake_.get("/api/v1/namespaces/team-a/pods/bound-meanwhile").value()["metadata"]["uid"];
  policy::Pod placed = *mirror_.findPod(uid);
  placed.nodeName = "node-1";
  mirror_.upsertPod(placed);
  // Gone from the API server, not yet from the mirror: the patch's 404 is not a touch.
  fake_.remove("/api/v1/namespaces/team-a/pods/deleted-meanwhile");
  fake_.clearRequests();
  EXPECT_EQ(requeuer.tick(true, true, *mirror_.snapshot()), 1u);
  EXPECT_EQ(requeuedAt("still-waiting"), formatTime(clock_->now()));
  EXPECT_EQ(requeuedAt("bound-meanwhile"), "");
  EXPECT_EQ(fake_.requests("PATCH", "/api/v1/namespaces/team-a/pods/bound-meanwhile").size(), 0u);
  EXPECT_EQ(requeuer.pending(), 0u);
}

}  // namespace
}  // namespace gpufair::k8s
