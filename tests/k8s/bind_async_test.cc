// KubeBinder::bindAsync against the fake API server answering every write late (as a real
// kube-apiserver does after its etcd write): the Binding is posted on a bind thread and its outcome
// (success, the API server's error, a timeout) given to done() there, exactly once.
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/binder.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::MakePod;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// What done() was given, and on which thread.
struct Outcome {
  Status status;
  std::thread::id thread;
};

// A done() for bindAsync and the future of its outcome.
std::pair<state::BindDone, std::future<Outcome>> outcome() {
  auto promise = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> future = promise->get_future();
  return {[promise](Status status) {
            promise->set_value({std::move(status), std::this_thread::get_id()});
          },
          std::move(future)};
}

class BindAsyncTest : public ::testing::Test {
 protected:
  explicit BindAsyncTest(std::chrono::milliseconds writeLatency = 20ms)
      : fake_([&] {
          fake::FakeApiServerOptions options;
          options.writeLatency = writeLatency;
          return options;
        }()) {
    fake_.start();
    client_ = fake::clientOf(fake_);
  }
  policy::Pod createPod(const std::string& name) {
    auto created = fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", name));
    return MakePod("team-a", name).uid(created["metadata"]["uid"].get<std::string>()).gpus(1);
  }
  std::string nodeOf(const std::string& name) {
    const auto pod = fake_.get("/api/v1/namespaces/team-a/pods/" + name);
    if (!pod || !(*pod)["spec"].contains("nodeName")) return "";
    return (*pod)["spec"]["nodeName"].get<std::string>();
  }
  KubeBinderOptions options(std::size_t bindThreads,
                            std::chrono::milliseconds requestTimeout = 5'000ms) {
    KubeBinderOptions options;
    options.requestTimeout = requestTimeout;
    options.bindThreads = bindThreads;
    return options;
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
};

TEST_F(BindAsyncTest, TheBindingIsPostedOnABindThreadWhichGetsItsOutcome) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(4));
  const policy::Pod train = createPod("train-1");
  auto [done, result] = outcome();
  binder.bindAsync(train, "node-3", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_TRUE(got.status.isOk()) << got.status.reason();
  EXPECT_NE(got.thread, std::this_thread::get_id());
  EXPECT_EQ(nodeOf("train-1"), "node-3");
}

TEST_F(BindAsyncTest, TheApiServersRefusalIsTheOutcome) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(4));
  const policy::Pod train = createPod("train-1");
  ASSERT_TRUE(binder.bind(train, "node-3", false).isOk());
  auto [done, result] = outcome();
  binder.bindAsync(train, "node-4", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_EQ(got.status.code(), Code::kError);
  EXPECT_THAT(got.status.reason(), HasSubstr("already assigned to node \"node-3\""));
  EXPECT_EQ(nodeOf("train-1"), "node-3");
}

TEST_F(BindAsyncTest, AFractionalPodsGpuRidesOnItsAsyncBinding) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(4));
  policy::Pod notebook = createPod("notebook");
  notebook.setGpuShare(500);
  notebook.gpuIndex = 1;
  auto [done, result] = outcome();
  binder.bindAsync(notebook, "node-3", false, std::move(done));
  ASSERT_TRUE(result.get().status.isOk());
  const auto stored = fake_.get("/api/v1/namespaces/team-a/pods/notebook");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["metadata"]["annotations"]["gpufair.io/gpu-index"], "1");
  EXPECT_EQ((*stored)["spec"]["nodeName"], "node-3");
  const auto writes = fake_.requests("", "/api/v1/namespaces/team-a/pods/notebook");
  ASSERT_EQ(writes.size(), 1u) << "one Binding, no PATCH";
  EXPECT_EQ(writes[0].path, "/api/v1/namespaces/team-a/pods/notebook/binding");
}

TEST_F(BindAsyncTest, ManyBindsAtOnceEachGetTheirOwnOutcomeOnFewerThreads) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(3));
  std::vector<std::future<Outcome>> results;
  for (int i = 0; i < 12; ++i) {
    auto [done, result] = outcome();
    binder.bindAsync(createPod("p-" + std::to_string(i)), "node-" + std::to_string(i % 5), false,
                     std::move(done));
    results.push_back(std::move(result));
  }
  for (int i = 0; i < 12; ++i) {
    EXPECT_TRUE(results[i].get().status.isOk()) << i;
    EXPECT_EQ(nodeOf("p-" + std::to_string(i)), "node-" + std::to_string(i % 5));
  }
}

TEST_F(BindAsyncTest, StopBindsWhatIsQueuedThenLaterBindsOnTheCallersThread) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(1));
  std::vector<std::future<Outcome>> queued;
  for (int i = 0; i < 3; ++i) {
    auto [done, result] = outcome();
    binder.bindAsync(createPod("q-" + std::to_string(i)), "node-1", false, std::move(done));
    queued.push_back(std::move(result));
  }
  binder.stop();
  for (auto& result : queued) {
    ASSERT_EQ(result.wait_for(0s), std::future_status::ready);  // done before stop() returned
    EXPECT_TRUE(result.get().status.isOk());
  }
  auto [done, result] = outcome();
  binder.bindAsync(createPod("late"), "node-2", false, std::move(done));
  ASSERT_EQ(result.wait_for(0s), std::future_status::ready);
  const Outcome got = result.get();
  EXPECT_TRUE(got.status.isOk());
  EXPECT_EQ(got.thread, std::this_thread::get_id());
  EXPECT_EQ(nodeOf("late"), "node-2");
}

TEST_F(BindAsyncTest, WithoutBindThreadsTheCallerBinds) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(0));
  auto [done, result] = outcome();
  binder.bindAsync(createPod("train-1"), "node-3", false, std::move(done));
  ASSERT_EQ(result.wait_for(0s), std::future_status::ready);
  const Outcome got = result.get();
  EXPECT_TRUE(got.status.isOk());
  EXPECT_EQ(got.thread, std::this_thread::get_id());
}

// The API server answers after 1 s; the binder gives up after its request timeout.
class SlowBindAsyncTest : public BindAsyncTest {
 protected:
  SlowBindAsyncTest() : BindAsyncTest(1'000ms) {}
};

TEST_F(SlowBindAsyncTest, ABindingNotAnsweredWithinTheRequestTimeoutFails) {
  ASSERT_NE(client_, nullptr);
  KubeBinder binder(client_, options(2, 100ms));
  auto [done, result] = outcome();
  binder.bindAsync(createPod("train-1"), "node-3", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_EQ(got.status.code(), Code::kError);
  EXPECT_THAT(got.status.reason(), HasSubstr("no answer within 100 ms"));
  EXPECT_NE(got.thread, std::this_thread::get_id());
}

}  // namespace
}  // namespace gpufair::k8s
