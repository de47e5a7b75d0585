// No credential reaches a log: serve's Kubernetes wiring runs against the fake kube-apiserver at
// trace level with every log line captured, with the right bearer token and with a wrong one (so
// that the error paths log too), and neither token appears anywhere. Also: the feed counters that
// metrics export.
#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/policy/scorer.h"

#include "captured_logs.h"
#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "kube_source.h"

namespace gpufair::app {
namespace {

using nlohmann::json;
using testsupport::CapturedLogs;
using namespace std::chrono_literals;

class LogSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    k8s::fake::FakeApiServerOptions options;
    options.tokens = {kToken};
    fake = std::make_unique<k8s::fake::FakeApiServer>(options);
    fake->start();
    fake->create("/api/v1/nodes", k8s::fake::makeNode("n1", 8));
  }
  std::string writeKubeconfig(const std::string& token) {
    const std::string path =
        ::testing::TempDir() + "gpufair-secrets-kubeconfig-" + std::to_string(fake->port());
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                        << "clusters:\n- name: fake\n  cluster:\n    server: " << fake->url()
                        << "\ncontexts:\n- name: test\n  context: {cluster: fake, user: u}\n"
                        << "users:\n- name: u\n  user: {token: " << token << "}\n";
    return path;
  }
  KubeSettings settings(const std::string& kubeconfig) const {
    KubeSettings s;
    s.kubeconfig = kubeconfig;
    s.ns = "gpufair-system";
    s.leaseDuration = 3s;
    s.renewDeadline = 2s;
    s.retryPeriod = 1s;
    return s;
  }

  static constexpr const char* kToken = "s3cr3t-bearer-token-4f1d9c";
  std::unique_ptr<k8s::fake::FakeApiServer> fake;
  state::Mirror mirror{std::make_shared<SystemClock>()};
};

TEST_F(LogSecretsTest, TheBearerTokenNeverReachesTheLogs) {
  CapturedLogs logs;
  const std::string kubeconfig = writeKubeconfig(kToken);
  {
    auto created =
        KubeSource::create(settings(kubeconfig), mirror, std::make_shared<SystemClock>());
    ASSERT_TRUE(created.ok()) << created.error();
    KubeSource& kube = **created;
    kube.start();
    ASSERT_TRUE(k8s::fake::waitUntil([&] { return kube.ready().isOk(); }, 10s));
    auto scorer = policy::makeScorer(policy::kDefaultScorer);
    api::ExtenderService service(mirror, *scorer, kube.binder(), [&] { return kube.ready(); });
    service.setObserver(&kube.decisions());
    json pod = {{"metadata", {{"name", "big"}, {"namespace", "team-a"}, {"uid", "uid-big"}}},
                {"spec",
                 {{"schedulerName", "gpufair"},
                  {"containers",
                   json::array({{{"name", "m"},
                                 {"resources", {{"requests", {{"nvidia.com/gpu", "16"}}}}}}})}}},
                {"status", {{"phase", "Pending"}}}};
    service.handle({"POST", "/filter", json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump()});

    // What metrics export about the feed: every reflector listed once, and saw events or lists.
    const auto counters = kube.feedCounters();
    ASSERT_EQ(counters.size(), 3u);
    EXPECT_EQ(counters[0].resource, "nodes");
    EXPECT_EQ(counters[1].resource, "pods");
    EXPECT_EQ(counters[2].resource, "configmaps");
    for (const auto& c : counters) EXPECT_GE(c.lists, 1u) << c.resource;
    kube.stop();
  }
  const std::string text = logs.text();
  EXPECT_NE(text.find("filter rejected team-a/big"), std::string::npos) << "nothing captured";
  EXPECT_EQ(text.find(kToken), std::string::npos) << text;
  std::remove(kubeconfig.c_str());
}

TEST_F(LogSecretsTest, AWrongTokenIsNotLoggedEither) {
  CapturedLogs logs;
  const std::string wrong = "wrong-token-7b2e0a91";
  const std::string kubeconfig = writeKubeconfig(wrong);
  {
    auto created =
        KubeSource::create(settings(kubeconfig), mirror, std::make_shared<SystemClock>());
    ASSERT_TRUE(created.ok()) << created.error();
    (*created)->start();
    // The reflectors are refused (401) and say so in the logs.
    ASSERT_TRUE(
        k8s::fake::waitUntil([&] { return logs.text().find("401") != std::string::npos; }, 10s))
        << logs.text();
    (*created)->stop();
  }
  const std::string text = logs.text();
  EXPECT_EQ(text.find(wrong), std::string::npos) << text;
  EXPECT_EQ(text.find(kToken), std::string::npos) << text;
  std::remove(kubeconfig.c_str());
}

}  // namespace
}  // namespace gpufair::app
