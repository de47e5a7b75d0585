// The seed scenario against the in-process fake kube-apiserver, as in a real cluster: team-a's six
// movable 3-GPU pods of one Job run 2,2,1,1 on four 10-GPU nodes; team-b's 8-GPU pod waits. The
// consolidation loop (ConsolidationRunner: Eviction API, Events) moves one pod; a test-side Job
// controller recreates the evicted pod; a test-side kube-scheduler calls /filter, /prioritize and
// /bind; both land where planned, with Events the fake API server validated.
#include <ctime>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpufair/api/extender_service.h"
#include "gpufair/policy/scorer.h"

#include "consolidation_runner.h"
#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "kube_fixture.h"
#include "kube_source.h"

namespace gpufair::app {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const char* kJobUid = "0b7e4f9c-0000-4000-8000-00000000000a";

json gpuPod(const std::string& ns, const std::string& name, int gpus, const std::string& node,
            bool ofJob, int startedMinutesAgo) {
  json pod = k8s::fake::makePod(ns, name, node, {}, gpus);
  pod["metadata"]["uid"] = "uid-" + name;
  // As a real API server stamps it (the fake's default is a fixed date): a replacement is a pod
  // created after the consolidation reserved its node.
  char stamp[32];
  const std::time_t t = std::time(nullptr) - startedMinutesAgo * 60;
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  pod["metadata"]["creationTimestamp"] = stamp;
  if (!node.empty()) pod["status"]["startTime"] = stamp;
  if (ofJob) {
    pod["metadata"]["labels"] = {{"job-name", "a"}, {"gpufair.io/movable", "true"}};
    pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "batch/v1"},
                                                       {"kind", "Job"},
                                                       {"name", "a"},
                                                       {"uid", kJobUid},
                                                       {"controller", true}}});
  }
  return pod;
}

class ConsolidationClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testsupport::initLoggingBeforeThreads();
    fake = std::make_unique<k8s::fake::FakeApiServer>();
    fake->start();
    kubeconfig = testsupport::writeKubeconfig(*fake, "consolidate", "token");
    for (int i = 1; i <= 4; ++i) {
      fake->create("/api/v1/nodes", k8s::fake::makeNode("node-" + std::to_string(i), 10));
    }
    const char* layout[] = {"node-1", "node-1", "node-2", "node-2", "node-3", "node-4"};
    for (int i = 0; i < 6; ++i) {
      const std::string name = "a" + std::to_string(i + 1);
      fake->create("/api/v1/namespaces/team-a/pods",
                   gpuPod("team-a", name, 3, layout[i], true, 500 - 80 * i));
      jobPods.insert(name);
    }
    fake->create("/api/v1/namespaces/gpufair-system/configmaps",
                 {{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata",
                   {{"name", "queues"},
                    {"namespace", "gpufair-system"},
                    {"labels", {{"gpufair.io/quota-config", "true"}}}}},
                  {"data",
                   {{"queues.yaml",
                     "queues:\n- name: team-a\n  namespaces: [team-a]\n  gpu: {deserved: 20}\n"
                     "- name: team-b\n  namespaces: [team-b]\n  gpu: {deserved: 20}\n"}}}});
  }
  void TearDown() override { std::remove(kubeconfig.c_str()); }

  // The Job controller: every pod of the Job that is gone gets a replacement (new name and uid,
  // same labels and owner), pending.
  int recreateEvicted() {
    int created = 0;
    for (const std::string& name : std::set<std::string>(jobPods)) {
      if (fake->get("/api/v1/namespaces/team-a/pods/" + name).has_value()) continue;
      jobPods.erase(name);
      const std::string next = name + "-r";
      fake->create("/api/v1/namespaces/team-a/pods", gpuPod("team-a", next, 3, "", true, 0));
      jobPods.insert(next);
      ++created;
    }
    return created;
  }

  // kube-scheduler: /filter, /prioritize and /bind for one pending pod; the node bound, or "".
  std::string schedule(api::ExtenderService& service, const std::string& ns,
                       const std::string& name) {
    const auto pod = fake->get("/api/v1/namespaces/" + ns + "/pods/" + name);
    if (!pod) return "";
    const json nodes = {"node-1", "node-2", "node-3", "node-4"};
    const api::Response filtered =
        service.handle({"POST", "/filter", json{{"Pod", *pod}, {"NodeNames", nodes}}.dump()});
    const json feasible = json::parse(filtered.body).value("NodeNames", json::array());
    if (feasible.empty()) return "";
    const api::Response scored = service.handle(
        {"POST", "/prioritize", json{{"Pod", *pod}, {"NodeNames", feasible}}.dump()});
    std::string best;
    int top = -1;
    for (const auto& s : json::parse(scored.body)) {
      if (s.at("Score").get<int>() > top) {
        top = s.at("Score").get<int>();
        best = s.at("Host").get<std::string>();
      }
    }
    const api::Response bound = service.handle({"POST", "/bind",
                                                json{{"PodName", name},
                                                     {"PodNamespace", ns},
                                                     {"PodUID", (*pod)["metadata"]["uid"]},
                                                     {"Node", best}}
                                                    .dump()});
    return json::parse(bound.body).value("Error", "x").empty() ? best : "";
  }

  std::unique_ptr<k8s::fake::FakeApiServer> fake;
  std::string kubeconfig;
  std::set<std::string> jobPods;
  state::Mirror mirror{std::make_shared<SystemClock>(), [] {
                         state::MirrorOptions o;
                         o.offeredPodsAreDemand = false;
                         return o;
                       }()};
};

