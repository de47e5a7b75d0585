// /bind: assume in the mirror, bind through the Binder, confirm or forget, label borrowed pods.
#include <gtest/gtest.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/common/labels.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::parseJson;
using testsupport::podJson;

// A Binder whose answer the test chooses, recording what it was asked.
class ScriptedBinder final : public state::Binder {
 public:
  Status bind(const policy::Pod& pod, std::string_view node, bool overQuota) override {
    calls.push_back({pod.key(), std::string(node), overQuota, pod.gpuIndex});
    return answer;
  }
  bool confirmsImmediately() const override { return confirms; }

  struct Call {
    std::string pod;
    std::string node;
    bool overQuota;
    int gpuIndex;
  };
  std::vector<Call> calls;
  Status answer;
  bool confirms = false;
};

class BindTest : public ::testing::Test {
 protected:
  json bindArgs(const std::string& ns, const std::string& name, const std::string& uid,
                const std::string& node) {
    return {{"PodName", name}, {"PodNamespace", ns}, {"PodUID", uid}, {"Node", node}};
  }
  Response post(ExtenderService& service, std::string_view target, const json& body) {
    const std::string text = body.dump();
    return service.handle(Request{"POST", target, text});
  }
  // kube-scheduler offers the pod to /filter before it binds it.
  void offer(ExtenderService& service, const std::string& ns, const std::string& name,
             const std::string& uid, int gpus) {
    const Response response =
        post(service, "/filter", filterArgs(podJson(ns, name, uid, gpus), {"gpu-node-1"}));
    ASSERT_EQ(response.status, 200) << response.body;
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST_F(BindTest, BindsAnOfferedPodAndConfirmsItInFileMode) {
  offer(service, "team-a", "train-1", "uid-1", 4);
  const Response response =
      post(service, "/bind", bindArgs("team-a", "train-1", "uid-1", "gpu-node-1"));
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(parseJson(response.body), json({{"Error", ""}}));

  const auto bindings = cluster.binder.bindings();
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0].podKey, "team-a/train-1");
  EXPECT_EQ(bindings[0].uid, "uid-1");
  EXPECT_EQ(bindings[0].node, "gpu-node-1");
  EXPECT_FALSE(bindings[0].overQuota);

  const policy::PodPtr pod = cluster.mirror.findPod("uid-1");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->nodeName, "gpu-node-1");
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-1"));
  EXPECT_FALSE(pod->overQuota);
  EXPECT_EQ(cluster.mirror.snapshot()->findNode("gpu-node-1")->used(), 4 * kMilliPerGpu);
}

TEST_F(BindTest, BorrowedPodIsLabelledOverQuotaAndStaysBound) {
  offer(service, "team-a", "base", "uid-base", 4);  // team-a's 4 deserved GPUs
  ASSERT_EQ(
      parseJson(post(service, "/bind", bindArgs("team-a", "base", "uid-base", "gpu-node-1")).body)
          .at("Error"),
      "");
  offer(service, "team-a", "extra", "uid-extra", 4);  // beyond deserved: borrowed
  const Response response =
      post(service, "/bind", bindArgs("team-a", "extra", "uid-extra", "gpu-node-1"));
  EXPECT_EQ(parseJson(response.body).at("Error"), "");
  EXPECT_TRUE(cluster.binder.bindings().back().overQuota);

  const policy::PodPtr pod = cluster.mirror.findPod("uid-extra");
  ASSERT_NE(pod, nullptr);
  EXPECT_TRUE(pod->overQuota);
  EXPECT_EQ(pod->labels.at(kOverQuotaLabel), "true");
  EXPECT_EQ(pod->nodeName, "gpu-node-1");
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-extra"));

  const json snapshot = parseJson(service.handle({"GET", "/debug/snapshot", ""}).body);
  bool found = false;
  for (const auto& entry : snapshot.at("pods")) {
    if (entry.at("uid") != "uid-extra") continue;
    found = true;
    EXPECT_EQ(entry.at("overQuota"), true);
    EXPECT_EQ(entry.at("node"), "gpu-node-1");
  }
  EXPECT_TRUE(found);
  for (const auto& queue : snapshot.at("queues")) {
    if (queue.at("name") == "team-a") {
      EXPECT_EQ(queue.at("overQuota"), 4);
    }
  }
}

