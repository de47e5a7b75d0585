#include "gpufair/k8s/binder.h"

#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/api.h"
#include "gpufair/state/mirror.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_client.h"
#include "k8s/mock_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::MakeNode;
using gpufair::testing::MakePod;
using gpufair::testing::MakeQueue;
using gpufair::testing::ManualClock;
using ::testing::_;
using testing::body;
using ::testing::DoAll;
using ::testing::InSequence;
using testing::MockKubeClient;
using testing::reply;
using ::testing::Return;
using ::testing::SaveArg;
using testing::statusReply;
using ::testing::StrictMock;
using testing::transportFailure;

class KubeBinderTest : public ::testing::Test {
 protected:
  std::shared_ptr<StrictMock<MockKubeClient>> client_ =
      std::make_shared<StrictMock<MockKubeClient>>();
  KubeBinder binder_{client_, KubeBinderOptions{std::chrono::milliseconds{5'000}, 3}};
  policy::Pod pod_ = MakePod("team-a", "train-1").uid("uid-1").gpus(2);
};

TEST_F(KubeBinderTest, BindsWithoutLabelWhenWithinQuota) {
  ApiRequest request;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&request), Return(reply(201))));
  Status status = binder_.bind(pod_, "node-3", false);
  ASSERT_TRUE(status.isOk()) << status.reason();
  EXPECT_EQ(request.path, "/api/v1/namespaces/team-a/pods/train-1/binding");
  EXPECT_EQ(request.timeout, std::chrono::milliseconds{5'000});
  EXPECT_EQ(body(request)["target"]["name"], "node-3");
  EXPECT_EQ(body(request)["metadata"]["uid"], "uid-1");
}

TEST_F(KubeBinderTest, LabelsBorrowedPodsAfterBinding) {
  InSequence order;
  ApiRequest bindRequest;
  ApiRequest patch;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&bindRequest), Return(reply(201))));
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&patch), Return(reply(200))));
  ASSERT_TRUE(binder_.bind(pod_, "node-3", true).isOk());
  binder_.flushLabels();
  EXPECT_EQ(bindRequest.method, "POST");
  EXPECT_EQ(patch.method, "PATCH");
  EXPECT_EQ(patch.path, "/api/v1/namespaces/team-a/pods/train-1");
  EXPECT_EQ(patch.contentType, "application/merge-patch+json");
  EXPECT_EQ(body(patch)["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  EXPECT_EQ(body(patch)["metadata"]["uid"], "uid-1");
  EXPECT_EQ(binder_.pendingLabels(), 0u);
}

TEST_F(KubeBinderTest, BindReturnsBeforeTheLabelIsPatched) {
  // The label's PATCH blocks until the test lets it go: bind() must not wait for it.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> patching;
  InSequence order;
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(201)));
  EXPECT_CALL(*client_, send(_)).WillOnce([&](const ApiRequest& request) {
    EXPECT_EQ(request.method, "PATCH");
    patching.set_value();
    released.wait();
    return reply(200);
  });
  ASSERT_TRUE(binder_.bind(pod_, "node-3", true).isOk());
  patching.get_future().wait();  // the worker sends it while bind() has returned
  release.set_value();
  binder_.flushLabels();
  EXPECT_EQ(binder_.pendingLabels(), 0u);
  EXPECT_EQ(binder_.labelFailures(), 0u);
}

TEST_F(KubeBinderTest, StopWritesTheQueuedLabelsAndLaterBindsLabelInline) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::string> patched;
  EXPECT_CALL(*client_, send(_)).WillRepeatedly([&](const ApiRequest& request) {
    if (request.method == "POST") return reply(201);
    released.wait();  // the first label holds the worker: the others stay queued
    patched.push_back(request.path);
    return reply(200);
  });
  for (int i = 0; i < 3; ++i) {
    const std::string name = "train-" + std::to_string(i);
    ASSERT_TRUE(binder_.bind(MakePod("team-a", name).uid(name).gpus(1), "node-3", true).isOk());
  }
  std::thread stopper([this] { binder_.stop(); });
  release.set_value();
  stopper.join();
  EXPECT_EQ(patched, (std::vector<std::string>{"/api/v1/namespaces/team-a/pods/train-0",
                                               "/api/v1/namespaces/team-a/pods/train-1",
                                               "/api/v1/namespaces/team-a/pods/train-2"}))
      << "none lost on shutdown";
  ASSERT_TRUE(binder_.bind(MakePod("team-a", "late").uid("late").gpus(1), "node-3", true).isOk());
  EXPECT_EQ(patched.size(), 4u) << "after stop(): labelled before bind() returns";
  EXPECT_EQ(patched.back(), "/api/v1/namespaces/team-a/pods/late");
}

