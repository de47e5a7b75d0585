// The webhooks over HTTPS: a round trip with a test CA, client certificates required and refused,
// bad certificate files refused at start, and plain HTTP refused off loopback.
#include <gtest/gtest.h>

#include "gpufair/api/server.h"

#include "k8s/fake_apiserver.h"
#include "test_support.h"
#include "tls_test_support.h"

namespace gpufair::api {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using k8s::fake::testPki;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::HttpClient;
using testsupport::parseJson;
using testsupport::PemFiles;
using testsupport::podJson;
using testsupport::TlsClient;

class ServerTlsTest : public ::testing::Test {
 protected:
  ServerOptions tlsOptions(bool requireClientCert) const {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.tls.certFile = pem.path("server.pem");
    options.tls.keyFile = pem.path("server-key.pem");
    if (requireClientCert) options.tls.clientCaFile = pem.path("ca.pem");
    options.readTimeout = 2s;
    options.drainTimeout = 1s;
    return options;
  }
  // Counters are bumped on the io thread just before the connection closes; wait for them.
  static bool eventually(const std::atomic<std::uint64_t>& counter, std::uint64_t value) {
    for (int i = 0; i < 200 && counter.load() < value; ++i) std::this_thread::sleep_for(10ms);
    return counter.load() == value;
  }

