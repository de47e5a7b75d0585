// The CLI's HTTPS client against the real webhook server with client certificates required: the
// server verified by --cacert (a CA, or its own certificate) and by name (--server-name), the
// client certificate presented, each failure explained; and `gpufair top` over mutual TLS.
#include "http_get.h"

#include <thread>

#include <gtest/gtest.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/memory_binder.h"
#include "gpufair/api/server.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/state/mirror.h"

#include "api/tls_test_support.h"
#include "commands.h"
#include "k8s/fake_apiserver.h"
#include "testing/builders.h"

namespace gpufair::app {
namespace {

using namespace std::chrono_literals;
using k8s::fake::issueTestCert;
using k8s::fake::testPki;

class HttpGetTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mirror.upsertNode(testing::MakeNode("gpu-node-1").gpus(8));
    pem.write("client.pem", testPki().clientCertPem);
    k8s::fake::TestCertRequest other;
    other.commonName = "random-workload";
    other.client = true;
    const auto intruder = issueTestCert(other);
    pem.write("intruder.pem", intruder.certPem);
    pem.write("intruder-key.pem", intruder.keyPem);
    api::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.tls.certFile = pem.path("server.pem");
    options.tls.keyFile = pem.path("server-key.pem");
    options.tls.clientCaFile = pem.path("ca.pem");
    options.tls.clientAllowedNames = {"test-user"};  // testPki()'s client certificate
    options.drainTimeout = 1s;
    server = std::make_unique<api::ExtenderServer>(service, options);
    ASSERT_TRUE(server->start().isOk());
    url = "https://127.0.0.1:" + std::to_string(server->port());
  }
  ClientTls client() const {
    return {pem.path("ca.pem"), pem.path("client.pem"), pem.path("client-key.pem"), ""};
  }

  api::testsupport::PemFiles pem;
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  state::Mirror mirror{clock};
  std::shared_ptr<const policy::Scorer> scorer = policy::makeScorer(policy::kDefaultScorer);
  api::MemoryBinder binder;
  api::ExtenderService service{mirror, *scorer, binder};
  std::unique_ptr<api::ExtenderServer> server;
  std::string url;
};

TEST_F(HttpGetTlsTest, GetsOverMutualTls) {
  auto reply = httpGet(url, "/healthz", client());
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, R"({"status":"ok"})");
}

TEST_F(HttpGetTlsTest, TrustsTheServersOwnCertificateAsCurlDoes) {
  ClientTls tls = client();
  tls.caFile = pem.path("server.pem");  // a leaf, not a CA: trusted as itself
  auto reply = httpGet(url, "/healthz", tls);
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply->status, 200);
}

TEST_F(HttpGetTlsTest, ChecksTheServerNameItIsGiven) {
  ClientTls tls = client();
  tls.serverName = "localhost";  // a DNS name of the server certificate
  EXPECT_TRUE(httpGet(url, "/healthz", tls).ok());
  tls.serverName = "gpufair.example";
  auto reply = httpGet(url, "/healthz", tls);
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("--server-name"), std::string::npos) << reply.error();
  EXPECT_NE(reply.error().find("hostname mismatch"), std::string::npos) << reply.error();
}

struct Refusal {
  const char* name;
  ClientTls (*tls)(const api::testsupport::PemFiles&);
  const char* error;  // a part of httpGet's error
};

class HttpGetTlsRefusalTest : public HttpGetTlsTest,
                              public ::testing::WithParamInterface<Refusal> {};

TEST_P(HttpGetTlsRefusalTest, SaysWhatToCheck) {
  auto reply = httpGet(url, "/healthz", GetParam().tls(pem));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find(GetParam().error), std::string::npos) << reply.error();
}

INSTANTIATE_TEST_SUITE_P(
    , HttpGetTlsRefusalTest,
    ::testing::Values(Refusal{"NoClientCertificate",
                              [](const api::testsupport::PemFiles& p) {
                                return ClientTls{p.path("ca.pem"), "", "", ""};
                              },
                              "--cert and --key (a client certificate the server accepts)"},
                      Refusal{"ClientNameNotAllowed",
                              [](const api::testsupport::PemFiles& p) {
                                return ClientTls{p.path("ca.pem"), p.path("intruder.pem"),
                                                 p.path("intruder-key.pem"), ""};
                              },
                              "the server ended the TLS connection"},
                      Refusal{"ServerFromAnotherCa",
                              [](const api::testsupport::PemFiles& p) {
                                return ClientTls{p.path("other-ca.pem"), p.path("client.pem"),
                                                 p.path("client-key.pem"), ""};
                              },
                              "certificate verify failed"},
                      Refusal{"MissingCaFile",
                              [](const api::testsupport::PemFiles& p) {
                                return ClientTls{p.path("nope.pem"), p.path("client.pem"),
                                                 p.path("client-key.pem"), ""};
                              },
                              "--cacert "},
                      Refusal{"KeyOfAnotherCertificate",
                              [](const api::testsupport::PemFiles& p) {
                                return ClientTls{p.path("ca.pem"), p.path("client.pem"),
                                                 p.path("server-key.pem"), ""};
                              },
                              "--key "}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(HttpGetTlsTest, HttpsUrlsWithoutTlsOptionsUseTheSystemsCas) {
  auto reply = httpGet(url, "/healthz");
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("certificate verify failed"), std::string::npos) << reply.error();
}

TEST_F(HttpGetTlsTest, TopShowsTheClusterOverMutualTls) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = runTop({"--url", url, "--cacert", pem.path("ca.pem"), "--cert",
                           pem.path("client.pem"), "--key", pem.path("client-key.pem"), "--once"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0) << err;
  EXPECT_NE(out.find("gpu-node-1"), std::string::npos) << out;
}

TEST_F(HttpGetTlsTest, TopAndExplainRefuseACertWithoutAKey) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runTop({"--url", url, "--cert", pem.path("client.pem"), "--once"}), 2);
  EXPECT_EQ(runExplain({"--url", url, "--cert", pem.path("client.pem"), "team-a/x"}), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("--cert and --key go together"),
            std::string::npos);
}

}  // namespace
}  // namespace gpufair::app
