// Requeuer: once gpufair's view is complete, the pods kube-scheduler parked while gpufair could not
// decide are touched (an annotation patch is a pod update, which kube-scheduler's queue answers by
// retrying the pod). Against the validating fake API server.
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
  // A pod both in the API server and in the mirror, as the watch would have it.
  void pending(const std::string& name, const std::string& scheduler, int gpus = 1) {
    auto created = fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", name));
    mirror_.upsertPod(MakePod("team-a", name)
                          .uid(created["metadata"]["uid"].get<std::string>())
                          .gpus(gpus)
                          .scheduler(scheduler));
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
};

TEST_F(RequeuerTest, TouchesThePendingPodsOfItsSchedulerWhenTheViewBecomesComplete) {
  pending("train-1", "gpufair");
  pending("train-2", "gpufair");
  pending("other", "default-scheduler");
  mirror_.upsertPod(MakePod("team-a", "running").gpus(1).on("node-1").scheduler("gpufair"));
  Requeuer requeuer(client_, clock_);

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

TEST_F(RequeuerTest, OnlyTheLeaderWritesAndInBatches) {
  for (int i = 0; i < 5; ++i) pending("p-" + std::to_string(i), "gpufair");
  RequeuerOptions options;
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
  Requeuer requeuer(client_, clock_);
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
