// The webhooks over HTTPS: a round trip with a test CA, client certificates required and refused,
// bad certificate files refused at start, and plain HTTP refused off loopback.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <boost/asio/ssl.hpp>
#include <gtest/gtest.h>

#include "gpufair/api/server.h"

#include "k8s/fake_apiserver.h"
#include "test_support.h"

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
using testsupport::podJson;

// PEM files of the test PKI in a temporary directory, removed afterwards.
class PemFiles {
 public:
  PemFiles() : dir_(std::filesystem::temp_directory_path() / tempName()) {
    std::filesystem::create_directories(dir_);
    write("ca.pem", testPki().caPem);
    write("server.pem", testPki().serverCertPem);
    write("server-key.pem", testPki().serverKeyPem);
    write("client-key.pem", testPki().clientKeyPem);
    write("other-ca.pem", testPki().otherCaPem);
  }
  ~PemFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  static std::string tempName() {
    static int counter = 0;
    return "gpufair-tls-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

struct TlsReply {
  bool handshakeOk = false;
  int status = 0;  // 0: no answer (the error is in `error`)
  std::string body;
  std::string error;
};

// A blocking HTTPS client: verifies the server against the test CA and, when asked, presents the
// test client certificate. Every step has a deadline.
class TlsClient {
 public:
  TlsClient(std::uint16_t port, bool presentClientCert) : context_(asio::ssl::context::tls_client) {
    context_.add_certificate_authority(asio::buffer(testPki().caPem));
    context_.set_verify_mode(asio::ssl::verify_peer);
    if (presentClientCert) {
      context_.use_certificate_chain(asio::buffer(testPki().clientCertPem));
      context_.use_private_key(asio::buffer(testPki().clientKeyPem), asio::ssl::context::pem);
    }
    stream_ = std::make_unique<Stream>(ioc_, context_);
    stream_->next_layer().connect({asio::ip::make_address("127.0.0.1"), port});
  }

  TlsReply request(const std::string& method, const std::string& target,
                   const std::string& body = "") {
    TlsReply reply;
    auto ec = runFor([&](auto done) {
      stream_->async_handshake(asio::ssl::stream_base::client,
                               [done](boost::system::error_code e) { done(e, 0); });
    });
    reply.handshakeOk = !ec;
    if (ec) {
      reply.error = ec.message();
      return reply;
    }
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    if (ec = runFor([&](auto done) { http::async_write(*stream_, req, done); }); ec) {
      reply.error = ec.message();
      return reply;
    }
    http::response<http::string_body> res;
    if (ec = runFor([&](auto done) { http::async_read(*stream_, buffer_, res, done); }); ec) {
      reply.error = ec.message();
      return reply;
    }
    reply.status = static_cast<int>(res.result_int());
    reply.body = res.body();
    return reply;
  }

 private:
  using Stream = asio::ssl::stream<asio::ip::tcp::socket>;

  template <typename Start>
  boost::system::error_code runFor(Start start) {
    std::optional<boost::system::error_code> result;
    ioc_.restart();
    start([&result](boost::system::error_code ec, std::size_t) { result = ec; });
    ioc_.run_for(10s);
    if (result) return *result;
    boost::system::error_code ignored;
    stream_->next_layer().cancel(ignored);
    ioc_.run();
    return asio::error::timed_out;
  }

  asio::io_context ioc_;
  asio::ssl::context context_;
  std::unique_ptr<Stream> stream_;
  boost::beast::flat_buffer buffer_;
};

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
