// --filter-mode: /filter answers all the nodes that fit, or only the best one(s) by gpufair's
// scorer, so that kube-scheduler skips its scoring and /prioritize. Reservations (gangs, reclaim
// holds) steer the choice in every mode; hard constraints never change.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "gpufair/api/extender_service.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::parseJson;
using testsupport::podJson;

// The golden cluster: gpu-node-1 (8 GPUs, empty), gpu-node-2 (8 GPUs, 6 used), gpu-node-3
// (cordoned), cpu-node-1 (no GPUs). A 2-GPU pod fits on 1 and 2; packing prefers 2 (it fills it).
class FilterModeTest : public ::testing::Test {
 protected:
  json filter(FilterMode mode, const json& pod) {
    service.setFilterMode(mode);
    const std::string body =
        filterArgs(pod, {"gpu-node-1", "gpu-node-2", "gpu-node-3", "cpu-node-1"}).dump();
    const Response response = service.handle(Request{"POST", "/filter", body});
    EXPECT_EQ(response.status, 200) << response.body;
    return parseJson(response.body);
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST(FilterModeParse, NamesAndErrors) {
  EXPECT_EQ(FilterMode::parse("all")->keep, 0u);
  EXPECT_EQ(FilterMode::parse("best")->keep, 1u);
  EXPECT_EQ(FilterMode::parse("top-3")->keep, 3u);
  EXPECT_EQ(FilterMode::parse("top-3")->name(), "top-3");
  EXPECT_EQ(FilterMode::parse("best")->name(), "best");
  EXPECT_EQ(FilterMode{}.name(), "all");
  for (const char* bad : {"", "top-0", "top-", "top-x", "top-2x", "first", "BEST"}) {
    auto parsed = FilterMode::parse(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error(), std::string("filter mode must be all, best or top-N with N >= 1, "
                                          "not \"") +
                                  bad + "\"");
  }
}

TEST_F(FilterModeTest, AllAnswersEveryNodeThatFits) {
  const json reply = filter(FilterMode{}, podJson("team-a", "p", "uid-p", 2));
  EXPECT_EQ(reply.at("NodeNames"), json::array({"gpu-node-1", "gpu-node-2"}));
  EXPECT_EQ(reply.at("FailedNodes").size(), 0u);
}

// The feasible nodes left out are not answered at all: with a node feasible kube-scheduler reads
// no reasons, and a reason per node would make every answer as large as the cluster.
TEST_F(FilterModeTest, BestAnswersTheNodeGpufairWouldChooseAndNothingAboutTheOthersThatFit) {
  const json reply = filter(FilterMode{1}, podJson("team-a", "p", "uid-p", 2));
  EXPECT_EQ(reply.at("NodeNames"), json::array({"gpu-node-2"}));
  // Nor about the nodes that do not fit: with a node answered kube-scheduler reads no reasons.
  EXPECT_EQ(reply.at("FailedNodes"), json::object()) << reply.dump();
  EXPECT_EQ(reply.at("FailedAndUnresolvableNodes"), json::object()) << reply.dump();
  // A pod that fits one node only gets that node in every mode.
  const json big = filter(FilterMode{1}, podJson("team-a", "big", "uid-big", 4));
  EXPECT_EQ(big.at("NodeNames"), json::array({"gpu-node-1"}));
  EXPECT_EQ(big.at("FailedNodes"), json::object()) << big.dump();
  // A pod that fits nowhere gets every node's reason, hard constraints as unresolvable.
  const json none = filter(FilterMode{1}, podJson("team-a", "huge", "uid-huge", 9));
  EXPECT_EQ(none.at("NodeNames"), json::array());
  EXPECT_EQ(none.at("FailedAndUnresolvableNodes").at("gpu-node-3"),
            "node gpu-node-3 is unschedulable (cordoned)");
  EXPECT_EQ(none.at("FailedNodes").size() + none.at("FailedAndUnresolvableNodes").size(), 4u)
      << none.dump();
}

TEST_F(FilterModeTest, TopNKeepsTheNBest) {
  for (int i = 1; i <= 3; ++i) {
    cluster.mirror.upsertNode(testing::MakeNode("extra-" + std::to_string(i)).gpus(8));
  }
  service.setFilterMode(FilterMode{2});
  const std::string body = filterArgs(podJson("team-a", "p", "uid-p", 2),
                                      {"extra-1", "gpu-node-1", "extra-2", "gpu-node-2", "extra-3"})
                               .dump();
  const json reply = parseJson(service.handle(Request{"POST", "/filter", body}).body);
  ASSERT_EQ(reply.at("NodeNames").size(), 2u);
  EXPECT_EQ(reply.at("NodeNames")[0], "extra-1") << "among equals, kube-scheduler's order";
  EXPECT_EQ(reply.at("NodeNames")[1], "gpu-node-2");
  EXPECT_EQ(reply.at("FailedNodes").size(), 0u) << "the three left out fit: no reasons";
}

// GPUs held for a pod (a reclaim hold, or its gang's plan) win over the scorer's taste.
TEST_F(FilterModeTest, ReservedNodesWinInEveryMode) {
  policy::Reservation hold;
  hold.node = "gpu-node-1";
  hold.gpus = 2 * kMilliPerGpu;
  hold.holder = "uid-held";
  hold.queue = "team-a";
  hold.reason = "reclaim";
  cluster.mirror.reserve(hold, std::chrono::seconds{60});
  for (FilterMode mode : {FilterMode{1}, FilterMode{2}, FilterMode{}}) {
    SCOPED_TRACE(mode.name());
    const json reply = filter(mode, podJson("team-a", "held", "uid-held", 2));
    ASSERT_FALSE(reply.at("NodeNames").empty());
    EXPECT_EQ(reply.at("NodeNames")[0], "gpu-node-1");
    if (mode.keep == 1) {
      EXPECT_EQ(reply.at("NodeNames").size(), 1u);
    }
  }
  // Another pod does not get the held GPUs: on gpu-node-1 only 6 remain for it, 2 on gpu-node-2.
  const json other = filter(FilterMode{1}, podJson("team-a", "other", "uid-other", 2));
  EXPECT_EQ(other.at("NodeNames"), json::array({"gpu-node-2"}));
}

// serve's mirror scores CPU and memory (FitOptions::scoreCpuMemory) but leaves their fit to
// kube-scheduler, whose accounting (overheads, init containers) may differ: a node the mirror
// counts as out of CPU and memory is never refused by /filter, in any mode, nor by /bind.
TEST(FilterCpuMemoryTest, ScoredButNeverRefused) {
  for (FilterMode mode : {FilterMode{}, FilterMode{2}, FilterMode{1}}) {
    SCOPED_TRACE(mode.name());
    Cluster cluster;
    ASSERT_TRUE(cluster.mirror.snapshot()->fitOptions().scoreCpuMemory) << "serve's default";
    ASSERT_FALSE(cluster.mirror.snapshot()->fitOptions().checkCpuMemory);
    cluster.mirror.upsertNode(testing::MakeNode("cpu-full").gpus(8).cpu(8).memGi(64));
    cluster.mirror.upsertPod(testing::MakePod("team-a", "web").cpu(8).memGi(64).on("cpu-full"));
    const policy::NodeState* full = cluster.mirror.snapshot()->findNode("cpu-full");
    ASSERT_NE(full, nullptr);
    ASSERT_EQ(full->cpuFree(), 0);
    ASSERT_EQ(full->memoryFree(), 0);
    ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
    service.setFilterMode(mode);
    json pod = podJson("team-a", "p", "uid-p", 2);
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4";
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "8Gi";
    // kube-scheduler found only cpu-full feasible: gpufair agrees.
    const json only = parseJson(
        service.handle(Request{"POST", "/filter", filterArgs(pod, {"cpu-full"}).dump()}).body);
    EXPECT_EQ(only.at("NodeNames"), json::array({"cpu-full"})) << only.dump();
    EXPECT_TRUE(only.at("FailedNodes").empty()) << only.dump();
    if (mode.keep == 0) {
      const json all = parseJson(
          service
              .handle(Request{"POST", "/filter",
                              filterArgs(pod, {"gpu-node-1", "gpu-node-2", "cpu-full"}).dump()})
              .body);
      EXPECT_EQ(all.at("NodeNames"), json::array({"gpu-node-1", "gpu-node-2", "cpu-full"}));
    }
    const json bind = {
        {"PodName", "p"}, {"PodNamespace", "team-a"}, {"PodUID", "uid-p"}, {"Node", "cpu-full"}};
    const json bound = parseJson(service.handle(Request{"POST", "/bind", bind.dump()}).body);
    EXPECT_EQ(bound.value("Error", "?"), "") << bound.dump();
  }
}

// A gang's first /filter reserves a node for every member (policy::planGang). In every mode each
// member is answered a node its gang holds, first, binds there, and the gang takes all it held.
TEST(FilterModeGangTest, EachMemberIsAnsweredItsGangsNodeInEveryMode) {
  for (FilterMode mode : {FilterMode{}, FilterMode{2}, FilterMode{1}}) {
    SCOPED_TRACE(mode.name());
    Cluster cluster;
    ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
    service.setFilterMode(mode);
    auto heldNodes = [&] {
      std::set<std::string> held;
      for (const auto& r : cluster.mirror.reservations()) {
        if (r.holder == "gang:team-a/train" && r.gpus > 0) held.insert(r.node);
      }
      return held;
    };
    for (int i = 0; i < 2; ++i) {
      const std::string name = "train-" + std::to_string(i);
      json pod = podJson("team-a", name, "uid-" + name, 2);
      pod["metadata"]["labels"] = {{"gpufair.io/gang", "train"}};
      pod["metadata"]["annotations"] = {{"gpufair.io/gang-size", "2"}};
      const std::string body =
          filterArgs(pod, {"gpu-node-1", "gpu-node-2", "gpu-node-3", "cpu-node-1"}).dump();
      const json reply = parseJson(service.handle(Request{"POST", "/filter", body}).body);
      const std::set<std::string> held = heldNodes();
      ASSERT_FALSE(held.empty()) << reply.dump();
      ASSERT_FALSE(reply.at("NodeNames").empty()) << reply.dump();
      const std::string node = reply.at("NodeNames")[0];
      EXPECT_EQ(held.count(node), 1u) << node << " is not held for the gang: " << reply.dump();
      if (mode.keep == 1) {
        EXPECT_EQ(reply.at("NodeNames").size(), 1u);
      }
      const json bind = {
          {"PodName", name}, {"PodNamespace", "team-a"}, {"PodUID", "uid-" + name}, {"Node", node}};
      const json bound = parseJson(service.handle(Request{"POST", "/bind", bind.dump()}).body);
      EXPECT_EQ(bound.value("Error", "?"), "") << bound.dump();
    }
    EXPECT_TRUE(heldNodes().empty()) << "the gang took every GPU held for it";
  }
}

}  // namespace
}  // namespace gpufair::api
