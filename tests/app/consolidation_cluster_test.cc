// The seed scenario against the in-process fake kube-apiserver, as in a real cluster: team-a's six
// movable 3-GPU pods of one Job run 2,2,1,1 on four 10-GPU nodes; team-b's 8-GPU pod waits. The
// consolidation loop (ConsolidationRunner: Eviction API, Events) moves one pod; a test-side Job
// controller recreates the evicted pod; a test-side kube-scheduler calls /filter, /prioritize and
// /bind; both land where planned, with Events the fake API server validated. And when nothing
// takes the room made, the timeout: holds released, a Warning Event.
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpufair/api/extender_service.h"
#include "gpufair/policy/scorer.h"

#include "consolidation_runner.h"
#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "kube_fixture.h"
#include "kube_source.h"
#include "testing/builders.h"

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
                 testsupport::quotaConfigMap(
                     "queues:\n- name: team-a\n  namespaces: [team-a]\n  gpu: {deserved: 20}\n"
                     "- name: team-b\n  namespaces: [team-b]\n  gpu: {deserved: 20}\n"));
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

  // The notes of the Events with this reason the fake API server accepted, in team-a and team-b.
  std::vector<std::string> eventNotes(const std::string& reason) const {
    std::vector<std::string> notes;
    for (const char* ns : {"team-a", "team-b"}) {
      for (const auto& e : fake->list(std::string("/api/v1/namespaces/") + ns + "/events")) {
        if (e.value("reason", "") == reason)
          notes.push_back(e.value("note", e.value("message", "")));
      }
    }
    return notes;
  }

  // The Eviction API, Events and leadership of a KubeSource on the fake API server.
  std::unique_ptr<KubeSource> startKube() {
    auto created = KubeSource::create(testsupport::testSettings(kubeconfig), mirror,
                                      std::make_shared<SystemClock>());
    EXPECT_TRUE(created.ok()) << created.error();
    if (!created.ok()) return nullptr;
    std::unique_ptr<KubeSource> kube = std::move(created).value();
    kube->start();
    EXPECT_TRUE(
        k8s::fake::waitUntil([&] { return kube->ready().isOk() && kube->isLeader(); }, 10s));
    return kube;
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
  const std::unique_ptr<KubeSource> started = startKube();
  ASSERT_NE(started, nullptr);
  KubeSource& kube = *started;
  auto scorer = policy::makeScorer(policy::kDefaultScorer);
  api::ExtenderService service(mirror, *scorer, kube.binder(), [&] { return kube.ready(); });
  ConsolidationSettings settings;
  settings.enabled = true;
  settings.holdFor = 60s;
  ConsolidationRunner runner(mirror, settings, std::make_shared<SystemClock>(), &kube);
  int movedHook = 0;  // what serve feeds gpufair_consolidation_moves_total and the gauge from
  int waitingGauge = -1;
  runner.setHooks({[&] { ++movedHook; }, [&](int waiting) { waitingGauge = waiting; }});

  fake->create("/api/v1/namespaces/team-b/pods", gpuPod("team-b", "big", 8, "", false, 0));
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return mirror.findPod("uid-big") != nullptr; }, 10s));
  EXPECT_EQ(schedule(service, "team-b", "big"), "");  // no node has 8 free

  const ConsolidationRoundStats stats = runner.controller().runOnce();
  EXPECT_EQ(stats.fragmented, 1);
  ASSERT_EQ(stats.planned, 1);
  EXPECT_LE(stats.moved, 2);
  EXPECT_EQ(movedHook, stats.moved);
  EXPECT_EQ(waitingGauge, 1) << "big waits on fragmentation alone";
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
        return !eventNotes("MovedForConsolidation").empty() && !eventNotes("Consolidating").empty();
      },
      10s));
  for (const std::string& note : eventNotes("MovedForConsolidation")) {
    EXPECT_NE(note.find("moved to make room for team-b/big (8 GPUs)"), std::string::npos) << note;
  }
  // Once the watch confirms both bindings, the plan is done and nothing stays held.
  EXPECT_TRUE(
      k8s::fake::waitUntil([&] { return runner.controller().runOnce().inFlight == 0; }, 10s))
      << [&] {
           std::string held;
           for (const auto& r : mirror.reservations()) held += policy::describe(r) + "; ";
           return held;
         }();
  EXPECT_EQ(waitingGauge, 0) << "nothing waits on fragmentation any more";
  EXPECT_EQ(movedHook, stats.moved) << "nothing moved again";
  runner.stop();
  kube.stop();
}

// The Job does not recreate the evicted pod (suspended, say) and kube-scheduler never comes back
// for big: once the timeout passes, the controller gives up, releases the holds on the freed node
// and on the mover's destination, and tells the waiting pod in a Warning Event.
TEST_F(ConsolidationClusterTest, GivesUpAfterTheTimeoutReleasesTheHoldsAndSaysSo) {
  const std::unique_ptr<KubeSource> kube = startKube();
  ASSERT_NE(kube, nullptr);
  // The controller's clock starts at the wall clock's now (the pods' start times are real) and
  // moves only when the test says.
  const auto clock = std::make_shared<testing::ManualClock>(SystemClock().now());
  ConsolidationSettings settings;
  settings.enabled = true;
  settings.holdFor = 60s;
  ConsolidationRunner runner(mirror, settings, clock, kube.get());
  fake->create("/api/v1/namespaces/team-b/pods", gpuPod("team-b", "big", 8, "", false, 0));
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return mirror.findPod("uid-big") != nullptr; }, 10s));

  ASSERT_EQ(runner.controller().runOnce().planned, 1);
  std::map<std::string, std::string> held;
  for (const auto& r : mirror.reservations()) held[r.node] = r.holderName;
  EXPECT_EQ(held, (std::map<std::string, std::string>{{"node-1", "replacement of team-a/a6"},
                                                      {"node-4", "team-b/big"}}));
  // The eviction deleted a6; once the watch says so, node-4 has room for big without moves.
  ASSERT_TRUE(k8s::fake::waitUntil([&] { return mirror.findPod("uid-a6") == nullptr; }, 10s));
  clock->advance(30s);
  EXPECT_EQ(runner.controller().runOnce().inFlight, 1) << "still within the timeout";
  EXPECT_EQ(mirror.reservations().size(), 2U);
  clock->advance(31s);
  const ConsolidationRoundStats stats = runner.controller().runOnce();
  EXPECT_EQ(stats.gaveUp, 1);
  EXPECT_EQ(stats.inFlight, 0);
  EXPECT_TRUE(mirror.reservations().empty());
  EXPECT_EQ(fake->requests("POST", "/api/v1/namespaces/team-a/pods/").size(), 1U)
      << "nothing evicted again";
  ASSERT_TRUE(
      k8s::fake::waitUntil([&] { return !eventNotes("ConsolidationGaveUp").empty(); }, 10s));
  const std::vector<std::string> notes = eventNotes("ConsolidationGaveUp");
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("room made on node-4 was not taken in time; holds released"),
            std::string::npos)
      << notes[0];
  for (const auto& e : fake->list("/api/v1/namespaces/team-b/events")) {
    if (e.value("reason", "") == "ConsolidationGaveUp") {
      EXPECT_EQ(e.value("type", ""), "Warning");
    }
  }
  runner.stop();
  kube->stop();
}

}  // namespace
}  // namespace gpufair::app
