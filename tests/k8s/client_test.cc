// The real client (KeepAliveTransport) against FakeApiServer: plain HTTP and TLS, tokens, streams.
#include "gpufair/k8s/client.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "k8s/temp_dir.h"

// Designated initializers leave the other members at their defaults on purpose; GCC 12 warns about
// that under -Wextra.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpufair::k8s {
namespace {

using fake::FakeApiServer;
using fake::FakeApiServerOptions;
using fake::testPki;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Millis = std::chrono::milliseconds;

KubeClientPtr clientFor(const ClientConfig& config) {
  auto client = makeKubeClient(config);
  EXPECT_TRUE(client) << client.error();
  return client ? client.value() : nullptr;
}

ApiRequest get(const std::string& path) {
  ApiRequest request;
  request.path = path;
  return request;
}

class PlainClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.start();
    server_.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "train-0"));
  }
  FakeApiServer server_;
};

TEST_F(PlainClientTest, SendsAndReadsObjects) {
  auto client = clientFor({.server = server_.url()});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->server(), server_.url());
  auto response = client->send(get("/api/v1/namespaces/ml/pods/train-0"));
  ASSERT_TRUE(response.ok()) << response.describe();
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.body, HasSubstr(R"("name":"train-0")"));
}

TEST_F(PlainClientTest, NonSuccessKeepsStatusAndBody) {
  auto client = clientFor({.server = server_.url()});
  auto response = client->send(get("/api/v1/namespaces/ml/pods/absent"));
  EXPECT_FALSE(response.ok());
  EXPECT_EQ(response.status, 404);
  EXPECT_THAT(response.body, HasSubstr(R"("reason":"NotFound")"));
  EXPECT_EQ(response.describe(), "HTTP 404: pods \"absent\" not found");
}

TEST_F(PlainClientTest, SendsBodyWithContentType) {
  auto client = clientFor({.server = server_.url()});
  ApiRequest patch;
  patch.method = "PATCH";
  patch.path = "/api/v1/namespaces/ml/pods/train-0";
  patch.contentType = "application/merge-patch+json";
  patch.body = R"({"metadata":{"labels":{"gpufair.io/over-quota":"true"}}})";
  auto response = client->send(patch);
  ASSERT_TRUE(response.ok()) << response.describe();
  auto pod = server_.get("/api/v1/namespaces/ml/pods/train-0");
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  auto logged = server_.requests("PATCH", "/api/v1/namespaces/ml/pods/train-0");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_THAT(logged[0].contentType, HasSubstr("application/merge-patch+json"));
  EXPECT_EQ(logged[0].body, patch.body);
}

TEST_F(PlainClientTest, ServerDownIsATransportError) {
  auto client = clientFor({.server = server_.url()});
  server_.stop();
  auto response = client->send(get("/api/v1/pods"));
  EXPECT_EQ(response.status, 0);
  EXPECT_FALSE(response.transportError.empty());
  EXPECT_FALSE(response.ok());
  EXPECT_THAT(response.describe(), HasSubstr("GET " + server_.url() + "/api/v1/pods"));
}

TEST_F(PlainClientTest, SendGivesUpAtTheTimeout) {
  auto client = clientFor({.server = server_.url()});
  ApiRequest request = get("/api/v1/pods?watch=1");  // never ends
  request.timeout = Millis(300);
  auto started = std::chrono::steady_clock::now();
  auto response = client->send(request);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
  EXPECT_THAT(response.transportError, HasSubstr("no answer within 300 ms"));
}

TEST(ClientConfigTest, RejectsUnusableConfigs) {
  EXPECT_THAT(makeKubeClient({}).error(), HasSubstr("server"));
  EXPECT_THAT(makeKubeClient({.server = "ftp://x"}).error(), HasSubstr("https://"));
  EXPECT_THAT(makeKubeClient({.server = "https://127.0.0.1:1", .caData = "garbage"}).error(),
              HasSubstr("certificate-authority: no PEM certificate"));
  EXPECT_THAT(
      makeKubeClient({.server = "https://127.0.0.1:1", .caFile = "/nonexistent/ca.crt"}).error(),
      HasSubstr("certificate-authority: cannot read /nonexistent/ca.crt"));
  EXPECT_THAT(
      makeKubeClient({.server = "https://127.0.0.1:1", .clientCertData = testPki().clientCertPem})
          .error(),
      HasSubstr("client-key is missing"));
  EXPECT_THAT(makeKubeClient({.server = "https://127.0.0.1:1",
                              .clientCertData = testPki().clientCertPem,
                              .clientKeyData = testPki().serverKeyPem})
                  .error(),
              HasSubstr("client-key does not match"));
  EXPECT_THAT(
      makeKubeClient({.server = "http://127.0.0.1:1", .tokenFile = "/nonexistent/token"}).error(),
      HasSubstr("tokenFile: cannot read /nonexistent/token"));
}