TEST_F(KubeBinderTest, AMirrorKeyIsNotSentAsAUidPrecondition) {
  ApiRequest request;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&request), Return(reply(201))));
  policy::Pod keyed = MakePod("team-a", "train-1").uid("team-a/train-1").gpus(1);
  ASSERT_TRUE(binder_.bind(keyed, "node-3", false).isOk());
  EXPECT_FALSE(body(request)["metadata"].contains("uid"));
}

TEST_F(KubeBinderTest, BindErrorsCarryTheApiMessageAndSkipTheLabel) {
  EXPECT_CALL(*client_, send(_))
      .WillOnce(Return(
          statusReply(409, "Conflict", "pod train-1 is already assigned to node \"node-2\"")));
  Status status = binder_.bind(pod_, "node-3", true);
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_EQ(status.reason(),
            "binding team-a/train-1 to node-3: HTTP 409: pod train-1 is already assigned to node "
            "\"node-2\"");
  EXPECT_EQ(binder_.pendingLabels(), 0u);
}

TEST_F(KubeBinderTest, AFailedLabelDoesNotFailTheBindAndIsRetried) {
  InSequence order;
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(201)));
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(transportFailure("connection reset")));
  EXPECT_TRUE(binder_.bind(pod_, "node-3", true).isOk());
  binder_.flushLabels();
  EXPECT_EQ(binder_.pendingLabels(), 1u);
  EXPECT_EQ(binder_.labelFailures(), 1u);

  ApiRequest retry;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&retry), Return(reply(200))));
  EXPECT_EQ(binder_.retryLabels(), 1u);
  EXPECT_EQ(binder_.pendingLabels(), 0u);
  EXPECT_EQ(retry.method, "PATCH");
  EXPECT_EQ(body(retry)["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  EXPECT_EQ(binder_.retryLabels(), 0u);  // nothing left: no request
}

TEST_F(KubeBinderTest, AFractionalPodsBindingCarriesItsGpu) {
  ApiRequest bindRequest;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&bindRequest), Return(reply(201))));
  policy::Pod half = MakePod("team-a", "notebook").uid("uid-n").share(0.5).gpuIndex(3);
  ASSERT_TRUE(binder_.bind(half, "node-3", false).isOk());
  EXPECT_EQ(bindRequest.method, "POST");
  EXPECT_EQ(bindRequest.path, "/api/v1/namespaces/team-a/pods/notebook/binding");
  EXPECT_EQ(body(bindRequest)["metadata"]["annotations"],
            (nlohmann::json{{"gpufair.io/gpu-index", "3"}}));
  EXPECT_EQ(body(bindRequest)["metadata"]["uid"], "uid-n");
}

TEST_F(KubeBinderTest, ARefusedBindingOfAFractionalPodFailsTheBind) {
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(500, "etcd timeout")));
  policy::Pod half = MakePod("team-a", "notebook").uid("uid-n").share(0.5).gpuIndex(0);
  Status status = binder_.bind(half, "node-3", false);
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_THAT(status.reason(),
              ::testing::StartsWith("binding team-a/notebook to node-3: HTTP 500"));
}

TEST_F(KubeBinderTest, WholeGpuPodsAndUnplacedFractionsGetNoAnnotation) {
  std::vector<ApiRequest> requests;
  EXPECT_CALL(*client_, send(_)).Times(2).WillRepeatedly([&](const ApiRequest& request) {
    requests.push_back(request);
    return reply(201);
  });
  policy::Pod half = MakePod("team-a", "notebook").uid("uid-n").share(0.5);  // gpuIndex unknown
  ASSERT_TRUE(binder_.bind(half, "node-3", false).isOk());
  ASSERT_TRUE(binder_.bind(pod_, "node-3", false).isOk());
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) {
    EXPECT_EQ(request.method, "POST");
    EXPECT_FALSE(body(request)["metadata"].contains("annotations")) << request.path;
  }
}

