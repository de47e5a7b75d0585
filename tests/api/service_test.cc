// ExtenderService without sockets: filter, prioritize, health, routing and bad input (preempt:
// preempt_test.cc).
#include <cstdio>

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
using testsupport::readTestdata;

class ServiceTest : public ::testing::Test {
 protected:
  Response call(std::string_view method, std::string_view target, std::string_view body = "") {
    return service.handle(Request{method, target, body});
  }
  Response post(std::string_view target, const json& body) {
    const std::string text = body.dump();
    return call("POST", target, text);
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

TEST_F(ServiceTest, FilterWithNodeNamesSaysWhyEachNodeFails) {
  const Response response = call("POST", "/filter", readTestdata("filter_node_names.json"));
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.contentType, "application/json");
  const json reply = parseJson(response.body);
  EXPECT_TRUE(reply.at("Nodes").is_null());
  EXPECT_EQ(reply.at("NodeNames"), json::array({"gpu-node-1"}));
  const json& failed = reply.at("FailedNodes");
  ASSERT_EQ(failed.size(), 2u) << failed;
  EXPECT_EQ(failed.at("gpu-node-2"), "fewer than 4 GPUs free");
  EXPECT_EQ(failed.at("ghost-node"), "node ghost-node is not in gpufair's cluster view yet");
  const json& unresolvable = reply.at("FailedAndUnresolvableNodes");
  ASSERT_EQ(unresolvable.size(), 2u) << unresolvable;
  EXPECT_EQ(unresolvable.at("gpu-node-3"), "node gpu-node-3 is unschedulable (cordoned)");
  EXPECT_EQ(unresolvable.at("cpu-node-1"), "node cpu-node-1 has 0 GPUs; pod needs 4 GPUs");
  EXPECT_EQ(reply.at("Error"), "");
  EXPECT_EQ(reply.size(), 5u);
}

TEST_F(ServiceTest, FilterWithAThousandNodeNamesKeepsTheirOrder) {
  for (int i = 0; i < 1000; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "node-%04d", i);
    auto node = testing::MakeNode(name).gpus(8);
    if (i % 100 == 7) node.unschedulable();
    cluster.mirror.upsertNode(node);
  }
  const Response response = call("POST", "/filter", readTestdata("filter_1000_node_names.json"));
  ASSERT_EQ(response.status, 200);
  const json reply = parseJson(response.body);
  const json& names = reply.at("NodeNames");
  ASSERT_EQ(names.size(), 990u);
  EXPECT_EQ(names.front(), "node-0000");
  EXPECT_EQ(names[7], "node-0008");
  EXPECT_EQ(names.back(), "node-0999");
  EXPECT_EQ(reply.at("FailedAndUnresolvableNodes").size(), 10u);
  EXPECT_EQ(reply.at("FailedAndUnresolvableNodes").at("node-0507"),
            "node node-0507 is unschedulable (cordoned)");
}

TEST_F(ServiceTest, FilterNotesThePodAsPendingDemand) {
  call("POST", "/filter", readTestdata("filter_node_names.json"));
  const policy::PodPtr pod = cluster.mirror.findPod(testsupport::kTrainUid);
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->key(), "team-a/train-1");
  EXPECT_EQ(pod->gpus, 4 * kMilliPerGpu);
  EXPECT_TRUE(pod->nodeName.empty());
  EXPECT_EQ(cluster.mirror.snapshot()->findQueue("team-a")->pending, 4 * kMilliPerGpu);
}

TEST_F(ServiceTest, FilterWithNodesEchoesFeasibleNodeObjectsAndUpdatesTheMirror) {
  cluster.mirror.deleteNode("gpu-node-1");  // known to the scheduler before gpufair
  const std::string request = readTestdata("filter_nodes.json");
  const Response response = call("POST", "/filter", request);
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parseJson(response.body);
  EXPECT_TRUE(reply.at("NodeNames").is_null());
  const json& items = reply.at("Nodes").at("items");
  ASSERT_EQ(items.size(), 1u);
  // The node object comes back as sent, every field.
  EXPECT_EQ(items[0], json::parse(request).at("Nodes").at("items")[0]);
  EXPECT_EQ(reply.at("FailedNodes").size(), 1u);
  EXPECT_TRUE(reply.at("FailedNodes").contains("gpu-node-2"));
  EXPECT_EQ(reply.at("FailedAndUnresolvableNodes").size(), 2u);
  const policy::NodeState* node = cluster.mirror.snapshot()->findNode("gpu-node-1");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->allocatable(), 8 * kMilliPerGpu);
}

