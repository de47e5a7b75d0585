// HTTPS for production: certificate rotation (new connections get the new certificate, open ones
// keep theirs, a broken replacement keeps the old one), allowed client names, and the cipher
// policy (TLS 1.2 with ECDHE and AEAD only).
#include <thread>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "gpufair/api/server.h"

#include "k8s/fake_apiserver.h"
#include "test_support.h"
#include "tls_context.h"
#include "tls_test_support.h"

namespace gpufair::api {
namespace {

using namespace std::chrono_literals;
using k8s::fake::issueTestCert;
using k8s::fake::TestCertRequest;
using k8s::fake::testPki;
using testsupport::Cluster;
using testsupport::PemFiles;
using testsupport::TlsClient;
using testsupport::TlsClientOptions;

constexpr const char* kFirstSerial = "02";  // testPki()'s server certificate

TestCertRequest serverCert(long serial) {
  TestCertRequest request;
  request.commonName = "gpufair";
  request.serial = serial;
  request.altNames = "IP:127.0.0.1,DNS:localhost";
  return request;
}

TestCertRequest clientCert(const std::string& commonName, const std::string& altNames = "") {
  TestCertRequest request;
  request.commonName = commonName;
  request.serial = 300;
  request.altNames = altNames;
  request.client = true;
  return request;
}

class ServerTlsPolicyTest : public ::testing::Test {
 protected:
  ServerOptions options(std::chrono::milliseconds reloadPeriod) const {
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.tls.certFile = pem.path("server.pem");
    o.tls.keyFile = pem.path("server-key.pem");
    o.tls.reloadPeriod = reloadPeriod;
    o.readTimeout = 2s;
    o.drainTimeout = 1s;
    return o;
  }
  void install(const k8s::fake::TestCert& cert) const {
    pem.write("server.pem", cert.certPem);
    pem.write("server-key.pem", cert.keyPem);
  }
  // The serial a new connection is served, once it is `serial` (or the last one seen after 5 s).
  static std::string servedSerial(const ExtenderServer& server, const std::string& serial) {
    std::string seen;
    for (int i = 0; i < 100 && seen != serial; ++i) {
      if (i > 0) std::this_thread::sleep_for(50ms);
      seen = TlsClient(server.port(), false).request("GET", "/healthz").serverSerial;
    }
    return seen;
  }
  static TlsState stateAfterErrors(const ExtenderServer& server, std::uint64_t errors) {
    for (int i = 0; i < 100 && server.tlsState().reloadErrors < errors; ++i) {
      std::this_thread::sleep_for(50ms);
    }
    return server.tlsState();
  }