TEST_F(KubeBinderTest, RetriesStopWhenThePodIsGoneOrAfterMaxAttempts) {
  policy::Pod other = MakePod("team-a", "train-2").uid("uid-2").gpus(1);
  InSequence order;
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(201)));
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(500, "etcd timeout")));
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(201)));
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(503, "unavailable")));
  ASSERT_TRUE(binder_.bind(pod_, "node-3", true).isOk());
  binder_.flushLabels();  // the label's PATCH before the next Binding, in the expected order
  ASSERT_TRUE(binder_.bind(other, "node-3", true).isOk());
  binder_.flushLabels();
  ASSERT_EQ(binder_.pendingLabels(), 2u);

  // train-1 is gone (dropped); train-2 keeps failing (attempt 2 of 3).
  EXPECT_CALL(*client_, send(_))
      .WillOnce(Return(statusReply(404, "NotFound", "pods \"train-1\" not found")));
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(500, "etcd timeout")));
  EXPECT_EQ(binder_.retryLabels(), 0u);
  EXPECT_EQ(binder_.pendingLabels(), 1u);
  // Attempt 3 of 3 fails: given up.
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(500, "etcd timeout")));
  EXPECT_EQ(binder_.retryLabels(), 0u);
  EXPECT_EQ(binder_.pendingLabels(), 0u);
  EXPECT_EQ(binder_.labelFailures(), 5u);
}

class OverQuotaLabelerTest : public ::testing::Test {
 protected:
  OverQuotaLabelerTest() {
    QuotaConfig quota;
    quota.queues = {MakeQueue("team-a").deserved(4), MakeQueue("team-b").deserved(2)};
    mirror_.setQuotaConfig(quota);
    mirror_.upsertNode(MakeNode("node-1").gpus(8));
    mirror_.upsertNode(MakeNode("node-2").gpus(8));
  }
  void addPod(policy::Pod pod, int startedMinutesAgo) {
    pod.started = clock_->now() - std::chrono::minutes{startedMinutesAgo};
    mirror_.upsertPod(std::move(pod));
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  state::Mirror mirror_{clock_};
  std::shared_ptr<StrictMock<MockKubeClient>> client_ =
      std::make_shared<StrictMock<MockKubeClient>>();
  OverQuotaLabeler labeler_{
      client_, clock_,
      OverQuotaLabelerOptions{std::chrono::seconds{60}, std::chrono::milliseconds{5'000}}};
};

TEST_F(OverQuotaLabelerTest, UnlabelsTheOldestBorrowedPodsThatFitWithinDeserved) {
  // team-a deserves 4: 2 held by its own pod, borrowed 2 (oldest) + 2 (younger) + 1 (youngest).
  addPod(MakePod("team-a", "own").gpus(2).on("node-1"), 50);
  addPod(MakePod("team-a", "old").gpus(2).on("node-1").overQuota(), 40);
  addPod(MakePod("team-a", "young").gpus(2).on("node-2").overQuota(), 10);
  addPod(MakePod("team-a", "youngest").gpus(1).on("node-2").overQuota(), 5);
  // team-b is still above deserved with its borrowed pod.
  addPod(MakePod("team-b", "own").gpus(2).on("node-2"), 30);
  addPod(MakePod("team-b", "borrowed").gpus(1).on("node-2").overQuota(), 20);

  ApiRequest patch;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&patch), Return(reply(200))));
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 1u);
  EXPECT_EQ(patch.method, "PATCH");
  EXPECT_EQ(patch.path, "/api/v1/namespaces/team-a/pods/old");
  nlohmann::json b = body(patch);
  EXPECT_TRUE(b["metadata"]["labels"].contains("gpufair.io/over-quota"));
  EXPECT_TRUE(b["metadata"]["labels"]["gpufair.io/over-quota"].is_null());
  EXPECT_EQ(b["metadata"]["uid"], "uid-team-a-old");
  EXPECT_EQ(labeler_.removed(), 1u);

  // Until the watch shows the label gone, the same pod is not patched again.
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 0u);
}

TEST_F(OverQuotaLabelerTest, OnlyTheLeaderWrites) {
  addPod(MakePod("team-a", "borrowed").gpus(1).on("node-1").overQuota(), 5);
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), false), 0u);  // StrictMock: no request
}

TEST_F(OverQuotaLabelerTest, AFailedRemovalIsRetriedLater) {
  addPod(MakePod("team-b", "borrowed").gpus(1).on("node-1").overQuota(), 5);
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(transportFailure("timeout")));
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 0u);
  EXPECT_EQ(labeler_.failures(), 1u);
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 0u);  // too soon: no request
  clock_->advance(std::chrono::seconds{61});
  EXPECT_CALL(*client_, send(_)).WillOnce(Return(reply(200)));
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 1u);
}

TEST_F(OverQuotaLabelerTest, LeavesFinishedAndUnlabelledPodsAlone) {
  addPod(MakePod("team-a", "done")
             .gpus(1)
             .on("node-1")
             .overQuota()
             .phase(policy::PodPhase::kSucceeded),
         5);
  addPod(MakePod("team-a", "plain").gpus(1).on("node-1"), 5);
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 0u);
}

