// KeepAliveTransport (the path of every one-shot request: Bindings, label and annotation patches,
// Events, Leases, LISTs) against FakeApiServer: connections are kept and reused, a connection the
// server closed is replaced, the API server's refusals (409, 422, 500) come back as answers with
// their Status body, and TLS with client certificates reuses its connection too.
#include "keepalive_transport.h"

#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/api.h"

#include "k8s/fake_apiserver.h"

// Designated initializers leave the other members at their defaults on purpose; GCC 12 warns about
// that under -Wextra.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpufair::k8s {
namespace {

using detail::KeepAliveTransport;
using fake::FakeApiServer;
using fake::testPki;
using ::testing::HasSubstr;

ApiRequest binding(const std::string& pod, const std::string& node) {
  ApiRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/ml/pods/" + pod + "/binding";
  request.body = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")" + pod +
                 R"(","namespace":"ml"},"target":{"apiVersion":"v1","kind":"Node","name":")" +
                 node + R"("}})";
  return request;
}

ApiRequest labelPatch(const std::string& pod, const std::string& body) {
  ApiRequest request;
  request.method = "PATCH";
  request.path = "/api/v1/namespaces/ml/pods/" + pod;
  request.contentType = "application/merge-patch+json";
  request.body = body;
  return request;
}

class KeepAliveTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.start();
    server_.create("/api/v1/nodes", fake::makeNode("gpu-1"));
    for (int i = 0; i < kPods; ++i) {
      server_.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-" + std::to_string(i)));
    }
  }
  static constexpr int kPods = 20;
  FakeApiServer server_;
};

TEST_F(KeepAliveTransportTest, BindingsAndPatchesShareOneConnection) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  for (int i = 0; i < kPods; ++i) {
    const std::string pod = "p-" + std::to_string(i);
    auto bound = transport.send(binding(pod, "gpu-1"), "");
    ASSERT_EQ(bound.status, 201) << bound.transportError << bound.body;
    auto labelled = transport.send(
        labelPatch(pod, R"({"metadata":{"labels":{"gpufair.io/over-quota":"true"}}})"), "");
    ASSERT_EQ(labelled.status, 200) << labelled.transportError << labelled.body;
  }
  EXPECT_EQ(transport.connectionsOpened(), 1u);
  auto pod = server_.get("/api/v1/namespaces/ml/pods/p-7");
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["spec"]["nodeName"], "gpu-1");
  EXPECT_EQ((*pod)["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  const auto logged = server_.requests("PATCH", "/api/v1/namespaces/ml/pods/p-7");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_THAT(logged[0].contentType, HasSubstr("application/merge-patch+json"));
}

TEST_F(KeepAliveTransportTest, RefusalsAreAnswersAndTheConnectionStays) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  ASSERT_EQ(transport.send(binding("p-0", "gpu-1"), "").status, 201);

  auto again = transport.send(binding("p-0", "gpu-1"), "");  // already bound
  EXPECT_EQ(again.status, 409);
  EXPECT_THAT(again.body, HasSubstr(R"("reason":"Conflict")"));
  EXPECT_TRUE(again.transportError.empty());

  auto malformed = transport.send(labelPatch("p-1", "not json"), "");
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  auto invalid = transport.send(
      labelPatch("p-1", R"({"metadata":{"labels":{"gpufair.io/bad key":"x"}}})"), "");
  EXPECT_EQ(invalid.status, 422) << invalid.body;
  EXPECT_THAT(apiError(invalid).describe(), HasSubstr("HTTP 422"));

  server_.addFault({.method = "POST", .pathPrefix = "/api/v1/namespaces/ml/pods/p-2/binding"});
  auto failed = transport.send(binding("p-2", "gpu-1"), "");
  EXPECT_EQ(failed.status, 500);
  EXPECT_FALSE(server_.get("/api/v1/namespaces/ml/pods/p-2")->at("spec").contains("nodeName"));

  EXPECT_EQ(transport.send(binding("p-2", "gpu-1"), "").status, 201);
  EXPECT_EQ(transport.connectionsOpened(), 1u);
}