TEST_F(BindTest, PodNeverOfferedIsAnErrorInTheResult) {
  const Response response =
      post(service, "/bind", bindArgs("team-a", "stranger", "uid-x", "gpu-node-1"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(parseJson(response.body),
            json({{"Error",
                   "pod team-a/stranger (uid uid-x) was never offered to gpufair's "
                   "filter; cannot bind"}}));
  EXPECT_TRUE(cluster.binder.bindings().empty());
}

TEST_F(BindTest, PodThatNoLongerFitsIsRefused) {
  offer(service, "team-a", "train-1", "uid-1", 4);
  const Response response =
      post(service, "/bind", bindArgs("team-a", "train-1", "uid-1", "gpu-node-2"));
  const std::string error = parseJson(response.body).at("Error").get<std::string>();
  EXPECT_NE(error.find("no longer fits on node gpu-node-2: fewer than"), std::string::npos)
      << error;
  EXPECT_TRUE(cluster.binder.bindings().empty());
  EXPECT_TRUE(cluster.mirror.findPod("uid-1")->nodeName.empty());
}

TEST_F(BindTest, UidOfAnotherPodIsRefused) {
  offer(service, "team-a", "train-1", "uid-1", 4);
  const Response response =
      post(service, "/bind", bindArgs("team-a", "other", "uid-1", "gpu-node-1"));
  EXPECT_EQ(parseJson(response.body).at("Error"),
            "PodUID uid-1 belongs to pod team-a/train-1, not team-a/other; cannot bind");
}

TEST_F(BindTest, BinderFailureForgetsTheAssumption) {
  ScriptedBinder binder;
  binder.answer = Status::error("pods \"train-1\" is forbidden: quota exceeded");
  ExtenderService scripted(cluster.mirror, *cluster.scorer, binder);
  offer(scripted, "team-a", "train-1", "uid-1", 4);
  const Response response =
      post(scripted, "/bind", bindArgs("team-a", "train-1", "uid-1", "gpu-node-1"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(parseJson(response.body).at("Error"), "pods \"train-1\" is forbidden: quota exceeded");
  ASSERT_EQ(binder.calls.size(), 1u);
  const policy::PodPtr pod = cluster.mirror.findPod("uid-1");
  EXPECT_TRUE(pod->nodeName.empty());
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-1"));
  EXPECT_EQ(cluster.mirror.snapshot()->findNode("gpu-node-1")->used(), 0);
}

TEST_F(BindTest, ClusterBinderLeavesThePodAssumedForTheWatchToConfirm) {
  ScriptedBinder binder;
  ExtenderService scripted(cluster.mirror, *cluster.scorer, binder);
  offer(scripted, "team-a", "train-1", "uid-1", 4);
  EXPECT_EQ(
      parseJson(post(scripted, "/bind", bindArgs("team-a", "train-1", "uid-1", "gpu-node-1")).body)
          .at("Error"),
      "");
  ASSERT_EQ(binder.calls.size(), 1u);
  EXPECT_EQ(binder.calls[0].pod, "team-a/train-1");
  EXPECT_EQ(binder.calls[0].node, "gpu-node-1");
  const policy::PodPtr pod = cluster.mirror.findPod("uid-1");
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-1"));
  EXPECT_EQ(pod->nodeName, "gpu-node-1");
}

TEST_F(BindTest, TheBinderIsGivenTheGpuChosenForAFractionalPod) {
  ScriptedBinder binder;
  ExtenderService scripted(cluster.mirror, *cluster.scorer, binder);
  json notebook = podJson("team-a", "notebook", "uid-n", 0);
  notebook["spec"]["containers"][0]["resources"] = json::object();
  notebook["metadata"]["annotations"] = {{"gpufair.io/gpu-fraction", "0.5"}};
  ASSERT_EQ(post(scripted, "/filter", filterArgs(notebook, {"gpu-node-1"})).status, 200);
  EXPECT_EQ(
      parseJson(post(scripted, "/bind", bindArgs("team-a", "notebook", "uid-n", "gpu-node-1")).body)
          .at("Error"),
      "");
  ASSERT_EQ(binder.calls.size(), 1u);
  const policy::PodPtr assumed = cluster.mirror.findPod("uid-n");
  ASSERT_NE(assumed, nullptr);
  EXPECT_GE(assumed->gpuIndex, 0);
  EXPECT_EQ(binder.calls[0].gpuIndex, assumed->gpuIndex);
}

TEST_F(BindTest, PodWithoutUidIsFoundByNamespaceAndName) {
  json pod = podJson("team-a", "no-uid", "", 1);
  pod["metadata"].erase("uid");
  ASSERT_EQ(post(service, "/filter", filterArgs(pod, {"gpu-node-1"})).status, 200);
  const Response response = post(service, "/bind",
                                 json{{"PodName", "no-uid"},
                                      {"PodNamespace", "team-a"},
                                      {"PodUID", nullptr},
                                      {"Node", "gpu-node-1"}});
  EXPECT_EQ(parseJson(response.body).at("Error"), "");
  EXPECT_EQ(cluster.mirror.findPod("team-a/no-uid")->nodeName, "gpu-node-1");
}

TEST_F(BindTest, MemoryBinderKeepsABoundedLog) {
  MemoryBinder binder;
  policy::Pod pod = testing::MakePod("ns", "p");
  for (std::size_t i = 0; i < MemoryBinder::kMaxLog + 5; ++i) {
    ASSERT_TRUE(binder.bind(pod, "node-" + std::to_string(i), false).isOk());
  }
  const auto bindings = binder.bindings();
  ASSERT_EQ(bindings.size(), MemoryBinder::kMaxLog);
  EXPECT_EQ(bindings.front().node, "node-5");
  EXPECT_TRUE(binder.confirmsImmediately());
}

}  // namespace
}  // namespace gpufair::api

namespace gpufair::api {
namespace {

// Records what the service reports for Events.
class RecordingObserver final : public state::DecisionObserver {
 public:
  void rejected(const policy::Pod& pod, const std::string& reason) override {
    rejections.push_back(pod.key() + ": " + reason);
  }
  void borrowed(const policy::Pod& pod, const std::string& node,
                const std::string& queue) override {
    borrows.push_back(pod.key() + " on " + node + " from " + queue);
  }
  std::vector<std::string> rejections;
  std::vector<std::string> borrows;
};

TEST_F(BindTest, ObserverHearsOfRejectionsAndBorrows) {
  RecordingObserver observer;
  service.setObserver(&observer);
  offer(service, "team-a", "base", "uid-base", 4);
  ASSERT_EQ(
      parseJson(post(service, "/bind", bindArgs("team-a", "base", "uid-base", "gpu-node-1")).body)
          .at("Error"),
      "");
  EXPECT_TRUE(observer.borrows.empty());  // within deserved: nothing to say
  offer(service, "team-a", "extra", "uid-extra", 4);
  ASSERT_EQ(
      parseJson(post(service, "/bind", bindArgs("team-a", "extra", "uid-extra", "gpu-node-1")).body)
          .at("Error"),
      "");
  ASSERT_EQ(observer.borrows.size(), 1u);
  EXPECT_EQ(observer.borrows[0], "team-a/extra on gpu-node-1 from team-a");

  offer(service, "team-a", "too-big", "uid-too-big", 64);  // fits no node
  ASSERT_EQ(observer.rejections.size(), 1u);
  EXPECT_NE(observer.rejections[0].find("team-a/too-big: "), std::string::npos)
      << observer.rejections[0];
}

}  // namespace
}  // namespace gpufair::api