// Only queues whose unborrowed GPUs are below deserved are looked at (from the snapshot's sums):
// at the boundary, one GPU below deserved still unlabels a 1-GPU pod; at deserved nothing is sent.
TEST_F(OverQuotaLabelerTest, LooksAtQueuesWhoseOwnGpusAreBelowDeserved) {
  // team-b deserves 2: 2 of its own, so its borrowed pod stays borrowed (StrictMock: no request).
  addPod(MakePod("team-b", "own").gpus(2).on("node-2"), 30);
  addPod(MakePod("team-b", "borrowed").gpus(1).on("node-2").overQuota(), 20);
  // team-a deserves 4: 3 of its own, 2 + 1 borrowed; only the 1-GPU pod fits within deserved.
  addPod(MakePod("team-a", "own").gpus(3).on("node-1"), 50);
  addPod(MakePod("team-a", "two").gpus(2).on("node-1").overQuota(), 40);
  addPod(MakePod("team-a", "one").gpus(1).on("node-1").overQuota(), 10);
  ApiRequest patch;
  EXPECT_CALL(*client_, send(_)).WillOnce(DoAll(SaveArg<0>(&patch), Return(reply(200))));
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 1u);
  EXPECT_EQ(patch.path, "/api/v1/namespaces/team-a/pods/one");

  // Once the watch shows it unlabelled, team-a holds its deserved 4 and nothing is sent again.
  mirror_.upsertPod(MakePod("team-a", "one").gpus(1).on("node-1"));
  EXPECT_EQ(labeler_.reconcile(*mirror_.snapshot(), true), 0u);
}

// The real HTTP client against the fake API server: the requests are ones kube-apiserver takes.
class AgainstFakeApiServer : public ::testing::Test {
 protected:
  AgainstFakeApiServer() {
    fake_.start();
    client_ = fake::clientOf(fake_);
  }
  policy::Pod createPod(const std::string& name) {
    auto created = fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", name));
    return MakePod("team-a", name).uid(created["metadata"]["uid"].get<std::string>()).gpus(1);
  }
  nlohmann::json pod(const std::string& name) {
    return fake_.get("/api/v1/namespaces/team-a/pods/" + name).value_or(nlohmann::json());
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
};

TEST_F(AgainstFakeApiServer, BindsAndLabelsABorrowedPod) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_);
  policy::Pod train = createPod("train-1");
  ASSERT_TRUE(binder.bind(train, "node-3", true).isOk());
  binder.flushLabels();
  nlohmann::json stored = pod("train-1");
  EXPECT_EQ(stored["spec"]["nodeName"], "node-3");
  EXPECT_EQ(stored["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  EXPECT_EQ(stored["metadata"]["uid"], train.uid);

  Status again = binder.bind(train, "node-4", false);
  EXPECT_EQ(again.code(), Code::kError);
  EXPECT_THAT(again.reason(), ::testing::HasSubstr("already assigned to node \"node-3\""));

  ASSERT_TRUE(
      patchPodLabels(*client_, "team-a", "train-1", {}, {"gpufair.io/over-quota"}, train.uid)
          .isOk());
  EXPECT_FALSE(pod("train-1")["metadata"]["labels"].contains("gpufair.io/over-quota"));
}

TEST_F(AgainstFakeApiServer, AFractionalPodCarriesItsGpuIndexWhenBound) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_);
  policy::Pod notebook = createPod("notebook");
  notebook.setGpuShare(500);
  notebook.gpuIndex = 1;
  ASSERT_TRUE(binder.bind(notebook, "node-3", false).isOk());
  nlohmann::json stored = pod("notebook");
  EXPECT_EQ(stored["spec"]["nodeName"], "node-3");
  EXPECT_EQ(stored["metadata"]["annotations"]["gpufair.io/gpu-index"], "1");
}

TEST_F(AgainstFakeApiServer, EvictionsAreTyped) {
  ASSERT_NE(client_, nullptr);
  policy::Pod victim = createPod("victim");
  fake_.protectFromEviction("team-a", "victim");
  EXPECT_EQ(evictPod(*client_, "team-a", "victim", victim.uid).outcome, EvictionOutcome::kBlocked);
  fake_.protectFromEviction("team-a", "victim", false);
  EXPECT_EQ(evictPod(*client_, "team-a", "victim", victim.uid).outcome, EvictionOutcome::kEvicted);
  EXPECT_EQ(evictPod(*client_, "team-a", "victim", victim.uid).outcome, EvictionOutcome::kNotFound);
}

}  // namespace
}  // namespace gpufair::k8s
