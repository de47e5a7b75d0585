// Faults on the API side, end to end: gpufair (KubeSource + Mirror + ExtenderService) against the
// in-process fake kube-apiserver, driven as kube-scheduler drives it (/filter with every node,
// /prioritize when several pass, /bind). After each fault: no GPU lost or double-counted (the
// mirror equals the API server), no quota exceeded, every schedulable pod bound.
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpufair/api/extender_service.h"
#include "gpufair/policy/scorer.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "kube_fixture.h"
#include "kube_source.h"

namespace gpufair::app {
namespace {

using k8s::fake::waitUntil;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kQuotas =
    "queues:\n- name: team-a\n  namespaces: [team-a]\n  gpu: {deserved: 8, limit: 12}\n"
    "- name: team-b\n  namespaces: [team-b]\n  gpu: {deserved: 8}\n";

json gpuPod(const std::string& ns, const std::string& name, int gpus) {
  return k8s::fake::makePod(ns, name, "", {}, gpus);
}

int gpusOf(const json& pod) {
  return std::stoi(
      pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].get<std::string>());
}

// One gpufair replica: its own mirror, source and service, as one `gpufair serve` process.
struct Replica {
  state::Mirror mirror{std::make_shared<SystemClock>()};
  std::unique_ptr<KubeSource> kube;
  policy::ScorerPtr scorer = policy::makeScorer(policy::kDefaultScorer);
  std::unique_ptr<api::ExtenderService> service;

  explicit Replica(const KubeSettings& settings) {
    auto created = KubeSource::create(settings, mirror, std::make_shared<SystemClock>());
    EXPECT_TRUE(created.ok()) << created.error();
    kube = std::move(created.value());
    service = std::make_unique<api::ExtenderService>(mirror, *scorer, kube->binder(),
                                                     [this] { return kube->ready(); });
    service->setObserver(&kube->decisions());
    service->setDecisionGate([this] { return kube->consistent(); });
    kube->start();
  }
  ~Replica() { kube->stop(); }
  json post(const std::string& verb, const json& body) {
    const api::Response r = service->handle({"POST", verb, body.dump()});
    EXPECT_EQ(r.status, 200) << verb << ": " << r.body;
    return json::parse(r.body);
  }
};

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testsupport::initLoggingBeforeThreads();
    fake = std::make_unique<k8s::fake::FakeApiServer>();
    fake->start();
    kubeconfig = testsupport::writeKubeconfig(*fake, "faults", "x");
    for (int i = 0; i < 4; ++i) fake->create("/api/v1/nodes", k8s::fake::makeNode(node(i), 8));
    fake->create("/api/v1/namespaces/gpufair-system/configmaps",
                 testsupport::quotaConfigMap(kQuotas));
  }
  void TearDown() override { std::remove(kubeconfig.c_str()); }

  static std::string node(int i) { return "n" + std::to_string(i); }
  KubeSettings settings() const { return testsupport::testSettings(kubeconfig); }
  std::unique_ptr<Replica> startReplica() {
    auto replica = std::make_unique<Replica>(settings());
    EXPECT_TRUE(waitUntil([&] { return replica->kube->consistent().isOk(); }, 20s));
    return replica;
  }
  void createPods(const std::string& ns, const std::string& prefix, int count, int gpus) {
    for (int i = 0; i < count; ++i) {
      fake->create("/api/v1/namespaces/" + ns + "/pods",
                   gpuPod(ns, prefix + std::to_string(i), gpus));
    }
  }
  std::vector<json> unbound() const {
    std::vector<json> out;
    for (const auto& pod : fake->list("/api/v1/pods")) {
      if (pod["spec"].value("nodeName", "").empty()) out.push_back(pod);
    }
    return out;
  }
  // One attempt per pending pod, as kube-scheduler makes it. Returns how many were bound.
  int scheduleAll(Replica& r) {
    int bound = 0;
    std::vector<std::string> names;
    for (int i = 0; i < 4; ++i) names.push_back(node(i));
    for (const json& pod : unbound()) {
      // Bounded: the pod may be gone, or the mirror may not have seen it yet.
      const json args = {{"Pod", pod}, {"NodeNames", names}};
      const json filtered = r.post("/filter", args);
      const json& feasible = filtered["NodeNames"];
      if (!feasible.is_array() || feasible.empty()) continue;
      std::string best = feasible[0];
      if (feasible.size() > 1) {
        int top = -1;
        for (const auto& s : r.post("/prioritize", {{"Pod", pod}, {"NodeNames", feasible}})) {
          if (s["Score"].get<int>() <= top) continue;
          top = s["Score"].get<int>();
          best = s["Host"].get<std::string>();
        }
      }
      const json result = r.post("/bind", {{"PodName", pod["metadata"]["name"]},
                                           {"PodNamespace", pod["metadata"]["namespace"]},
                                           {"PodUID", pod["metadata"]["uid"]},
                                           {"Node", best}});
      if (result["Error"] == "") ++bound;
    }
    return bound;
  }
  // Used GPUs per node and per namespace as the API server has them.
  std::map<std::string, int> truth(bool byNamespace = false) const {
    std::map<std::string, int> used;
    for (const auto& pod : fake->list("/api/v1/pods")) {
      const std::string at = pod["spec"].value("nodeName", "");
      if (at.empty()) continue;
      used[byNamespace ? pod["metadata"]["namespace"].get<std::string>() : at] += gpusOf(pod);
    }
    return used;
  }
  // The mirror converges to the API server's truth: nothing lost, nothing counted twice.
  void expectMirrorMatchesServer(Replica& r) {
    auto mirrored = [&] {
      std::map<std::string, int> used;
      auto snap = r.mirror.snapshot();
      for (const auto& n : snap->nodes()) {
        if (n->used() > 0) used[n->name()] = static_cast<int>(n->used() / kMilliPerGpu);
      }
      return used;
    };
    EXPECT_TRUE(waitUntil([&] { return mirrored() == truth(); }, 20s));
    EXPECT_EQ(mirrored(), truth());
  }
  void expectQuotaHeld() { EXPECT_LE(truth(true)["team-a"], 12) << "team-a's limit is 12 GPUs"; }

  std::unique_ptr<k8s::fake::FakeApiServer> fake;
  std::string kubeconfig;
};

