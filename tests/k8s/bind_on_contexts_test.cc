// KubeBinder::bindOn with several io_contexts, one thread each (as the webhook server runs them):
// a bind called on a context's thread is sent and answered on that context, one sender each; a
// bind from any other thread goes to the contexts in turn; stop() with binds in flight on several
// contexts waits for them all while the contexts run, and fails them all once one stopped.
#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gmock/gmock.h>
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
using ::testing::HasSubstr;
using testsupport::bindAll;
using testsupport::expectAllFailedByStop;
using testsupport::IoThreads;
using testsupport::Outcome;
using testsupport::outcome;
using namespace std::chrono_literals;
namespace asio = boost::asio;

class BindOnContextsTest : public ::testing::Test {
 protected:
  explicit BindOnContextsTest(std::chrono::milliseconds latency = 20ms)
      : fake_({.writeLatency = latency}) {
    fake_.start();
    client_ = fake::clientOf(fake_);
    for (int i = 0; i < 3; ++i) io_.push_back(std::make_unique<IoThreads>(1));
  }
  std::vector<asio::io_context*> contexts() {
    std::vector<asio::io_context*> out;
    for (auto& io : io_) out.push_back(&io->context());
    return out;
  }
  std::unique_ptr<KubeBinder> binder() {
    auto made = std::make_unique<KubeBinder>(client_, KubeBinderOptions{.bindThreads = 0});
    EXPECT_TRUE(made->bindOn(contexts()));
    return made;
  }
  policy::Pod createPod(const std::string& name) {
    auto created = fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", name));
    return MakePod("team-a", name).uid(created["metadata"]["uid"].get<std::string>()).gpus(1);
  }
  // bindAsync called on io_[context]'s thread, as /bind calls it on its session's; returns once
  // that call returned (the bind is under way).
  std::future<Outcome> bindFrom(KubeBinder& kube, std::size_t context, const policy::Pod& pod) {
    auto [done, result] = outcome();
    std::promise<void> called;
    asio::post(io_[context]->context(), [&kube, &called, pod, done = std::move(done)]() mutable {
      kube.bindAsync(pod, "node-1", false, std::move(done));
      called.set_value();
    });
    called.get_future().wait();
    return std::move(result);
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
  std::vector<std::unique_ptr<IoThreads>> io_;  // after fake_: their threads end first
};

TEST_F(BindOnContextsTest, ABindIsSentAndAnsweredOnTheContextItWasCalledOn) {
  auto kube = binder();
  for (int round = 0; round < 2; ++round) {  // the second round reuses each context's connection
    std::vector<std::future<Outcome>> results;
    for (std::size_t c = 0; c < io_.size(); ++c) {
      results.push_back(bindFrom(*kube, c, createPod("p-" + std::to_string(round * 10 + c))));
    }
    for (std::size_t c = 0; c < io_.size(); ++c) {
      SCOPED_TRACE(c);
      const Outcome got = results[c].get();
      EXPECT_TRUE(got.status.isOk()) << got.status.reason();
      EXPECT_TRUE(io_[c]->runs(got.thread));
    }
  }
  kube->stop();
}

TEST_F(BindOnContextsTest, BindsFromOtherThreadsGoToTheContextsInTurn) {
  auto kube = binder();
  auto results = bindAll(
      *kube, 6, [&](int i) { return createPod("q-" + std::to_string(i)); },
      [](int) { return "node-2"; });
  std::vector<int> perContext(io_.size(), 0);
  for (auto& result : results) {
    const Outcome got = result.get();
    EXPECT_TRUE(got.status.isOk()) << got.status.reason();
    for (std::size_t c = 0; c < io_.size(); ++c) perContext[c] += io_[c]->runs(got.thread);
  }
  EXPECT_EQ(perContext, std::vector<int>(io_.size(), 2));
  kube->stop();
}

TEST_F(BindOnContextsTest, NoContextMeansNoAsynchronousBinds) {
  KubeBinder kube(client_, KubeBinderOptions{.bindThreads = 0});
  EXPECT_FALSE(kube.bindOn(std::vector<asio::io_context*>{}));
}

// The API server answers every write after 1 s: stop() comes while they are in flight.
class SlowBindOnContextsTest : public BindOnContextsTest {
 protected:
  SlowBindOnContextsTest() : BindOnContextsTest(1'000ms) {}
  std::vector<std::future<Outcome>> bindOnEveryContext(KubeBinder& kube) {
    std::vector<std::future<Outcome>> results;
    for (std::size_t c = 0; c < io_.size(); ++c) {
      for (int i = 0; i < 2; ++i) {
        results.push_back(bindFrom(kube, c, createPod("s-" + std::to_string(c * 10 + i))));
      }
    }
    return results;
  }
};

TEST_F(SlowBindOnContextsTest, StopWaitsForTheBindsInFlightOnEveryContext) {
  auto kube = binder();
  auto results = bindOnEveryContext(*kube);
  kube->stop();
  for (auto& result : results) {
    ASSERT_EQ(result.wait_for(0s), std::future_status::ready);  // done before stop() returned
    EXPECT_TRUE(result.get().status.isOk());
  }
}

TEST_F(SlowBindOnContextsTest, StopFailsTheBindsInFlightOnceTheContextsStopped) {
  auto kube = binder();
  auto results = bindOnEveryContext(*kube);
  for (auto& io : io_) io->stop();  // as the server's stop() does: no answer will be read
  kube->stop();
  expectAllFailedByStop(results);
}

}  // namespace
}  // namespace gpufair::k8s