  PemFiles pem;
  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST_F(ServerTlsPolicyTest, ReplacedFilesAreServedToNewConnectionsOpenOnesKeepTheirs) {
  ExtenderServer server(service, options(100ms));
  ASSERT_TRUE(server.start().isOk());
  TlsClient open(server.port(), false);
  const auto first = open.request("GET", "/healthz");
  ASSERT_EQ(first.status, 200) << first.error;
  EXPECT_EQ(first.serverSerial, kFirstSerial);

  install(issueTestCert(serverCert(0x77)));
  EXPECT_EQ(servedSerial(server, "77"), "77");
  const TlsState state = server.tlsState();
  EXPECT_EQ(state.serial, "77");
  EXPECT_EQ(state.reloads, 1u);
  EXPECT_EQ(state.reloadErrors, 0u);
  EXPECT_TRUE(state.lastError.empty()) << state.lastError;
  const auto stillOpen = open.again("/healthz");
  EXPECT_EQ(stillOpen.status, 200) << "an open connection is not dropped: " << stillOpen.error;
  EXPECT_EQ(stillOpen.serverSerial, kFirstSerial);
}

struct BrokenReplacement {
  const char* name;
  const char* error;  // a part of TlsState::lastError
};

class ServerTlsBrokenReplacementTest : public ServerTlsPolicyTest,
                                       public ::testing::WithParamInterface<BrokenReplacement> {
 protected:
  void breakFiles(const std::string& name) const {
    const auto fresh = issueTestCert(serverCert(0x78));
    if (name == "KeyOfAnotherCertificate") {
      pem.write("server.pem", fresh.certPem);  // the old key stays
    } else if (name == "NotACertificate") {
      pem.write("server.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n");
    } else if (name == "Expired") {
      TestCertRequest expired = serverCert(0x79);
      expired.notBeforeSeconds = -7200;
      expired.notAfterSeconds = -60;
      install(issueTestCert(expired));
    } else if (name == "Missing") {
      std::filesystem::remove(pem.path("server-key.pem"));
    }
  }
};

TEST_P(ServerTlsBrokenReplacementTest, KeepsTheOldCertificateAndCountsOnce) {
  ExtenderServer server(service, options(50ms));
  ASSERT_TRUE(server.start().isOk());
  breakFiles(GetParam().name);
  TlsState state = stateAfterErrors(server, 1);
  EXPECT_EQ(state.reloadErrors, 1u);
  EXPECT_NE(state.lastError.find(GetParam().error), std::string::npos) << state.lastError;
  EXPECT_EQ(state.serial, kFirstSerial);
  const auto reply = TlsClient(server.port(), false).request("GET", "/healthz");
  EXPECT_EQ(reply.status, 200) << reply.error;
  EXPECT_EQ(reply.serverSerial, kFirstSerial);
  std::this_thread::sleep_for(300ms);  // several more checks of the same files
  EXPECT_EQ(server.tlsState().reloadErrors, 1u) << "a refused change is counted once";

  install(issueTestCert(serverCert(0x80)));  // fixed
  EXPECT_EQ(servedSerial(server, "80"), "80");
  EXPECT_TRUE(server.tlsState().lastError.empty()) << server.tlsState().lastError;
}

INSTANTIATE_TEST_SUITE_P(
    , ServerTlsBrokenReplacementTest,
    ::testing::Values(BrokenReplacement{"KeyOfAnotherCertificate", "cannot be used"},
                      BrokenReplacement{"NotACertificate", "TLS certificate"},
                      BrokenReplacement{"Expired", "has expired"},
                      BrokenReplacement{"Missing", "server-key.pem: cannot be read"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ServerTlsPolicyTest, ReloadTlsAppliesAChangeAtOnceOrSaysWhyNot) {
  ExtenderServer server(service, options(0ms));  // no periodic check: only reloadTls() (SIGHUP)
  ASSERT_TRUE(server.start().isOk());
  EXPECT_TRUE(server.reloadTls().isOk()) << "unchanged files";
  install(issueTestCert(serverCert(0x81)));
  ASSERT_TRUE(server.reloadTls().isOk());
  EXPECT_EQ(TlsClient(server.port(), false).request("GET", "/healthz").serverSerial, "81");
  pem.write("server-key.pem", testPki().clientKeyPem);
  const Status refused = server.reloadTls();
  EXPECT_FALSE(refused.isOk());
  EXPECT_NE(refused.reason().find("cannot be used"), std::string::npos) << refused.reason();
  EXPECT_EQ(TlsClient(server.port(), false).request("GET", "/healthz").serverSerial, "81");
}

// The periodic check waits until the files are the same twice in a row, so a certificate and
// key copied one after the other are not refused in between.
TEST_F(ServerTlsPolicyTest, AHalfWrittenPairIsNotRefusedWhenTheKeyFollows) {
  detail::TlsContextStore store(options(0ms).tls);
  ASSERT_TRUE(store.load().isOk());
  const auto fresh = issueTestCert(serverCert(0x82));
  pem.write("server.pem", fresh.certPem);  // the key comes later
  EXPECT_TRUE(store.reload(true).isOk());
  pem.write("server-key.pem", fresh.keyPem);
  EXPECT_TRUE(store.reload(true).isOk());  // changed again: waits one more check
  EXPECT_EQ(store.state().serial, kFirstSerial);
  EXPECT_TRUE(store.reload(true).isOk());
  EXPECT_EQ(store.state().serial, "82");
  EXPECT_EQ(store.state().reloadErrors, 0u);
}

TEST_F(ServerTlsPolicyTest, OnlyAllowedClientNamesAreServed) {
  ServerOptions o = options(0ms);
  o.tls.clientCaFile = pem.path("ca.pem");
  o.tls.clientAllowedNames = {"kube-scheduler", "gpufair-scheduler.gpufair-system"};
  ExtenderServer server(service, o);
  ASSERT_TRUE(server.start().isOk());
  auto connect = [&](const TestCertRequest& request) {
    const auto cert = issueTestCert(request);
    return TlsClient(server.port(), TlsClientOptions{cert.certPem, cert.keyPem, "", 0, 0})
        .request("GET", "/healthz");
  };
  EXPECT_EQ(connect(clientCert("kube-scheduler")).status, 200) << "by its CN";
  EXPECT_EQ(connect(clientCert("scheduler", "DNS:x,DNS:gpufair-scheduler.gpufair-system")).status,
            200)
      << "by a DNS name";
  const auto intruder = connect(clientCert("random-workload", "DNS:kube-scheduler.evil"));
  EXPECT_EQ(intruder.status, 0) << intruder.body;
  for (int i = 0; i < 200 && server.stats().clientNamesRefused.load() < 1; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(server.stats().clientNamesRefused.load(), 1u);
  EXPECT_EQ(server.stats().tlsHandshakeFailures.load(), 0u);
  EXPECT_EQ(connect(clientCert("kube-scheduler")).status, 200) << "the server keeps serving";
}

TEST_F(ServerTlsPolicyTest, AllowedNamesNeedAClientCa) {
  ServerOptions o = options(0ms);
  o.tls.clientAllowedNames = {"kube-scheduler"};
  ExtenderServer server(service, o);
  const Status status = server.start();
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.reason().find("need a client CA"), std::string::npos) << status.reason();
}

struct CipherCase {
  const char* name;
  const char* cipher;  // offered alone, over TLS 1.2
  bool accepted;
};

class ServerCipherPolicyTest : public ServerTlsPolicyTest,
                               public ::testing::WithParamInterface<CipherCase> {};

// An RSA certificate, with which OpenSSL's defaults would accept every one of these suites.
TEST_P(ServerCipherPolicyTest, Tls12OffersOnlyEcdheWithAead) {
  TestCertRequest rsa = serverCert(0x90);
  rsa.rsa = true;
  install(issueTestCert(rsa));
  ExtenderServer server(service, options(0ms));
  ASSERT_TRUE(server.start().isOk());
  const auto reply =
      TlsClient(server.port(), TlsClientOptions{"", "", GetParam().cipher, TLS1_2_VERSION, 0})
          .request("GET", "/healthz");
  EXPECT_EQ(reply.handshakeOk, GetParam().accepted) << reply.error;
  EXPECT_EQ(reply.status, GetParam().accepted ? 200 : 0);
}

INSTANTIATE_TEST_SUITE_P(
    , ServerCipherPolicyTest,
    ::testing::Values(CipherCase{"EcdheAes128Gcm", "ECDHE-RSA-AES128-GCM-SHA256", true},
                      CipherCase{"EcdheAes256Gcm", "ECDHE-RSA-AES256-GCM-SHA384", true},
                      CipherCase{"EcdheChacha20", "ECDHE-RSA-CHACHA20-POLY1305", true},
                      CipherCase{"RsaKeyExchangeCbc", "AES128-SHA", false},
                      CipherCase{"RsaKeyExchangeCbc256", "AES256-SHA", false},
                      CipherCase{"RsaKeyExchangeGcm", "AES128-GCM-SHA256", false},
                      CipherCase{"EcdheCbcSha1", "ECDHE-RSA-AES128-SHA", false},
                      CipherCase{"EcdheCbcSha256", "ECDHE-RSA-AES128-SHA256", false},
                      CipherCase{"DheGcm", "DHE-RSA-AES128-GCM-SHA256", false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ServerTlsPolicyTest, Tls13IsServedAndTls11IsNot) {
  ExtenderServer server(service, options(0ms));
  ASSERT_TRUE(server.start().isOk());
  EXPECT_EQ(TlsClient(server.port(), false).request("GET", "/healthz").status, 200);
  const auto old =
      TlsClient(server.port(), TlsClientOptions{"", "", "", TLS1_1_VERSION, TLS1_1_VERSION})
          .request("GET", "/healthz");
  EXPECT_FALSE(old.handshakeOk);
}

}  // namespace
}  // namespace gpufair::api
