// No decision on a partial view: while the decision gate says gpufair is starting (first lists not
// complete, or a relist under way), every verb refuses, and a restart can't push a queue over its
// limit. Once the gate opens, the same requests are decided as usual.
#include <atomic>

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

class DecisionGateTest : public ::testing::Test {
 protected:
  DecisionGateTest() {
    service.setDecisionGate([this]() -> Status {
      if (open) return Status::ok();
      return Status::error("waiting for the first list of pods");
    });
  }
  Response post(std::string_view target, const json& body) {
    const std::string text = body.dump();
    return service.handle(Request{"POST", target, text});
  }
  static json bindArgs(const std::string& name, const std::string& uid, const std::string& node) {
    return {{"PodName", name}, {"PodNamespace", "team-a"}, {"PodUID", uid}, {"Node", node}};
  }

  std::atomic<bool> open{false};
  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST_F(DecisionGateTest, FilterRefusesEveryNodeWithTheReasonWhileStarting) {
  const json args =
      filterArgs(podJson("team-a", "train-1", "uid-1", 1), {"gpu-node-1", "gpu-node-2"});
  Response response = post("/filter", args);
  ASSERT_EQ(response.status, 200) << response.body;
  json reply = parseJson(response.body);
  EXPECT_TRUE(reply.at("NodeNames").empty());
  ASSERT_EQ(reply.at("FailedNodes").size(), 2u);
  const std::string reason = reply.at("FailedNodes").at("gpu-node-1");
  EXPECT_EQ(reason,
            "gpufair is starting: waiting for the first list of pods; no decision on a partial "
            "view of the cluster, kube-scheduler retries");
  EXPECT_TRUE(reply.at("FailedAndUnresolvableNodes").empty()) << "kube-scheduler must retry";
  EXPECT_EQ(reply.at("Error"), "");

  open = true;
  reply = parseJson(post("/filter", args).body);
  EXPECT_EQ(reply.at("NodeNames"), json::array({"gpu-node-1", "gpu-node-2"}));
}

TEST_F(DecisionGateTest, PrioritizeScoresZeroAndPreemptProposesNothingWhileStarting) {
  const json args =
      filterArgs(podJson("team-a", "train-1", "uid-1", 1), {"gpu-node-1", "gpu-node-2"});
  json scores = parseJson(post("/prioritize", args).body);
  ASSERT_EQ(scores.size(), 2u);
  for (const auto& s : scores) EXPECT_EQ(s.at("Score"), 0);

  const json preempt = {
      {"Pod", podJson("team-a", "train-1", "uid-1", 8)},
      {"NodeNameToMetaVictims",
       {{"gpu-node-2", {{"Pods", {{{"UID", "uid-sweep"}}}}, {"NumPDBViolations", 0}}}}}};
  Response response = post("/preempt", preempt);
  ASSERT_EQ(response.status, 200) << response.body;
  const json victims = parseJson(response.body).at("NodeNameToMetaVictims");
  EXPECT_TRUE(victims.is_null() || victims.empty()) << victims;
}

// The race of a restart: kube-scheduler's /filter and /bind arrive before the quota and pod lists
// are complete. A bind then must not happen, or a queue at its limit goes over it.
TEST_F(DecisionGateTest, BindRefusesWhileStartingAndBindsOnceOpen) {
  open = true;
  ASSERT_EQ(
      post("/filter", filterArgs(podJson("team-a", "train-1", "uid-1", 1), {"gpu-node-1"})).status,
      200);
  open = false;
  Response refused = post("/bind", bindArgs("train-1", "uid-1", "gpu-node-1"));
  ASSERT_EQ(refused.status, 200);
  EXPECT_EQ(parseJson(refused.body).at("Error"),
            "gpufair is starting: waiting for the first list of pods; no decision on a partial "
            "view of the cluster, kube-scheduler retries");
  EXPECT_TRUE(cluster.binder.bindings().empty());
  EXPECT_EQ(cluster.mirror.snapshot()->findNode("gpu-node-1")->used(), 0);

  open = true;
  Response bound = post("/bind", bindArgs("train-1", "uid-1", "gpu-node-1"));
  EXPECT_EQ(parseJson(bound.body).at("Error"), "");
  EXPECT_EQ(cluster.binder.bindings().size(), 1u);
}

TEST_F(DecisionGateTest, AGateThatThrowsRefusesWithItsMessage) {
  service.setDecisionGate([]() -> Status { throw std::runtime_error("boom"); });
  const json reply =
      parseJson(post("/filter", filterArgs(podJson("team-a", "t", "u", 1), {"gpu-node-1"})).body);
  EXPECT_EQ(reply.at("FailedNodes").at("gpu-node-1"),
            "gpufair is starting: the readiness check failed: boom; no decision on a partial view "
            "of the cluster, kube-scheduler retries");
}

}  // namespace
}  // namespace gpufair::api