TEST_F(ConsolidationClusterTest, SeedScenarioPlacesTheBigPodAndEveryMovedPodRunsAgain) {
  auto created = KubeSource::create(testsupport::testSettings(kubeconfig), mirror,
                                    std::make_shared<SystemClock>());
  ASSERT_TRUE(created.ok()) << created.error();
  KubeSource& kube = **created;
  kube.start();
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return kube.ready().isOk() && kube.isLeader(); }, 10s));
  auto scorer = policy::makeScorer(policy::kDefaultScorer);
  api::ExtenderService service(mirror, *scorer, kube.binder(), [&] { return kube.ready(); });
  ConsolidationSettings settings;
  settings.enabled = true;
  settings.holdFor = 60s;
  ConsolidationRunner runner(mirror, settings, std::make_shared<SystemClock>(), &kube);

  fake->create("/api/v1/namespaces/team-b/pods", gpuPod("team-b", "big", 8, "", false, 0));
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return mirror.findPod("uid-big") != nullptr; }, 10s));
  EXPECT_EQ(schedule(service, "team-b", "big"), "");  // no node has 8 free

  const ConsolidationRoundStats stats = runner.controller().runOnce();
  EXPECT_EQ(stats.fragmented, 1);
  ASSERT_EQ(stats.planned, 1);
  EXPECT_LE(stats.moved, 2);
  EXPECT_EQ(fake->requests("POST", "/api/v1/namespaces/team-a/pods/").size(),
            static_cast<std::size_t>(stats.moved));  // evictions only, through the Eviction API
  ASSERT_EQ(recreateEvicted(), stats.moved);
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return mirror.findPod("uid-a6-r") != nullptr; }, 10s));

  EXPECT_EQ(schedule(service, "team-b", "big"), "node-4");
  EXPECT_EQ(schedule(service, "team-a", "a6-r"), "node-1");  // steered to the planned node
  ASSERT_TRUE(k8s::fake::waitUntil(
      [&] {
        const auto snap = mirror.snapshot();
        return snap->pending().empty() && snap->findQueue("team-a")->allocated == 18000 &&
               snap->findQueue("team-b")->allocated == 8000;
      },
      10s));
  // Events written and accepted by the (validating) fake API server.
  ASSERT_TRUE(k8s::fake::waitUntil(
      [&] {
        std::set<std::string> reasons;
        for (const char* ns : {"team-a", "team-b"}) {
          for (const auto& e : fake->list(std::string("/api/v1/namespaces/") + ns + "/events")) {
            reasons.insert(e.value("reason", ""));
          }
        }
        return reasons.count("MovedForConsolidation") > 0 && reasons.count("Consolidating") > 0;
      },
      10s));
  for (const auto& e : fake->list("/api/v1/namespaces/team-a/events")) {
    if (e.value("reason", "") != "MovedForConsolidation") continue;
    EXPECT_NE(
        e.value("note", e.value("message", "")).find("moved to make room for team-b/big (8 GPUs)"),
        std::string::npos);
  }
  // Once the watch confirms both bindings, the plan is done and nothing stays held.
  EXPECT_TRUE(
      k8s::fake::waitUntil([&] { return runner.controller().runOnce().inFlight == 0; }, 10s))
      << [&] {
           std::string held;
           for (const auto& r : mirror.reservations()) held += policy::describe(r) + "; ";
           return held;
         }();
  runner.stop();
  kube.stop();
}

}  // namespace
}  // namespace gpufair::app
