// A fractional pod's GPU share is held from its scheduling cycle on (the one node /filter answers,
// else the node /prioritize scores best): kube-scheduler counts nothing for gpufair.io/gpu-milli
// (ignoredByScheduler) while the pod's bind is in flight, so without the hold the next pods'
// /filter got the same share and their binds were refused.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/api/extender_service.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::parseJson;
using testsupport::podJson;

// A pod asking for `milli` thousandths of one GPU, as the shipped scheduler config routes them.
json fractionalPod(const std::string& name, int milli) {
  json pod = podJson("team-a", name, "uid-" + name, 0);
  pod["spec"]["containers"][0]["resources"] = {
      {"limits", {{"gpufair.io/gpu-milli", std::to_string(milli)}}}};
  return pod;
}

// The golden cluster plus `one-gpu`, a node with a single GPU; kube-scheduler offers only it.
class FilterHoldTest : public ::testing::Test {
 protected:
  FilterHoldTest() {
    cluster.mirror.upsertNode(testing::MakeNode("one-gpu").gpus(1));
    service.setFilterMode(FilterMode{1});
  }
  json filter(const json& pod, const std::vector<std::string>& nodes = {"one-gpu"}) {
    const Response response =
        service.handle(Request{"POST", "/filter", filterArgs(pod, nodes).dump()});
    EXPECT_EQ(response.status, 200) << response.body;
    return parseJson(response.body);
  }
  // The node /prioritize scores best (the first of the highest).
  std::string prioritize(const json& pod, const std::vector<std::string>& nodes) {
    const Response response =
        service.handle(Request{"POST", "/prioritize", filterArgs(pod, nodes).dump()});
    EXPECT_EQ(response.status, 200) << response.body;
    std::string best;
    int top = -1;
    for (const json& score : parseJson(response.body)) {
      if (score.at("Score").get<int>() > top) {
        top = score.at("Score").get<int>();
        best = score.at("Host").get<std::string>();
      }
    }
    return best;
  }
  std::string bind(const std::string& name, const std::string& node = "one-gpu") {
    const json args = {
        {"PodName", name}, {"PodNamespace", "team-a"}, {"PodUID", "uid-" + name}, {"Node", node}};
    const Response response = service.handle(Request{"POST", "/bind", args.dump()});
    EXPECT_EQ(response.status, 200) << response.body;
    return parseJson(response.body).value("Error", "no Error field");
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST_F(FilterHoldTest, TheNextPodIsNotAnsweredTheShareHeldForABindInFlight) {
  EXPECT_EQ(filter(fractionalPod("a", 600)).at("NodeNames"), json::array({"one-gpu"}));
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-a"));
  // Before a's /bind: 0.4 GPUs are left on one-gpu, not the 1 GPU kube-scheduler still sees.
  const json b = filter(fractionalPod("b", 600));
  EXPECT_EQ(b.at("NodeNames"), json::array()) << b.dump();
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-b"));
  // a's /bind finds its share held and binds with the GPU chosen at /filter.
  const int gpu = cluster.mirror.findPod("uid-a")->gpuIndex;
  EXPECT_EQ(gpu, 0);
  EXPECT_EQ(bind("a"), "");
  ASSERT_EQ(cluster.binder.bindings().size(), 1u);
  EXPECT_EQ(cluster.binder.bindings()[0].uid, "uid-a");
  EXPECT_EQ(cluster.mirror.findPod("uid-a")->gpuIndex, gpu);
  // A 0.4-GPU pod still fits beside it.
  EXPECT_EQ(filter(fractionalPod("c", 400)).at("NodeNames"), json::array({"one-gpu"}));
}

TEST_F(FilterHoldTest, AskingAgainDropsThePodsOwnHoldFirst) {
  ASSERT_EQ(filter(fractionalPod("a", 600)).at("NodeNames"), json::array({"one-gpu"}));
  // kube-scheduler tries a again (a plugin of its own failed after /filter): its earlier hold is
  // not counted against it, and it is held once.
  EXPECT_EQ(filter(fractionalPod("a", 600)).at("NodeNames"), json::array({"one-gpu"}));
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-a"));
  EXPECT_EQ(filter(fractionalPod("b", 400)).at("NodeNames"), json::array({"one-gpu"}));
}

TEST_F(FilterHoldTest, AHoldWithoutBindEndsWithAssumeTtl) {
  ASSERT_EQ(filter(fractionalPod("a", 600)).at("NodeNames"), json::array({"one-gpu"}));
  cluster.clock->advance(31s);  // Mirror's assumeTtl is 30 s
  cluster.mirror.expire();
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-a"));
  EXPECT_EQ(filter(fractionalPod("b", 600)).at("NodeNames"), json::array({"one-gpu"}));
}

// Whole GPUs kube-scheduler counts itself; a gang member binds only into its gang's reservation,
// which /bind checks. In every mode one feasible node is where kube-scheduler binds.
TEST_F(FilterHoldTest, OneFeasibleNodeHoldsInEveryModeButNotForWholeGpusOrGangMembers) {
  service.setFilterMode(FilterMode{});
  ASSERT_EQ(filter(fractionalPod("all-mode", 600)).at("NodeNames"), json::array({"one-gpu"}));
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-all-mode"));
  cluster.mirror.forget("uid-all-mode");
  service.setFilterMode(FilterMode{1});
  ASSERT_EQ(filter(podJson("team-a", "whole", "uid-whole", 1)).at("NodeNames"),
            json::array({"one-gpu"}));
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-whole"));
  json member = fractionalPod("member", 600);
  member["metadata"]["labels"] = {{"gpufair.io/gang", "g"}};
  member["metadata"]["annotations"] = {{"gpufair.io/gang-size", "2"}};
  filter(member);
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-member"));
}

// All and top-N modes answer several nodes and kube-scheduler asks /prioritize: the share is held
// on the node scored best, so the next pod is not given it; /bind to that node binds there.
TEST_F(FilterHoldTest, PrioritizeHoldsTheShareOnTheNodeItScoresBest) {
  cluster.mirror.upsertNode(testing::MakeNode("one-gpu-b").gpus(1));
  for (const FilterMode mode : {FilterMode{}, FilterMode{3}}) {
    service.setFilterMode(mode);
    const std::vector<std::string> both = {"one-gpu", "one-gpu-b"};
    const std::string a = "a" + std::to_string(mode.keep), b = "b" + std::to_string(mode.keep);
    ASSERT_EQ(filter(fractionalPod(a, 600), both).at("NodeNames").size(), 2u);
    EXPECT_FALSE(cluster.mirror.isAssumed("uid-" + a)) << "two nodes: nothing held at /filter";
    const std::string best = prioritize(fractionalPod(a, 600), both);
    EXPECT_EQ(cluster.mirror.findPod("uid-" + a)->nodeName, best);
    const json other = filter(fractionalPod(b, 600), both);
    ASSERT_EQ(other.at("NodeNames").size(), 1u) << other.dump();
    EXPECT_NE(other.at("NodeNames")[0], best);
    EXPECT_EQ(bind(a, best), "");
    EXPECT_EQ(bind(b, other.at("NodeNames")[0]), "");
    cluster.mirror.deletePod("uid-" + a);
    cluster.mirror.deletePod("uid-" + b);
  }
}

// kube-scheduler adds its own plugins' scores and may bind elsewhere: /bind moves the share.
TEST_F(FilterHoldTest, BindToAnotherNodeMovesTheHeldShare) {
  cluster.mirror.upsertNode(testing::MakeNode("one-gpu-b").gpus(1));
  service.setFilterMode(FilterMode{});
  const std::vector<std::string> both = {"one-gpu", "one-gpu-b"};
  filter(fractionalPod("a", 600), both);
  const std::string best = prioritize(fractionalPod("a", 600), both);
  const std::string other = best == "one-gpu" ? "one-gpu-b" : "one-gpu";
  EXPECT_EQ(bind("a", other), "");
  EXPECT_EQ(cluster.mirror.findPod("uid-a")->nodeName, other);
  // The share held on `best` is free again: a 0.9-GPU pod fits there.
  EXPECT_EQ(filter(fractionalPod("c", 900), {best}).at("NodeNames"), json::array({best}));
}

}  // namespace
}  // namespace gpufair::api