TEST(ClientAuthTest, BearerTokenIsRequired) {
  FakeApiServer server({.tokens = {"secret-1"}});
  server.start();
  auto anonymous = clientFor({.server = server.url()});
  EXPECT_EQ(anonymous->send(get("/api/v1/nodes")).status, 401);
  auto wrong = clientFor({.server = server.url(), .token = "guess"});
  EXPECT_EQ(wrong->send(get("/api/v1/nodes")).status, 401);
  auto right = clientFor({.server = server.url(), .token = "secret-1"});
  auto response = right->send(get("/api/v1/nodes"));
  EXPECT_EQ(response.status, 200) << response.describe();
  EXPECT_EQ(server.requests().back().token, "secret-1");
}

TEST(ClientAuthTest, TokenFileRotationIsPickedUp) {
  TempDir dir;
  auto tokenFile = dir.write("token", "old-token\n");
  FakeApiServer server({.tokens = {"old-token"}});
  server.start();
  auto client = clientFor({.server = server.url(), .tokenFile = tokenFile});
  ASSERT_EQ(client->send(get("/api/v1/nodes")).status, 200);
  // The kubelet rotates the token: the server stops accepting the old one at once.
  dir.write("token", "new-token\n");
  server.setTokens({"new-token"});
  auto response = client->send(get("/api/v1/nodes"));
  EXPECT_EQ(response.status, 200) << response.describe();
  EXPECT_EQ(server.requests().back().token, "new-token");
  for (const auto& logged : server.requests()) {
    if (logged.status == 200) {
      EXPECT_THAT(logged.token, ::testing::EndsWith("-token"));
    }
  }
}

class TlsClientTest : public ::testing::Test {
 protected:
  void start(FakeApiServerOptions options) {
    options.tls = true;
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    server_->start();
    server_->create("/api/v1/nodes", fake::makeNode("gpu-1"));
  }
  ApiResponse fetch(ClientConfig config) {
    config.server = server_->url();
    auto client = makeKubeClient(config);
    if (!client) return {0, "", client.error()};
    return client.value()->send(get("/api/v1/nodes/gpu-1"));
  }
  std::unique_ptr<FakeApiServer> server_;
  TempDir dir_;
};

TEST_F(TlsClientTest, TrustsCaData) {
  start({});
  auto response = fetch({.caData = testPki().caPem});
  EXPECT_EQ(response.status, 200) << response.describe();
  EXPECT_TRUE(server_->url().starts_with("https://"));
}

TEST_F(TlsClientTest, TrustsCaFileWithSeveralCertificates) {
  start({});
  auto bundle = dir_.write("ca.crt", testPki().otherCaPem + testPki().caPem);
  auto response = fetch({.caFile = bundle});
  EXPECT_EQ(response.status, 200) << response.describe();
}

TEST_F(TlsClientTest, RejectsAServerSignedByAnotherCa) {
  start({});
  auto response = fetch({.caData = testPki().otherCaPem});
  EXPECT_EQ(response.status, 0);
  EXPECT_FALSE(response.transportError.empty());
  auto insecure = fetch({.caData = testPki().otherCaPem, .insecureSkipTlsVerify = true});
  EXPECT_EQ(insecure.status, 200) << insecure.describe();
}

TEST_F(TlsClientTest, ClientCertificateRequired) {
  start({.requireClientCert = true, .tokens = {"only-for-token-users"}});
  auto without = fetch({.caData = testPki().caPem});
  EXPECT_EQ(without.status, 0) << "the handshake must fail without a client certificate";
  auto inline_ = fetch({.caData = testPki().caPem,
                        .clientCertData = testPki().clientCertPem,
                        .clientKeyData = testPki().clientKeyPem});
  EXPECT_EQ(inline_.status, 200) << inline_.describe();
  auto files = fetch({.caFile = dir_.write("ca.crt", testPki().caPem),
                      .clientCertFile = dir_.write("client.crt", testPki().clientCertPem),
                      .clientKeyFile = dir_.write("client.key", testPki().clientKeyPem)});
  EXPECT_EQ(files.status, 200) << files.describe();
}

TEST_F(TlsClientTest, KubeconfigEndToEnd) {
  start({.tokens = {"kc-token"}});
  auto kubeconfig = dir_.write("config", R"(apiVersion: v1
kind: Config
current-context: fake
clusters: [{name: fake, cluster: {server: ")" +
                                             server_->url() +
                                             R"(", certificate-authority: ca.crt}}]
users: [{name: me, user: {token: kc-token}}]
contexts: [{name: fake, context: {cluster: fake, user: me, namespace: ml}}]
)");
  dir_.write("ca.crt", testPki().caPem);
  auto config = loadKubeconfig(kubeconfig);
  ASSERT_TRUE(config) << config.error();
  auto client = clientFor(config.value());
  auto response = client->send(get("/api/v1/nodes/gpu-1"));
  EXPECT_EQ(response.status, 200) << response.describe();
  EXPECT_EQ(config->ns, "ml");
}