TEST_F(KeepAliveTransportTest, AConnectionTheServerClosedIsReplaced) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  ASSERT_EQ(transport.send(binding("p-0", "gpu-1"), "").status, 201);
  server_.stop();  // closes the pooled connection
  server_.start();
  auto bound = transport.send(binding("p-1", "gpu-1"), "");
  EXPECT_EQ(bound.status, 201) << bound.transportError;
  EXPECT_EQ(transport.connectionsOpened(), 2u);
  EXPECT_EQ(server_.requests("POST", "/api/v1/namespaces/ml/pods/p-1/binding").size(), 1u);
}

TEST_F(KeepAliveTransportTest, ServerDownIsATransportError) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  server_.stop();
  auto response = transport.send(binding("p-0", "gpu-1"), "");
  EXPECT_EQ(response.status, 0);
  EXPECT_THAT(response.transportError, HasSubstr("cannot connect"));
}

TEST_F(KeepAliveTransportTest, AServerThatClosesWithoutAnswerIsATransportError) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  server_.addFault({.method = "POST", .pathPrefix = "/api/v1/namespaces", .status = 0});
  auto response = transport.send(binding("p-0", "gpu-1"), "");
  EXPECT_EQ(response.status, 0);
  EXPECT_FALSE(response.transportError.empty());
  // A new connection that fails is not sent again: the Binding went out once.
  EXPECT_EQ(server_.requests("POST", "/api/v1/namespaces/ml/pods/p-0/binding").size(), 1u);
  EXPECT_EQ(transport.send(binding("p-0", "gpu-1"), "").status, 201);
}

TEST_F(KeepAliveTransportTest, ConcurrentCallersEachTakeAConnection) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kPods; i += kThreads) {
        const std::string pod = "p-" + std::to_string(i);
        ok += transport.send(binding(pod, "gpu-1"), "").status == 201 ? 1 : 0;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kPods);
  EXPECT_LE(transport.connectionsOpened(), static_cast<std::size_t>(kThreads));
}

TEST(KeepAliveTransportTls, ClientCertificateAndTokenOverOneConnection) {
  FakeApiServer server({.tls = true, .requireClientCert = true, .tokens = {"t-1"}});
  server.start();
  server.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-0"));
  ClientConfig config{.server = server.url(),
                      .caData = testPki().caPem,
                      .clientCertData = testPki().clientCertPem,
                      .clientKeyData = testPki().clientKeyPem};
  auto tls = TlsMaterial::load(config);
  ASSERT_TRUE(tls) << tls.error();
  KeepAliveTransport transport(server.url(),
                               std::make_shared<const TlsMaterial>(std::move(tls).value()), true);
  ASSERT_EQ(transport.send(binding("p-0", "gpu-1"), "Bearer t-1").status, 201);
  for (int i = 0; i < 5; ++i) {
    auto response = transport.send(
        labelPatch("p-0", R"({"metadata":{"labels":{"n":")" + std::to_string(i) + R"("}}})"),
        "Bearer t-1");
    ASSERT_EQ(response.status, 200) << response.transportError << response.body;
  }
  EXPECT_EQ(transport.connectionsOpened(), 1u);
  EXPECT_EQ(server.requests().back().token, "t-1");
}

TEST(KeepAliveTransportTls, AServerOfAnotherCaOrNameIsRefused) {
  FakeApiServer server({.tls = true});
  server.start();
  ClientConfig config{.server = server.url(), .caData = testPki().otherCaPem};
  auto other = TlsMaterial::load(config);
  ASSERT_TRUE(other) << other.error();
  ApiRequest get;
  get.path = "/api/v1/nodes";
  KeepAliveTransport wrongCa(server.url(),
                             std::make_shared<const TlsMaterial>(std::move(other).value()), true);
  auto refused = wrongCa.send(get, "");
  EXPECT_EQ(refused.status, 0);
  EXPECT_THAT(refused.transportError, HasSubstr("TLS handshake failed"));

  config.caData = testPki().caPem;
  auto right = TlsMaterial::load(config);
  ASSERT_TRUE(right) << right.error();
  auto material = std::make_shared<const TlsMaterial>(std::move(right).value());
  // The certificate names 127.0.0.1 and localhost; "localhost" is verified by name.
  const std::string byName = "https://localhost:" + std::to_string(server.port());
  EXPECT_EQ(KeepAliveTransport(byName, material, true).send(get, "").status, 200);
}

}  // namespace
}  // namespace gpufair::k8s
