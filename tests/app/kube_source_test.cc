// serve's Kubernetes wiring end to end: KubeSource (reflectors, quota watcher, binder, events,
// leader election) and the webhook service, against the in-process fake kube-apiserver reached
// through a real kubeconfig file.
#include "kube_source.h"

#include <cstdio>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpufair/api/extender_service.h"
#include "gpufair/policy/scorer.h"

#include "captured_logs.h"
#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "kube_fixture.h"

namespace gpufair::app {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The fake's pod with a uid of its own ("uid-NAME").
json gpuPod(const std::string& ns, const std::string& name, int gpus,
            const std::string& node = "") {
  json pod = k8s::fake::makePod(ns, name, node, {}, gpus);
  pod["metadata"]["uid"] = "uid-" + name;
  return pod;
}

class KubeSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testsupport::initLoggingBeforeThreads();
    k8s::fake::FakeApiServerOptions options;
    options.tokens = {"secret-token"};
    fake = std::make_unique<k8s::fake::FakeApiServer>(options);
    fake->start();
    kubeconfig = testsupport::writeKubeconfig(*fake, "kubeconfig", "secret-token");
    fake->create("/api/v1/nodes", k8s::fake::makeNode("n1", 8));
    fake->create("/api/v1/namespaces/team-a/pods", gpuPod("team-a", "running", 2, "n1"));
    fake->create("/api/v1/namespaces/gpufair-system/configmaps",
                 testsupport::quotaConfigMap("queues:\n- name: team-a\n  namespaces: [team-a]\n"
                                             "  gpu: {deserved: 4, limit: 6}\n"));
  }
  void TearDown() override { std::remove(kubeconfig.c_str()); }

  KubeSettings settings() const { return testsupport::testSettings(kubeconfig); }

  std::unique_ptr<k8s::fake::FakeApiServer> fake;
  std::string kubeconfig;
  state::Mirror mirror{std::make_shared<SystemClock>()};
};

