// KeepAliveTransport's TLS context: built once and shared by every connection while the CA bundle
// and client certificate stay the same (building one parses every CA certificate: milliseconds per
// connection before), and built again from the files as they are when a new connection finds them
// changed (a rotated CA bundle or client certificate takes effect without a restart).
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client_auth.h"
#include "k8s/fake_apiserver.h"
#include "k8s/temp_dir.h"
#include "keepalive_transport.h"

namespace gpufair::k8s {
namespace {

using detail::KeepAliveTransport;
using fake::FakeApiServer;
using fake::testPki;
using ::testing::HasSubstr;

class TlsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    write("ca.crt", testPki().caPem);
    write("client.crt", testPki().clientCertPem);
    write("client.key", testPki().clientKeyPem);
  }

  void write(const std::string& name, const std::string& text) { dir_.write(name, text); }
  std::shared_ptr<const TlsMaterial> material() {
    ClientConfig config;
    config.caFile = dir_.path("ca.crt").string();
    config.clientCertFile = dir_.path("client.crt").string();
    config.clientKeyFile = dir_.path("client.key").string();
    auto loaded = TlsMaterial::load(config);
    EXPECT_TRUE(loaded) << loaded.error();
    return std::make_shared<const TlsMaterial>(std::move(loaded).value());
  }

  TempDir dir_;
};

fake::FakeApiServerOptions mutualTls() {
  fake::FakeApiServerOptions options;
  options.tls = true;
  options.requireClientCert = true;
  return options;
}

ApiRequest nodes() {
  ApiRequest get;
  get.path = "/api/v1/nodes";
  return get;
}

// A request on a connection of its own (stream() never takes a pooled one): the TLS context is
// asked for again.
ApiResponse onNewConnection(KeepAliveTransport& transport) {
  std::atomic<bool> cancel{false};
  return transport.stream(
      nodes(), "", [](std::string_view) { return true; }, cancel);
}

TEST_F(TlsFiles, OneContextServesEveryConnectionWhileTheFilesStay) {
  FakeApiServer server(mutualTls());
  server.start();
  KeepAliveTransport transport(server.url(), material(), true);
  constexpr int kThreads = 4;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) ok += transport.send(nodes(), "").status == 200 ? 1 : 0;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int i = 0; i < 3; ++i) {
    const ApiResponse streamed = onNewConnection(transport);
    EXPECT_TRUE(streamed.ok()) << streamed.describe();
  }
  EXPECT_EQ(ok.load(), kThreads * 5);
  EXPECT_GE(transport.connectionsOpened(), 4u);  // at least the three streams and one pooled
  EXPECT_EQ(transport.tlsContextsBuilt(), 1u);
}

TEST_F(TlsFiles, ARotatedCaBundleOrClientCertificateTakesEffectOnTheNextConnection) {
  FakeApiServer server(mutualTls());
  server.start();
  KeepAliveTransport transport(server.url(), material(), true);
  ASSERT_TRUE(onNewConnection(transport).ok());

  write("ca.crt", testPki().otherCaPem);  // the server's certificate is no longer trusted
  const ApiResponse refused = onNewConnection(transport);
  EXPECT_EQ(refused.status, 0);
  EXPECT_THAT(refused.transportError, HasSubstr("TLS handshake failed"));
  EXPECT_EQ(transport.tlsContextsBuilt(), 2u);

  write("ca.crt", testPki().caPem);
  const ApiResponse trusted = onNewConnection(transport);
  EXPECT_TRUE(trusted.ok()) << trusted.describe();
  EXPECT_EQ(transport.tlsContextsBuilt(), 3u);

  // A client certificate rotated to one that expired an hour ago: the server refuses it.
  fake::TestCertRequest lapsed;
  lapsed.commonName = "test-user";
  lapsed.client = true;
  lapsed.notBeforeSeconds = -7200;
  lapsed.notAfterSeconds = -3600;
  const fake::TestCert expired = fake::issueTestCert(lapsed);
  write("client.crt", expired.certPem);
  write("client.key", expired.keyPem);
  EXPECT_EQ(onNewConnection(transport).status, 0);
  write("client.crt", testPki().clientCertPem);
  write("client.key", testPki().clientKeyPem);
  EXPECT_TRUE(onNewConnection(transport).ok());
  EXPECT_EQ(transport.tlsContextsBuilt(), 5u);
  EXPECT_EQ(server.requests("GET", "/api/v1/nodes").size(), 3u);  // the refused never got in
}

TEST_F(TlsFiles, AnUnreadableFileFailsTheConnectionAndNamesTheField) {
  FakeApiServer server(mutualTls());
  server.start();
  KeepAliveTransport transport(server.url(), material(), true);
  ASSERT_TRUE(onNewConnection(transport).ok());
  std::filesystem::remove(dir_.path("ca.crt"));
  const ApiResponse failed = onNewConnection(transport);
  EXPECT_EQ(failed.status, 0);
  EXPECT_THAT(failed.transportError, HasSubstr("certificate-authority: cannot read"));
  write("ca.crt", testPki().caPem);
  EXPECT_TRUE(onNewConnection(transport).ok());
  EXPECT_EQ(transport.tlsContextsBuilt(), 1u) << "the same files as before: the same context";
}

}  // namespace
}  // namespace gpufair::k8s