TEST_F(ServiceTest, FilterOfPodWithoutGpusPassesEveryNode) {
  const json pod = podJson("team-a", "web", "uid-web", 0);
  const Response response =
      post("/filter", filterArgs(pod, {"gpu-node-3", "cpu-node-1", "ghost-node"}));
  const json reply = parseJson(response.body);
  EXPECT_EQ(reply.at("NodeNames"), json::array({"gpu-node-3", "cpu-node-1", "ghost-node"}));
  EXPECT_TRUE(reply.at("FailedNodes").empty());
  EXPECT_TRUE(reply.at("FailedAndUnresolvableNodes").empty());
}

TEST_F(ServiceTest, FilterFailsEveryNodeWhenTheQueueRefuses) {
  const json pod = podJson("team-c", "big", "uid-big", 4);  // team-c: limit 2
  const Response response = post("/filter", filterArgs(pod, {"gpu-node-1", "gpu-node-2"}));
  ASSERT_EQ(response.status, 200);
  const json reply = parseJson(response.body);
  EXPECT_TRUE(reply.at("NodeNames").empty());
  const std::string reason = "queue team-c at 0/2 GPUs (limit); pod needs 4 GPUs";
  EXPECT_EQ(reply.at("FailedAndUnresolvableNodes"),
            (json{{"gpu-node-1", reason}, {"gpu-node-2", reason}}));
}