TEST_F(KubeSourceTest, ServesFromTheApiServerAndBindsThere) {
  auto created = KubeSource::create(settings(), mirror, std::make_shared<SystemClock>());
  ASSERT_TRUE(created.ok()) << created.error();
  KubeSource& kube = **created;
  EXPECT_FALSE(kube.ready().isOk());  // nothing listed yet
  kube.start();
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return kube.ready().isOk(); }, 10s))
      << kube.ready().reason();
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return kube.isLeader(); }, 10s));

  auto snap = mirror.snapshot();
  ASSERT_NE(snap->findNode("n1"), nullptr);
  EXPECT_EQ(snap->findNode("n1")->used(), 2000);
  ASSERT_NE(snap->findQueue("team-a"), nullptr);
  EXPECT_EQ(snap->findQueue("team-a")->quota.gpu.deserved, 4000);

  // kube-scheduler offers a new pod, then binds it: the Binding reaches the API server and the
  // watch confirms the assumption.
  auto scorer = policy::makeScorer(policy::kDefaultScorer);
  api::ExtenderService service(mirror, *scorer, kube.binder(), [&] { return kube.ready(); });
  service.setHealthDetails([&] { return kube.healthDetails(); });
  service.setObserver(&kube.decisions());
  const json pod = gpuPod("team-a", "train", 2);
  fake->create("/api/v1/namespaces/team-a/pods", pod);
  const std::string filterBody = json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump();
  const api::Response filtered = service.handle({"POST", "/filter", filterBody});
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  EXPECT_EQ(json::parse(filtered.body).at("NodeNames"), json::array({"n1"}));
  const std::string bindBody = json{
      {"PodName", "train"},
      {"PodNamespace", "team-a"},
      {"PodUID", "uid-train"},
      {"Node", "n1"}}.dump();
  const api::Response bound = service.handle({"POST", "/bind", bindBody});
  ASSERT_EQ(json::parse(bound.body).at("Error"), "") << bound.body;
  auto onServer = fake->get("/api/v1/namespaces/team-a/pods/train");
  ASSERT_TRUE(onServer.has_value());
  EXPECT_EQ((*onServer)["spec"]["nodeName"], "n1");
  ASSERT_TRUE(k8s::fake::waitUntil(
      [&] {
        auto p = mirror.findPod("uid-train");
        return p != nullptr && !mirror.isAssumed("uid-train") && p->nodeName == "n1";
      },
      10s));
  EXPECT_EQ(mirror.snapshot()->findNode("n1")->used(), 4000);

  // A queue at its limit is refused, and the pod gets an Event saying why.
  const json big = gpuPod("team-a", "big", 4);
  fake->create("/api/v1/namespaces/team-a/pods", big);
  const api::Response refused =
      service.handle({"POST", "/filter", json{{"Pod", big}, {"NodeNames", {"n1"}}}.dump()});
  EXPECT_EQ(json::parse(refused.body).at("FailedAndUnresolvableNodes").at("n1"),
            "queue team-a at 4/6 GPUs (limit); pod needs 4 GPUs");
  // Written, not only sent: the fake API server validates Events as kube-apiserver does.
  ASSERT_TRUE(k8s::fake::waitUntil(
      [&] { return !fake->list("/api/v1/namespaces/team-a/events").empty(); }, 10s));
  const json event = fake->list("/api/v1/namespaces/team-a/events").front();
  EXPECT_EQ(event["reason"], "GpufairUnschedulable");
  EXPECT_EQ(event["action"], "Scheduling");

  // A broken quota change keeps the last good config; a good one applies without a restart.
  fake->update("/api/v1/namespaces/gpufair-system/configmaps/queues",
               testsupport::quotaConfigMap("queues:\n- name: team-a\n  gpu: {deserved: -3}\n"));
  ASSERT_TRUE(k8s::fake::waitUntil(
      [&] {
        const json readyz = json::parse(service.handle({"GET", "/readyz", ""}).body);
        for (const auto& check : readyz.value("checks", json::array())) {
          if (check.at("name") == "quota-config") return check.at("ok") == false;
        }
        return false;
      },
      10s));
  {
    const api::Response readyz = service.handle({"GET", "/readyz", ""});
    EXPECT_EQ(readyz.status, 200) << readyz.body;  // the last good config is in force: ready
    EXPECT_THAT(readyz.body, ::testing::HasSubstr("the last good config stays in force"));
    EXPECT_THAT(readyz.body, ::testing::HasSubstr("leader-election"));
  }
  EXPECT_EQ(mirror.snapshot()->findQueue("team-a")->quota.gpu.deserved, 4000);
  fake->update("/api/v1/namespaces/gpufair-system/configmaps/queues",
               testsupport::quotaConfigMap("queues:\n- name: team-a\n  namespaces: [team-a]\n"
                                           "  gpu: {deserved: 8}\n"));
  ASSERT_TRUE(k8s::fake::waitUntil(
      [&] { return mirror.snapshot()->findQueue("team-a")->quota.gpu.deserved == 8000; }, 10s));
  EXPECT_THAT(service.handle({"GET", "/readyz", ""}).body,
              ::testing::HasSubstr("quota ConfigMaps in gpufair-system are in force"));

  // Deleting a pod on the server frees its GPUs in the mirror.
  fake->remove("/api/v1/namespaces/team-a/pods/running");
  ASSERT_TRUE(
      k8s::fake::waitUntil([&] { return mirror.snapshot()->findNode("n1")->used() == 2000; }, 10s));

  // Stopping releases the Lease at once.
  kube.stop();
  auto lease = fake->get("/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases/gpufair");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "");
}

// The log says what gpufair waits for until the first lists are complete, then what it found.
TEST_F(KubeSourceTest, TheLogSaysWhatTheFirstCompleteListsFound) {
  testsupport::CapturedLogs logs;
  auto created = KubeSource::create(settings(), mirror, std::make_shared<SystemClock>());
  ASSERT_TRUE(created.ok()) << created.error();
  KubeSource& kube = **created;
  kube.tick();  // nothing listed yet: no summary of an empty cluster
  EXPECT_EQ(logs.text().find("first lists complete"), std::string::npos);
  kube.start();
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return kube.consistent().isOk(); }, 10s))
      << kube.consistent().reason();
  kube.tick();
  kube.tick();  // said once
  const std::string text = logs.text();
  const auto first = text.find(
      "first lists complete: 1 nodes, 8 GPUs (6 free), 1 pods using or "
      "wanting GPUs, 2 queues; deciding from now on");
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("first lists complete", first + 1), std::string::npos);
  kube.stop();
}

TEST_F(KubeSourceTest, UnusableKubeconfigIsAClearError) {
  KubeSettings s = settings();
  s.kubeconfig = "/nonexistent/kubeconfig";
  auto created = KubeSource::create(s, mirror, std::make_shared<SystemClock>());
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.error().find("/nonexistent/kubeconfig"), std::string::npos) << created.error();
}

}  // namespace
}  // namespace gpufair::app
