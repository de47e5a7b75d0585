// A borrowed pod's over-quota label after bindOn(io_context): its PATCH goes out on the context's
// sender once the Binding succeeded, never through a synchronous send on a worker thread; a label
// the API server refuses is kept for retryLabels() (or dropped when the pod is gone); stop() waits
// for a label in flight as for a bind, and patches again one whose answer cannot come. Against the
// validating fake API server.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "gpufair/k8s/binder.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_client.h"
#include "k8s/io_threads.h"
#include "testing/builders.h"

// Designated initializers leave the other members at their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpufair::k8s {
namespace {

using gpufair::testing::MakePod;
using namespace std::chrono_literals;
using testsupport::IoThreads;
using testsupport::Outcome;
using testsupport::outcome;

// The real client, counting the requests sent synchronously (send(): a thread waits for them).
class CountingClient : public KubeClient {
 public:
  explicit CountingClient(KubeClientPtr real) : real_(std::move(real)) {}
  ApiResponse send(const ApiRequest& request) override {
    ++syncSends;
    return real_->send(request);
  }
  ApiResponse stream(const ApiRequest& request, const LineHandler& onLine,
                     const std::atomic<bool>& cancel) override {
    return real_->stream(request, onLine, cancel);
  }
  std::string server() const override { return real_->server(); }
  AsyncSenderPtr asyncSender(boost::asio::io_context& context) override {
    return real_->asyncSender(context);
  }
  std::atomic<int> syncSends{0};

 private:
  KubeClientPtr real_;
};

constexpr const char* kPods = "/api/v1/namespaces/team-a/pods";

class BindLabelAsyncTest : public ::testing::Test {
 protected:
  explicit BindLabelAsyncTest(std::chrono::milliseconds writeLatency = 20ms)
      : fake_({.writeLatency = writeLatency}) {
    fake_.start();
  }
  void SetUp() override {
    client_ = std::make_shared<CountingClient>(fake::clientOf(fake_));
    KubeBinderOptions options;
    options.bindThreads = 0;
    binder_ = std::make_unique<KubeBinder>(client_, options);
    ASSERT_TRUE(binder_->bindOn(io_.context()));
  }
  void TearDown() override { binder_->stop(); }
  policy::Pod createPod(const std::string& name) {
    auto created = fake_.create(kPods, fake::makePod("team-a", name, ""));
    return MakePod("team-a", name).uid(created["metadata"]["uid"].get<std::string>()).gpus(1);
  }
  // Binds `pod` as borrowed and returns the bind's outcome.
  Outcome bindBorrowed(const policy::Pod& pod) {
    auto [done, result] = outcome();
    binder_->bindAsync(pod, "node-1", true, std::move(done));
    return result.get();
  }
  std::string labelOf(const std::string& name) {
    const auto pod = fake_.get(std::string(kPods) + "/" + name);
    if (!pod || !(*pod)["metadata"].contains("labels")) return "";
    return (*pod)["metadata"]["labels"].value("gpufair.io/over-quota", "");
  }

  fake::FakeApiServer fake_;
  std::shared_ptr<CountingClient> client_;
  IoThreads io_{2};  // after fake_: its threads end first
  std::unique_ptr<KubeBinder> binder_;
};

TEST_F(BindLabelAsyncTest, TheLabelGoesOutOnTheSenderAfterTheBinding) {
  const Outcome got = bindBorrowed(createPod("borrower"));
  ASSERT_TRUE(got.status.isOk()) << got.status.reason();
  binder_->flushLabels();
  EXPECT_EQ(labelOf("borrower"), "true");
  EXPECT_EQ(client_->syncSends, 0);  // neither the Binding nor the label waited on a thread
  const auto writes = fake_.requests("", std::string(kPods) + "/borrower");
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].method, "POST");  // the Binding first
  EXPECT_EQ(writes[1].method, "PATCH");
  EXPECT_EQ(writes[1].contentType, "application/merge-patch+json");
  EXPECT_EQ(binder_->pendingLabels(), 0u);
  EXPECT_EQ(binder_->labelFailures(), 0u);
}

TEST_F(BindLabelAsyncTest, ARefusedLabelIsKeptAndRetried) {
  fake_.addFault(
      {.method = "PATCH", .pathPrefix = std::string(kPods) + "/borrower", .status = 500});
  ASSERT_TRUE(bindBorrowed(createPod("borrower")).status.isOk());  // the bind stands
  binder_->flushLabels();
  EXPECT_EQ(labelOf("borrower"), "");
  EXPECT_EQ(binder_->labelFailures(), 1u);
  ASSERT_EQ(binder_->pendingLabels(), 1u);
  EXPECT_EQ(binder_->retryLabels(), 1u);
  EXPECT_EQ(labelOf("borrower"), "true");
  EXPECT_EQ(binder_->pendingLabels(), 0u);
}

TEST_F(BindLabelAsyncTest, TheLabelOfAPodGoneIsNotRetried) {
  fake_.addFault(
      {.method = "PATCH", .pathPrefix = std::string(kPods) + "/borrower", .status = 404});
  ASSERT_TRUE(bindBorrowed(createPod("borrower")).status.isOk());
  binder_->flushLabels();
  EXPECT_EQ(binder_->labelFailures(), 1u);
  EXPECT_EQ(binder_->pendingLabels(), 0u);
}

// The API server answers every write after 300 ms.
class SlowBindLabelAsyncTest : public BindLabelAsyncTest {
 protected:
  SlowBindLabelAsyncTest() : BindLabelAsyncTest(300ms) {}
};

TEST_F(SlowBindLabelAsyncTest, StopWaitsForTheLabelInFlight) {
  ASSERT_TRUE(bindBorrowed(createPod("borrower")).status.isOk());
  // The label's PATCH was sent when the Binding's answer came; its own answer takes 300 ms.
  binder_->stop();
  EXPECT_EQ(labelOf("borrower"), "true");
  EXPECT_EQ(binder_->pendingLabels(), 0u);
  EXPECT_EQ(client_->syncSends, 0);
}

TEST_F(SlowBindLabelAsyncTest, StopPatchesAgainALabelWhoseAnswerDidNotCome) {
  ASSERT_TRUE(bindBorrowed(createPod("borrower")).status.isOk());
  io_.stop();  // as the server's stop() does: the label's answer will never be read
  binder_->stop();
  EXPECT_EQ(client_->syncSends, 1);  // the PATCH again, on stop()'s thread
  // The first PATCH reached the API server or not, depending on when the context stopped.
  const auto patches = fake_.requests("PATCH", std::string(kPods) + "/borrower").size();
  EXPECT_GE(patches, 1u);
  EXPECT_LE(patches, 2u);
  EXPECT_EQ(labelOf("borrower"), "true");
  EXPECT_EQ(binder_->pendingLabels(), 0u);
}

}  // namespace
}  // namespace gpufair::k8s