TEST_F(ServiceTest, PrioritizeScoresEveryNodeGiven) {
  const json pod = podJson("team-a", "small", "uid-small", 2);
  const Response response = post(
      "/prioritize", filterArgs(pod, {"gpu-node-1", "gpu-node-2", "gpu-node-3", "ghost-node"}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parseJson(response.body);
  ASSERT_TRUE(reply.is_array());
  ASSERT_EQ(reply.size(), 4u);
  std::map<std::string, int> scores;
  for (const auto& entry : reply) {
    EXPECT_EQ(entry.size(), 2u);
    scores[entry.at("Host").get<std::string>()] = entry.at("Score").get<int>();
  }
  // gpu-node-2's last 2 GPUs fit exactly; gpu-node-1 keeps its 8-GPU block whole.
  EXPECT_EQ(scores.at("gpu-node-2"), 10);
  EXPECT_LT(scores.at("gpu-node-1"), 10);
  EXPECT_EQ(scores.at("gpu-node-3"), 0);
  EXPECT_EQ(scores.at("ghost-node"), 0);
  EXPECT_NE(cluster.mirror.findPod("uid-small"), nullptr);
}

struct BadRequestCase {
  const char* name;
  const char* target;
  const char* body;
  const char* error;
};

class BadRequestTest : public ServiceTest, public ::testing::WithParamInterface<BadRequestCase> {};

TEST_P(BadRequestTest, AnswersBadRequestWithTheReason) {
  const Response response = call("POST", GetParam().target, GetParam().body);
  EXPECT_EQ(response.status, 400);
  const json reply = parseJson(response.body);
  // Exact messages, except that the JSON parser's own words are only checked to be there.
  const std::string error = reply.at("Error").get<std::string>();
  const std::string_view expected = GetParam().error;
  if (expected.ends_with(": ")) {
    EXPECT_EQ(error.rfind(expected, 0), 0u) << error;
    EXPECT_GT(error.size(), expected.size());
  } else {
    EXPECT_EQ(error, expected);
  }
  if (std::string_view(GetParam().target) == "/filter") {
    EXPECT_TRUE(reply.at("NodeNames").is_null());
    EXPECT_TRUE(reply.at("FailedNodes").empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadRequestTest,
    ::testing::Values(BadRequestCase{"FilterNotJson", "/filter",
                                     "{\"Pod\": ", "request body is not valid JSON: "},
                      BadRequestCase{"FilterEmpty", "/filter", "", "request body is empty"},
                      BadRequestCase{"FilterMissingPod", "/filter", R"({"NodeNames":[]})",
                                     "missing Pod"},
                      BadRequestCase{"FilterPodString", "/filter", R"({"Pod":"x","NodeNames":[]})",
                                     "Pod: expected an object, got string"},
                      BadRequestCase{"PrioritizeNamesNotArray", "/prioritize",
                                     R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":{}})",
                                     "NodeNames: expected an array, got object"},
                      BadRequestCase{"PreemptNotObject", "/preempt", "42",
                                     "request body: expected a JSON object, got number"},
                      BadRequestCase{"BindMissingNode", "/bind", R"({"PodName":"p","PodUID":"u"})",
                                     "missing Node"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ServiceTest, UnknownPathsAndWrongMethods) {
  Response response = call("POST", "/filterz", "{}");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(parseJson(response.body).at("Error"), "no such endpoint: /filterz");

  response = call("GET", "/filter");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(parseJson(response.body).at("Error"), "/filter accepts POST only");
  ASSERT_EQ(response.headers.size(), 1u);
  EXPECT_EQ(response.headers[0], (std::pair<std::string, std::string>{"Allow", "POST"}));

  EXPECT_EQ(call("POST", "/healthz").status, 405);
  EXPECT_EQ(call("GET", "/healthz?verbose=1").status, 200);  // the query is not the path
}

TEST_F(ServiceTest, HealthAndReadiness) {
  const Response health = call("GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(parseJson(health.body), json({{"status", "ok"}}));
  EXPECT_EQ(call("GET", "/readyz").status, 200);

  Status readiness = Status::error("cluster not synced yet: nodes 0/4 listed");
  ExtenderService gated(cluster.mirror, *cluster.scorer, cluster.binder,
                        [&readiness] { return readiness; });
  Response ready = gated.handle({"GET", "/readyz", ""});
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(parseJson(ready.body), json({{"status", "not ready"},
                                         {"reason", "cluster not synced yet: nodes 0/4 listed"}}));
  readiness = Status::ok();
  ready = gated.handle({"GET", "/readyz", ""});
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(parseJson(ready.body), json({{"status", "ready"}}));

  ExtenderService throwing(cluster.mirror, *cluster.scorer, cluster.binder,
                           []() -> Status { throw std::runtime_error("boom"); });
  ready = throwing.handle({"GET", "/readyz", ""});
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(parseJson(ready.body).at("reason"), "readiness check failed: boom");
}

TEST_F(ServiceTest, DebugSnapshotShowsNodesPodsQueuesAndTotals) {
  post("/filter", filterArgs(podJson("team-a", "half", "uid-half", 1), {"gpu-node-1"}));
  const Response response = call("GET", "/debug/snapshot");
  ASSERT_EQ(response.status, 200);
  const json snapshot = parseJson(response.body);
  EXPECT_GT(snapshot.at("generation").get<int>(), 0);
  ASSERT_EQ(snapshot.at("nodes").size(), 4u);
  for (const auto& node : snapshot.at("nodes")) {
    if (node.at("name") != "gpu-node-2") continue;
    EXPECT_EQ(node.at("allocatable"), 8);
    EXPECT_EQ(node.at("used"), 6);
    EXPECT_EQ(node.at("free"), 2);
    EXPECT_EQ(node.at("unschedulable"), false);
    EXPECT_EQ(node.at("pods"), json::array({"team-b/sweep-7"}));
  }
  ASSERT_EQ(snapshot.at("pods").size(), 1u);
  const json& sweep = snapshot.at("pods")[0];
  EXPECT_EQ(sweep.at("namespace"), "team-b");
  EXPECT_EQ(sweep.at("node"), "gpu-node-2");
  EXPECT_EQ(sweep.at("queue"), "team-b");
  EXPECT_EQ(sweep.at("gpus"), 6);
  EXPECT_EQ(sweep.at("phase"), policy::phaseName(policy::PodPhase::kRunning));
  EXPECT_EQ(sweep.at("overQuota"), false);
  EXPECT_EQ(sweep.at("assumed"), false);
  ASSERT_EQ(snapshot.at("pending").size(), 1u);
  EXPECT_EQ(snapshot.at("pending")[0].at("uid"), "uid-half");
  bool sawTeamC = false;
  for (const auto& queue : snapshot.at("queues")) {
    if (queue.at("name") == "team-a") {
      EXPECT_EQ(queue.at("deserved"), 4);
      EXPECT_EQ(queue.at("limit"), 12);
      EXPECT_EQ(queue.at("pending"), 1);
    }
    if (queue.at("name") == "team-b") {
      EXPECT_TRUE(queue.at("limit").is_null());
      EXPECT_EQ(queue.at("allocated"), 6);
    }
    sawTeamC = sawTeamC || queue.at("name") == "team-c";
  }
  EXPECT_TRUE(sawTeamC);
  EXPECT_EQ(snapshot.at("cluster").at("capacity"), 16);  // the cordoned node does not count
  EXPECT_EQ(snapshot.at("cluster").at("allocated"), 6);
  EXPECT_EQ(snapshot.at("cluster").at("free"), 10);
  EXPECT_EQ(snapshot.at("cluster").at("largestFreeBlock"), 8);
}

}  // namespace
}  // namespace gpufair::api
