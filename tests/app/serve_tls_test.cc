// What serve says about its TLS certificate: the /readyz check and readiness rule, the metrics'
// view, and the banner's commands for each way TLS can be set up.
#include "serve_tls.h"

#include <gtest/gtest.h>

namespace gpufair::app {
namespace {

using namespace std::chrono_literals;
using Time = std::chrono::system_clock::time_point;

const Time kNow = Time{} + std::chrono::hours(24 * 365 * 56);

api::TlsState served(Time notAfter, std::string lastError = "") {
  return api::TlsState{true, "1A2B", "CN = gpufair",      {"127.0.0.1", "localhost"}, notAfter,
                       2,    1,      std::move(lastError)};
}

TEST(ServeTlsTest, ReadyWhileTheServedCertificateIsValidEvenAfterARefusedChange) {
  EXPECT_TRUE(tlsReadiness(api::TlsState{}, kNow).isOk()) << "plain HTTP";
  EXPECT_TRUE(tlsReadiness(served(kNow + 1h), kNow).isOk());
  EXPECT_TRUE(tlsReadiness(served(kNow + 1h, "TLS key k.pem cannot be used"), kNow).isOk());
  const Status expired = tlsReadiness(served(kNow - 1s, "TLS key k.pem cannot be used"), kNow);
  ASSERT_FALSE(expired.isOk());
  EXPECT_NE(expired.reason().find("serial 1A2B"), std::string::npos) << expired.reason();
  EXPECT_NE(expired.reason().find("has expired"), std::string::npos) << expired.reason();
  EXPECT_NE(expired.reason().find("TLS key k.pem cannot be used"), std::string::npos);
}

TEST(ServeTlsTest, TheReadyzCheckSaysWhatIsServedAndWhatWasRefused) {
  const api::HealthDetail ok = tlsDetail(served(kNow + 1h), kNow);
  EXPECT_EQ(ok.name, "tls");
  EXPECT_TRUE(ok.ok);
  EXPECT_NE(ok.message.find("serving certificate serial 1A2B (CN = gpufair)"), std::string::npos)
      << ok.message;
  const api::HealthDetail refused = tlsDetail(served(kNow + 1h, "bad PEM"), kNow);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.message.find("refused, the old one stays in service"), std::string::npos);
  EXPECT_NE(refused.message.find("bad PEM"), std::string::npos);
  EXPECT_FALSE(tlsDetail(served(kNow - 1s), kNow).ok);
}

TEST(ServeTlsTest, MetricsCountSecondsUntilExpiry) {
  const auto status = tlsStatus(served(kNow + 90s), kNow);
  EXPECT_DOUBLE_EQ(status.expirySeconds, 90);
  EXPECT_EQ(status.reloads, 2u);
  EXPECT_EQ(status.reloadErrors, 1u);
  EXPECT_DOUBLE_EQ(tlsStatus(served(kNow - 5s), kNow).expirySeconds, -5);
}

TEST(ServeTlsTest, PlainHttpBannerIsUnchanged) {
  EXPECT_EQ(tryCommands({}, api::TlsState{}, "127.0.0.1", 8888),
            "  try:  curl -s http://127.0.0.1:8888/debug/snapshot\n"
            "        curl -s -X POST http://127.0.0.1:8888/filter -H 'Content-Type: "
            "application/json' -d @examples/filter-request.json\n"
            "        gpufair top --url http://127.0.0.1:8888\n");
}

TEST(ServeTlsTest, TlsBannerTrustsTheServedCertificate) {
  api::ServerOptions options;
  options.tls.certFile = "c.pem";
  options.tls.keyFile = "k.pem";
  const std::string text = tryCommands(options, served(kNow), "127.0.0.1", 8888);
  EXPECT_NE(text.find("curl -s --cacert c.pem https://127.0.0.1:8888/debug/snapshot"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpufair top --url https://127.0.0.1:8888 --cacert c.pem\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("CLIENT.pem"), std::string::npos) << "no client certificate needed";
}

TEST(ServeTlsTest, ACertificateWithoutTheHostsNameIsReachedByItsDnsName) {
  api::ServerOptions options;
  options.tls.certFile = "c.pem";
  api::TlsState tls = served(kNow);
  tls.names = {"10.0.0.7", "gpufair-webhook.gpufair-system.svc"};
  const std::string text = tryCommands(options, tls, "127.0.0.1", 8888);
  EXPECT_NE(text.find("curl -s --cacert c.pem --resolve "
                      "gpufair-webhook.gpufair-system.svc:8888:127.0.0.1 "
                      "https://gpufair-webhook.gpufair-system.svc:8888/debug/snapshot"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpufair top --url https://127.0.0.1:8888 --cacert c.pem --server-name "
                      "gpufair-webhook.gpufair-system.svc\n"),
            std::string::npos)
      << text;
}

TEST(ServeTlsTest, MutualTlsBannerSaysWhichClientCertificateToUse) {
  api::ServerOptions options;
  options.tls.certFile = "c.pem";
  options.tls.clientCaFile = "ca.pem";
  options.tls.clientAllowedNames = {"kube-scheduler", "admin"};
  const std::string text = tryCommands(options, served(kNow), "127.0.0.1", 8888);
  EXPECT_NE(text.find("--cacert c.pem --cert CLIENT.pem --key CLIENT-KEY.pem"), std::string::npos)
      << text;
  EXPECT_NE(text.find("(CLIENT.pem, CLIENT-KEY.pem: a client certificate and key signed by ca.pem, "
                      "with the CN or a DNS name kube-scheduler, admin)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpufair::app