  PemFiles pem;
  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST_F(ServerTlsTest, ServesTheWebhooksOverHttps) {
  ExtenderServer server(service, tlsOptions(false));
  ASSERT_TRUE(server.start().isOk());
  EXPECT_TRUE(server.tls());
  TlsClient client(server.port(), false);
  const auto pod = podJson("team-a", "train-2", "uid-train-2", 2);
  const auto reply = client.request("POST", "/filter", filterArgs(pod, {"gpu-node-1"}).dump());
  ASSERT_TRUE(reply.handshakeOk) << reply.error;
  ASSERT_EQ(reply.status, 200) << reply.error;
  EXPECT_EQ(parseJson(reply.body).at("NodeNames"), nlohmann::json::array({"gpu-node-1"}));
  EXPECT_EQ(server.stats().tlsHandshakeFailures, 0u);
}

TEST_F(ServerTlsTest, RequiredClientCertificateIsAccepted) {
  ExtenderServer server(service, tlsOptions(true));
  ASSERT_TRUE(server.start().isOk());
  TlsClient client(server.port(), true);
  const auto reply = client.request("GET", "/healthz");
  EXPECT_EQ(reply.status, 200) << reply.error;
}

TEST_F(ServerTlsTest, ClientWithoutCertificateIsRefused) {
  ExtenderServer server(service, tlsOptions(true));
  ASSERT_TRUE(server.start().isOk());
  TlsClient client(server.port(), false);
  const auto reply = client.request("GET", "/healthz");
  // TLS 1.2 fails the handshake; TLS 1.3 finishes the client's side first and the server's alert
  // ends the first read. Either way no request is served.
  EXPECT_EQ(reply.status, 0) << reply.body;
  EXPECT_TRUE(eventually(server.stats().tlsHandshakeFailures, 1));
}

TEST_F(ServerTlsTest, ClientCertificateFromAnotherCaIsRefused) {
  ServerOptions options = tlsOptions(true);
  options.tls.clientCaFile = pem.path("other-ca.pem");
  ExtenderServer server(service, options);
  ASSERT_TRUE(server.start().isOk());
  TlsClient client(server.port(), true);
  EXPECT_EQ(client.request("GET", "/healthz").status, 0);
  EXPECT_TRUE(eventually(server.stats().tlsHandshakeFailures, 1));
}

TEST_F(ServerTlsTest, PlainHttpToTheTlsPortIsClosed) {
  ExtenderServer server(service, tlsOptions(false));
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  EXPECT_EQ(client.request("GET", "/healthz").status, 0);
  EXPECT_TRUE(eventually(server.stats().tlsHandshakeFailures, 1));
  TlsClient good(server.port(), false);
  EXPECT_EQ(good.request("GET", "/healthz").status, 200) << "the server keeps serving";
}

TEST_F(ServerTlsTest, SilentClientIsCutOffDuringTheHandshake) {
  ServerOptions options = tlsOptions(false);
  options.readTimeout = 200ms;
  ExtenderServer server(service, options);
  ASSERT_TRUE(server.start().isOk());
  HttpClient silent(server.port());  // connects and sends nothing
  EXPECT_TRUE(silent.closedByServer(5s));
  EXPECT_TRUE(eventually(server.stats().tlsHandshakeFailures, 1));
}

struct BadTlsFiles {
  const char* name;
  const char* cert;
  const char* key;
  const char* clientCa;
  const char* error;  // a part of the start() error
};

class ServerTlsFilesTest : public ServerTlsTest,
                           public ::testing::WithParamInterface<BadTlsFiles> {};

TEST_P(ServerTlsFilesTest, StartFailsNamingTheFile) {
  const auto& c = GetParam();
  ServerOptions options = tlsOptions(false);
  options.tls.certFile = *c.cert ? pem.path(c.cert) : "";
  options.tls.keyFile = *c.key ? pem.path(c.key) : "";
  options.tls.clientCaFile = *c.clientCa ? pem.path(c.clientCa) : "";
  ExtenderServer server(service, options);
  const Status status = server.start();
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.reason().find(c.error), std::string::npos) << status.reason();
  EXPECT_EQ(server.port(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    , ServerTlsFilesTest,
    ::testing::Values(
        BadTlsFiles{"MissingCertificate", "nope.pem", "server-key.pem", "", "nope.pem"},
        BadTlsFiles{"MissingKey", "server.pem", "nope-key.pem", "", "nope-key.pem"},
        BadTlsFiles{"KeyOfAnotherCertificate", "server.pem", "client-key.pem", "",
                    "cannot be used with the certificate"},
        BadTlsFiles{"KeyIsNotAKey", "server.pem", "ca.pem", "", "TLS key"},
        BadTlsFiles{"MissingClientCa", "server.pem", "server-key.pem", "nope-ca.pem",
                    "nope-ca.pem"},
        BadTlsFiles{"CertificateWithoutKey", "server.pem", "", "", "needs its private key"},
        BadTlsFiles{"KeyWithoutCertificate", "", "server-key.pem", "", "without a certificate"}),
    [](const auto& info) { return std::string(info.param.name); });

// Plain HTTP only on loopback, unless explicitly allowed; TLS anywhere.
struct ListenCase {
  const char* name;
  const char* listen;
  bool tls;
  bool allowInsecure;
  bool starts;
};

class ServerListenPolicyTest : public ServerTlsTest,
                               public ::testing::WithParamInterface<ListenCase> {};

TEST_P(ServerListenPolicyTest, PlainHttpOnlyOnLoopback) {
  const auto& c = GetParam();
  ServerOptions options = tlsOptions(false);
  options.listen = c.listen;
  if (!c.tls) options.tls = {};
  options.allowInsecureHttp = c.allowInsecure;
  ExtenderServer server(service, options);
  const Status status = server.start();
  EXPECT_EQ(status.isOk(), c.starts) << status.reason();
  if (!c.starts) {
    EXPECT_NE(status.reason().find("refusing to serve plain HTTP on " + std::string(c.listen)),
              std::string::npos)
        << status.reason();
    EXPECT_NE(status.reason().find("--allow-insecure-http"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    , ServerListenPolicyTest,
    ::testing::Values(ListenCase{"PlainOnLoopback", "127.0.0.1:0", false, false, true},
                      ListenCase{"PlainOnLocalhost", "localhost:0", false, false, true},
                      ListenCase{"PlainOnAllInterfaces", "0.0.0.0:0", false, false, false},
                      ListenCase{"PlainOnAllInterfacesShorthand", ":0", false, false, false},
                      ListenCase{"PlainOnAllInterfacesAllowed", "0.0.0.0:0", false, true, true},
                      ListenCase{"TlsOnAllInterfaces", "0.0.0.0:0", true, false, true}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpufair::api
