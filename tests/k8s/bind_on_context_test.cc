// KubeBinder::bindAsync after bindOn(io_context): the Binding (a fractional pod's gpu-index on it)
// is sent asynchronously on the context's threads (no bind thread), against the fake API server
// answering every write late as a real kube-apiserver does: each bind gets its own outcome exactly
// once, on an io thread; the io thread serves other work meanwhile; errors, timeouts, a stale
// pooled connection, TLS with a client certificate and a token, and stop() with binds in flight.
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
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
using namespace std::chrono_literals;
namespace asio = boost::asio;
using testsupport::bindAll;
using testsupport::expectAllFailedByStop;
using testsupport::IoThreads;
using testsupport::Outcome;
using testsupport::outcome;

class BindOnContextTest : public ::testing::Test {
 protected:
  explicit BindOnContextTest(fake::FakeApiServerOptions options = {.writeLatency = 20ms})
      : fake_(std::move(options)) {
    fake_.start();
  }
  void SetUp() override { client_ = fake::clientOf(fake_); }
  policy::Pod createPod(const std::string& name, const std::string& node = "") {
    auto created =
        fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", name, node));
    return MakePod("team-a", name).uid(created["metadata"]["uid"].get<std::string>()).gpus(1);
  }
  std::string nodeOf(const std::string& name) {
    const auto pod = fake_.get("/api/v1/namespaces/team-a/pods/" + name);
    if (!pod || !(*pod)["spec"].contains("nodeName")) return "";
    return (*pod)["spec"]["nodeName"].get<std::string>();
  }
  // A binder sending on io_'s threads; its request timeout `timeout`.
  std::unique_ptr<KubeBinder> binder(std::chrono::milliseconds timeout = 5'000ms) {
    KubeBinderOptions options;
    options.requestTimeout = timeout;
    options.bindThreads = 0;  // a bind that does not go asynchronously would run on the caller
    auto made = std::make_unique<KubeBinder>(client_, options);
    EXPECT_TRUE(made->bindOn(io_.context()));
    return made;
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
  IoThreads io_{2};  // after fake_: its threads end first
};

TEST_F(BindOnContextTest, TheBindingIsSentAndAnsweredOnAnIoThread) {
  auto kube = binder();
  auto [done, result] = outcome();
  kube->bindAsync(createPod("train-1"), "node-3", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_TRUE(got.status.isOk()) << got.status.reason();
  EXPECT_TRUE(io_.runs(got.thread));
  EXPECT_EQ(nodeOf("train-1"), "node-3");
}

TEST_F(BindOnContextTest, ManyBindsAtOnceEachGetTheirOwnOutcome) {
  auto kube = binder();
  // Every fourth pod is bound already: the API server refuses its Binding (409).
  auto results = bindAll(
      *kube, 16,
      [&](int i) { return createPod("p-" + std::to_string(i), i % 4 == 3 ? "elsewhere" : ""); },
      [](int i) { return "node-" + std::to_string(i % 5); });
  for (int i = 0; i < 16; ++i) {
    SCOPED_TRACE(i);
    const Outcome got = results[i].get();
    EXPECT_TRUE(io_.runs(got.thread));
    if (i % 4 == 3) {
      EXPECT_EQ(got.status.code(), Code::kError);
      EXPECT_THAT(got.status.reason(), HasSubstr("p-" + std::to_string(i)));
      EXPECT_EQ(nodeOf("p-" + std::to_string(i)), "elsewhere");
    } else {
      EXPECT_TRUE(got.status.isOk()) << got.status.reason();
      EXPECT_EQ(nodeOf("p-" + std::to_string(i)), "node-" + std::to_string(i % 5));
    }
  }
}

TEST_F(BindOnContextTest, AFractionalPodsGpuRidesOnItsBinding) {
  auto kube = binder();
  policy::Pod notebook = createPod("notebook");
  notebook.setGpuShare(500);
  notebook.gpuIndex = 1;
  auto [done, result] = outcome();
  kube->bindAsync(notebook, "node-3", false, std::move(done));
  ASSERT_TRUE(result.get().status.isOk());
  const auto stored = fake_.get("/api/v1/namespaces/team-a/pods/notebook");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["metadata"]["annotations"]["gpufair.io/gpu-index"], "1");
  EXPECT_EQ((*stored)["spec"]["nodeName"], "node-3");
  const auto writes = fake_.requests("", "/api/v1/namespaces/team-a/pods/notebook");
  ASSERT_EQ(writes.size(), 1u) << "one Binding, no PATCH";
  EXPECT_EQ(writes[0].path, "/api/v1/namespaces/team-a/pods/notebook/binding");
}

TEST_F(BindOnContextTest, ARefusedBindingOfAFractionalPodLeavesNoAnnotation) {
  auto kube = binder();
  fake_.addFault({.method = "POST", .pathPrefix = "/api/v1/namespaces/team-a/pods/notebook"});
  policy::Pod notebook = createPod("notebook");
  notebook.setGpuShare(500);
  notebook.gpuIndex = 0;
  auto [done, result] = outcome();
  kube->bindAsync(notebook, "node-3", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_EQ(got.status.code(), Code::kError);
  EXPECT_THAT(got.status.reason(), HasSubstr("binding team-a/notebook to node-3"));
  const auto stored = fake_.get("/api/v1/namespaces/team-a/pods/notebook");
  ASSERT_TRUE(stored.has_value());
  EXPECT_FALSE((*stored)["metadata"].contains("annotations") &&
               (*stored)["metadata"]["annotations"].contains("gpufair.io/gpu-index"));
  EXPECT_EQ(nodeOf("notebook"), "");
}

TEST_F(BindOnContextTest, AnOverQuotaPodIsLabelledAfterItsBinding) {
  auto kube = binder();
  auto [done, result] = outcome();
  kube->bindAsync(createPod("borrower"), "node-1", true, std::move(done));
  ASSERT_TRUE(result.get().status.isOk());
  kube->flushLabels();
  const auto stored = fake_.get("/api/v1/namespaces/team-a/pods/borrower");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["metadata"]["labels"]["gpufair.io/over-quota"], "true");
}

TEST_F(BindOnContextTest, AStalePooledConnectionIsReplacedAndTheBindingSentOnce) {
  auto kube = binder();
  auto [first, firstResult] = outcome();
  kube->bindAsync(createPod("p-0"), "node-1", false, std::move(first));
  ASSERT_TRUE(firstResult.get().status.isOk());
  fake_.stop();  // closes the pooled connection
  fake_.start();
  auto [second, secondResult] = outcome();
  kube->bindAsync(createPod("p-1"), "node-1", false, std::move(second));
  const Outcome got = secondResult.get();
  EXPECT_TRUE(got.status.isOk()) << got.status.reason();
  EXPECT_EQ(nodeOf("p-1"), "node-1");
  EXPECT_EQ(fake_.requests("POST", "/api/v1/namespaces/team-a/pods/p-1/binding").size(), 1u);
}

TEST_F(BindOnContextTest, TheIoThreadServesOtherWorkWhileABindingWaits) {
  // One io thread: a bind holding it would run the posted work only after the Binding's answer.
  IoThreads one(1);
  KubeBinderOptions options;
  options.bindThreads = 0;
  KubeBinder kube(client_, options);
  ASSERT_TRUE(kube.bindOn(one.context()));
  fake_.clearRequests();
  auto [done, outcomeOfBind] = outcome();
  std::future<Outcome>& result = outcomeOfBind;  // a lambda may not capture a structured binding
  kube.bindAsync(createPod("slow"), "node-1", false, std::move(done));
  // The work posted after the bind runs before its answer is read: the io thread does not wait
  // for the API server (which holds the write 20 ms).
  std::promise<bool> bindingAnswered;
  auto served = bindingAnswered.get_future();
  asio::post(one.context(),
             [&] { bindingAnswered.set_value(result.wait_for(0s) == std::future_status::ready); });
  EXPECT_FALSE(served.get());
  EXPECT_TRUE(result.get().status.isOk());
  one.stop();
  kube.stop();
}

// The API server answers every write after 1 s.
class SlowBindOnContextTest : public BindOnContextTest {
 protected:
  SlowBindOnContextTest() : BindOnContextTest({.writeLatency = 1'000ms}) {}
};

TEST_F(SlowBindOnContextTest, ABindingNotAnsweredWithinTheRequestTimeoutFails) {
  auto kube = binder(100ms);
  auto [done, result] = outcome();
  kube->bindAsync(createPod("train-1"), "node-3", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_EQ(got.status.code(), Code::kError);
  EXPECT_THAT(got.status.reason(), HasSubstr("no answer within 100 ms"));
  EXPECT_TRUE(io_.runs(got.thread));
}

TEST_F(SlowBindOnContextTest, StopWaitsForTheBindsInFlightWhileTheContextRuns) {
  auto kube = binder();
  auto results = bindAll(
      *kube, 3, [&](int i) { return createPod("q-" + std::to_string(i)); },
      [](int) { return "node-1"; });
  kube->stop();
  for (auto& result : results) {
    ASSERT_EQ(result.wait_for(0s), std::future_status::ready);  // done before stop() returned
    EXPECT_TRUE(result.get().status.isOk());
  }
  // After stop(): on the caller's thread, synchronously.
  auto [done, late] = outcome();
  kube->bindAsync(createPod("late"), "node-2", false, std::move(done));
  ASSERT_EQ(late.wait_for(0s), std::future_status::ready);
  const Outcome got = late.get();
  EXPECT_TRUE(got.status.isOk()) << got.status.reason();
  EXPECT_EQ(got.thread, std::this_thread::get_id());
}

TEST_F(SlowBindOnContextTest, StopFailsTheBindsInFlightOnceTheContextStopped) {
  auto kube = binder();
  auto results = bindAll(
      *kube, 3, [&](int i) { return createPod("q-" + std::to_string(i)); },
      [](int) { return "node-1"; });
  io_.stop();  // as the server's stop() does: the answers will never be read
  kube->stop();
  expectAllFailedByStop(results);
}

TEST(BindOnContextTls, ClientCertificateAndToken) {
  fake::FakeApiServer server({.tls = true, .requireClientCert = true, .tokens = {"t-1"}});
  server.start();
  auto created = server.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-0"));
  ClientConfig config{.server = server.url(),
                      .caData = fake::testPki().caPem,
                      .clientCertData = fake::testPki().clientCertPem,
                      .clientKeyData = fake::testPki().clientKeyPem,
                      .token = "t-1"};
  auto client = makeKubeClient(config);
  ASSERT_TRUE(client) << client.error();
  IoThreads io(2);
  KubeBinder kube(*client, {.bindThreads = 0});
  ASSERT_TRUE(kube.bindOn(io.context()));
  for (const char* node : {"gpu-1", "gpu-2"}) {
    auto [done, result] = outcome();
    kube.bindAsync(MakePod("ml", "p-0").uid(created["metadata"]["uid"].get<std::string>()).gpus(1),
                   node, false, std::move(done));
    const Outcome got = result.get();
    if (std::string(node) == "gpu-1") {
      EXPECT_TRUE(got.status.isOk()) << got.status.reason();
    } else {  // the same connection, kept alive: the API server's refusal comes back
      EXPECT_THAT(got.status.reason(), HasSubstr("already assigned"));
    }
  }
  EXPECT_EQ(server.requests().back().token, "t-1");
  const auto pod = server.get("/api/v1/namespaces/ml/pods/p-0");
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["spec"]["nodeName"], "gpu-1");
  kube.stop();
}

TEST(BindOnContextTls, AServerOfAnotherCaIsRefused) {
  fake::FakeApiServer server({.tls = true});
  server.start();
  server.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-0"));
  auto client = makeKubeClient({.server = server.url(), .caData = fake::testPki().otherCaPem});
  ASSERT_TRUE(client) << client.error();
  IoThreads io(1);
  KubeBinder kube(*client, {.bindThreads = 0});
  ASSERT_TRUE(kube.bindOn(io.context()));
  auto [done, result] = outcome();
  kube.bindAsync(MakePod("ml", "p-0").gpus(1), "gpu-1", false, std::move(done));
  const Outcome got = result.get();
  EXPECT_EQ(got.status.code(), Code::kError);
  EXPECT_THAT(got.status.reason(), HasSubstr("TLS handshake failed"));
  EXPECT_TRUE(server.requests("POST", "").empty());
  kube.stop();
}

}  // namespace
}  // namespace gpufair::k8s