TEST_F(FaultsTest, ApiServerRestartMidBurst) {
  auto r = startReplica();
  createPods("team-b", "b", 4, 2);
  EXPECT_EQ(scheduleAll(*r), 4);
  createPods("team-b", "late", 2, 2);
  ASSERT_TRUE(waitUntil([&] { return r->mirror.snapshot()->pending().size() == 2; }, 20s));
  fake->stop();  // mid-burst: bindings fail, watches break
  EXPECT_EQ(scheduleAll(*r), 0);
  expectMirrorMatchesServer(*r);  // failed bindings hold nothing
  fake->start();
  createPods("team-a", "a", 8, 2);
  ASSERT_TRUE(waitUntil([&] { return (scheduleAll(*r), unbound().size() == 2); }, 30s))
      << "every team-b pod and 6 of team-a's 8 (its limit) bound";
  expectQuotaHeld();
  expectMirrorMatchesServer(*r);
}

TEST_F(FaultsTest, WatchesExpiredAfterCompaction) {
  auto r = startReplica();
  createPods("team-b", "b", 4, 4);
  EXPECT_EQ(scheduleAll(*r), 4);
  expectMirrorMatchesServer(*r);
  fake->stop();
  // While gpufair is cut off: pods finish and are deleted, new ones are bound by another hand.
  fake->remove("/api/v1/namespaces/team-b/pods/b0");
  fake->remove("/api/v1/namespaces/team-b/pods/b1");
  fake->compact();  // the watches' resourceVersions are gone: 410, relist
  fake->start();
  expectMirrorMatchesServer(*r);
  ASSERT_TRUE(waitUntil([&] { return r->kube->consistent().isOk(); }, 20s));
  createPods("team-a", "a", 4, 4);
  ASSERT_TRUE(waitUntil([&] { return (scheduleAll(*r), unbound().size() == 1); }, 20s))
      << "3 of 4 fit team-a's limit of 12";
  expectQuotaHeld();
  expectMirrorMatchesServer(*r);
}

TEST_F(FaultsTest, GpufairKilledMidBindAndRestarted) {
  auto first = startReplica();
  createPods("team-a", "a", 6, 2);
  EXPECT_EQ(scheduleAll(*first), 6);  // team-a at its limit of 12
  // kill: the process ends with bindings posted and possibly unconfirmed.
  first.reset();
  auto second = std::make_unique<Replica>(settings());
  // The restart race: kube-scheduler's calls arrive before the lists are complete.
  createPods("team-a", "late", 1, 1);
  const json pod = unbound().front();
  const json early = second->post("/filter", {{"Pod", pod}, {"NodeNames", {"n0", "n1"}}});
  EXPECT_TRUE(early["NodeNames"].empty()) << "starting, or team-a at its limit: " << early;
  const json bind = second->post("/bind", {{"PodName", "late0"},
                                           {"PodNamespace", "team-a"},
                                           {"PodUID", pod["metadata"]["uid"]},
                                           {"Node", "n0"}});
  EXPECT_NE(bind["Error"], "");
  ASSERT_TRUE(waitUntil([&] { return second->kube->consistent().isOk(); }, 20s));
  EXPECT_EQ(scheduleAll(*second), 0) << "team-a is at its limit";
  expectQuotaHeld();
  expectMirrorMatchesServer(*second);
}

TEST_F(FaultsTest, KubeSchedulerRestartedRetriesBoundPods) {
  auto r = startReplica();
  createPods("team-b", "b", 3, 2);
  const std::vector<json> pods = unbound();
  EXPECT_EQ(scheduleAll(*r), 3);
  // A restarted kube-scheduler that missed the bindings offers the same pods again.
  for (const json& pod : pods) {
    const json result = r->post("/bind", {{"PodName", pod["metadata"]["name"]},
                                          {"PodNamespace", pod["metadata"]["namespace"]},
                                          {"PodUID", pod["metadata"]["uid"]},
                                          {"Node", "n3"}});
    EXPECT_NE(result["Error"], "");
  }
  expectMirrorMatchesServer(*r);
}

TEST_F(FaultsTest, QuotaConfigMapBrokenMidRunKeepsTheLastGoodLimit) {
  auto r = startReplica();
  fake->update("/api/v1/namespaces/gpufair-system/configmaps/queues",
               testsupport::quotaConfigMap("queues:\n- name: team-a\n  gpu: {deserved: lots}\n"));
  ASSERT_TRUE(waitUntil([&] { return !r->kube->quotaHealthy(); }, 20s));
  createPods("team-a", "a", 8, 2);
  ASSERT_TRUE(waitUntil([&] { return (scheduleAll(*r), truth(true)["team-a"] == 12); }, 20s));
  EXPECT_EQ(scheduleAll(*r), 0);
  expectQuotaHeld();
  expectMirrorMatchesServer(*r);
}

}  // namespace
}  // namespace gpufair::app