// Each stream case over plain HTTP and over TLS: the two read a watch's body differently (see
// keepalive_stream.cc).
class StreamTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    FakeApiServerOptions options;
    options.tls = GetParam();
    server_ = std::make_unique<FakeApiServer>(options);
    server_->start();
    server_->create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "train-0"));
    ClientConfig config;
    config.server = server_->url();
    if (GetParam()) config.caData = testPki().caPem;
    client_ = clientFor(config);
  }
  std::unique_ptr<FakeApiServer> server_;
  KubeClientPtr client_;
  std::atomic<bool> cancel_{false};
};

INSTANTIATE_TEST_SUITE_P(PlainAndTls, StreamTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tls" : "Plain";
                         });

TEST_P(StreamTest, DeliversLinesUntilTheHandlerStops) {
  server_->create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "train-1"));
  std::vector<std::string> lines;
  int status = 0;
  ApiRequest request = get("/api/v1/namespaces/ml/pods?watch=1");
  request.onResponse = [&](int s) { status = s; };
  auto response = client_->stream(
      request,
      [&](std::string_view line) {
        lines.emplace_back(line);
        return lines.size() < 2;
      },
      cancel_);
  EXPECT_TRUE(response.ok()) << response.describe();
  EXPECT_EQ(status, 200);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr(R"({"type":"ADDED","object":{)"));
  EXPECT_THAT(lines[1], HasSubstr(R"("name":"train-1")"));
}

TEST_P(StreamTest, LiveEventsArriveAsTheyHappen) {
  auto rv = std::to_string(server_->resourceVersion());
  std::vector<std::string> lines;
  std::thread writer([&] {
    fake::waitUntil([&] { return server_->activeWatches() == 1; });
    server_->create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "late"));
  });
  auto response = client_->stream(
      get("/api/v1/pods?watch=1&resourceVersion=" + rv),
      [&](std::string_view line) {
        lines.emplace_back(line);
        return false;
      },
      cancel_);
  writer.join();
  EXPECT_TRUE(response.ok()) << response.describe();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr(R"("name":"late")"));
}

TEST_P(StreamTest, CancelStopsPromptly) {
  // Cancel once the client has the 200 (the server counts the watch before that: cancelling then
  // would end the request before it has a status).
  std::atomic<bool> answered{false};
  ApiRequest request = get("/api/v1/pods?watch=1&resourceVersion=1");
  request.onResponse = [&](int) { answered = true; };
  std::thread canceller([&] {
    fake::waitUntil([&] { return answered.load(); });
    cancel_ = true;
  });
  auto started = std::chrono::steady_clock::now();
  auto response = client_->stream(
      request, [](std::string_view) { return true; }, cancel_);
  canceller.join();
  auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  EXPECT_EQ(response.status, 200);
  EXPECT_TRUE(fake::waitUntil([&] { return server_->activeWatches() == 0; }));
}

TEST_P(StreamTest, NonSuccessHasBodyAndNoLines) {
  server_->addFault({.method = "GET", .pathPrefix = "/api/v1/pods", .status = 403});
  int lines = 0;
  auto response = client_->stream(
      get("/api/v1/pods?watch=1"),
      [&](std::string_view) {
        ++lines;
        return true;
      },
      cancel_);
  EXPECT_EQ(response.status, 403);
  EXPECT_THAT(response.body, HasSubstr("injected failure"));
  EXPECT_EQ(lines, 0);
}

TEST_P(StreamTest, CleanEndAtTimeoutSeconds) {
  auto rv = std::to_string(server_->resourceVersion());
  auto response = client_->stream(
      get("/api/v1/pods?watch=1&timeoutSeconds=1&resourceVersion=" + rv),
      [](std::string_view) { return true; }, cancel_);
  EXPECT_TRUE(response.ok()) << response.describe();
  EXPECT_THAT(response.transportError, IsEmpty());
}

TEST_P(StreamTest, DroppedStreamIsATransportError) {
  std::thread dropper([&] {
    fake::waitUntil([&] { return server_->activeWatches() == 1; });
    server_->dropWatches();
  });
  auto response = client_->stream(
      get("/api/v1/pods?watch=1"), [](std::string_view) { return true; }, cancel_);
  dropper.join();
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.transportError, HasSubstr("stream broken"));
}

TEST(StreamTlsTest, StreamsOverTls) {
  FakeApiServer server({.tls = true});
  server.start();
  server.create("/api/v1/nodes", fake::makeNode("gpu-1"));
  auto client = clientFor({.server = server.url(), .caData = testPki().caPem});
  std::atomic<bool> cancel{false};
  std::string first;
  auto response = client->stream(
      get("/api/v1/nodes?watch=true"),
      [&](std::string_view line) {
        first = line;
        return false;
      },
      cancel);
  EXPECT_TRUE(response.ok()) << response.describe();
  EXPECT_THAT(first, HasSubstr(R"("name":"gpu-1")"));
}

}  // namespace
}  // namespace gpufair::k8s
