// /preempt: kube-scheduler's proposed victims narrowed by quota, in both request modes
// (NodeNameToVictims with full pods, NodeNameToMetaVictims with UIDs), answered as
// NodeNameToMetaVictims; without sockets and over HTTP.
#include <gtest/gtest.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/server.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using testsupport::Cluster;
using testsupport::HttpClient;
using testsupport::parseJson;
using testsupport::podJson;
using testsupport::readTestdata;

constexpr const char* kSweep7 = "9a1b2c3d-0000-4f00-8e00-000000000007";
constexpr const char* kSweep8 = "9a1b2c3d-0000-4f00-8e00-000000000008";

// The golden files' victims as the mirror knows them: gpu-node-2 holds team-b/sweep-7 (6 GPUs)
// and team-b/sweep-8 (1 GPU), both within team-b's deserved 8, and research/r (1 GPU, the default
// queue, deserved 0: borrowed). gpu-node-2 is full; gpu-node-1 (8 GPUs) is empty.
class PreemptTest : public ::testing::Test {
 protected:
  PreemptTest() {
    cluster.mirror.deletePod("uid-team-b-sweep-7");
    cluster.mirror.upsertPod(
        testing::MakePod("team-b", "sweep-7").uid(kSweep7).gpus(6).on("gpu-node-2"));
    cluster.mirror.upsertPod(
        testing::MakePod("team-b", "sweep-8").uid(kSweep8).gpus(1).on("gpu-node-2"));
    cluster.mirror.upsertPod(
        testing::MakePod("research", "r").uid("uid-r").gpus(1).on("gpu-node-2").overQuota());
  }

  json preempt(const json& args) {
    const Response response = service.handle(Request{"POST", "/preempt", args.dump()});
    EXPECT_EQ(response.status, 200) << response.body;
    return parseJson(response.body);
  }

  // ExtenderPreemptionArgs as a nodeCacheCapable scheduler sends them.
  static json metaArgs(const json& pod, const std::string& node,
                       const std::vector<std::string>& uids) {
    json pods = json::array();
    for (const auto& uid : uids) pods.push_back({{"UID", uid}});
    return {{"Pod", pod},
            {"NodeNameToVictims", nullptr},
            {"NodeNameToMetaVictims", {{node, {{"Pods", pods}, {"NumPDBViolations", 0}}}}}};
  }
  // The same with full victim pods (nodeCacheCapable: false).
  static json fullArgs(const json& pod, const std::string& node,
                       const std::vector<std::pair<std::string, std::string>>& victims) {
    json pods = json::array();
    for (const auto& [name, uid] : victims) pods.push_back(podJson("x", name, uid, 1));
    return {{"Pod", pod},
            {"NodeNameToVictims", {{node, {{"Pods", pods}, {"NumPDBViolations", 0}}}}}};
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
};

// team-a/train-1 (3 GPUs) is within team-a's deserved 4: kube-scheduler's choice of in-quota
// victims stands, in both modes; a node proposed without victims is left out.
TEST_F(PreemptTest, GoldenRequestsInBothModes) {
  for (const char* file : {"preempt_victims.json", "preempt_meta_victims.json"}) {
    const Response response = service.handle(Request{"POST", "/preempt", readTestdata(file)});
    ASSERT_EQ(response.status, 200) << file << ": " << response.body;
    const json reply = parseJson(response.body);
    ASSERT_EQ(reply.size(), 1u) << file;
    const json& nodes = reply.at("NodeNameToMetaVictims");
    ASSERT_EQ(nodes.size(), 1u) << file << ": " << nodes;
    EXPECT_EQ(nodes.at("gpu-node-2").at("Pods"), json::parse(R"([{"UID":")" + std::string(kSweep7) +
                                                             R"("},{"UID":")" + kSweep8 + R"("}])"))
        << file;
  }
  const json reply = parseJson(
      service.handle(Request{"POST", "/preempt", readTestdata("preempt_victims.json")}).body);
  EXPECT_EQ(reply.at("NodeNameToMetaVictims").at("gpu-node-2").at("NumPDBViolations"), 1);
}

// team-c (deserved 0) borrows: team-b's in-quota pod stays, the borrowed research pod goes.
TEST_F(PreemptTest, BorrowerGetsOnlyBorrowedVictimsInBothModes) {
  const json pod = podJson("team-c", "job", "uid-c-job", 1);
  const json expected = {{"gpu-node-2", {{"Pods", {{{"UID", "uid-r"}}}}, {"NumPDBViolations", 0}}}};
  EXPECT_EQ(preempt(metaArgs(pod, "gpu-node-2", {kSweep8, "uid-r"})).at("NodeNameToMetaVictims"),
            expected);
  EXPECT_EQ(preempt(fullArgs(pod, "gpu-node-2", {{"sweep-8", kSweep8}, {"r", "uid-r"}}))
                .at("NodeNameToMetaVictims"),
            expected);
  // The preemptor is pending demand now, as after /filter.
  const policy::PodPtr noted = cluster.mirror.findPod("uid-c-job");
  ASSERT_NE(noted, nullptr);
  EXPECT_TRUE(noted->nodeName.empty());
}

TEST_F(PreemptTest, BorrowerNeverGetsANodeThatNeedsInQuotaVictims) {
  const json pod = podJson("team-c", "job", "uid-c-job", 2);
  const json reply = preempt(metaArgs(pod, "gpu-node-2", {kSweep7}));
  EXPECT_EQ(reply, json({{"NodeNameToMetaVictims", json::object()}}));
}

// A victim gpufair does not mirror (a GPU-less pod, say) holds nothing it counts: it stays.
TEST_F(PreemptTest, UnknownVictimsStay) {
  const json pod = podJson("team-a", "small", "uid-a-small", 2);
  const json reply = preempt(metaArgs(pod, "gpu-node-1", {"uid-cpu-only"}));
  EXPECT_EQ(reply.at("NodeNameToMetaVictims").at("gpu-node-1").at("Pods"),
            json::parse(R"([{"UID":"uid-cpu-only"}])"));
}

TEST_F(PreemptTest, OverHttpLikeKubeScheduler) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  ExtenderServer server{service, options};
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  const json pod = podJson("team-c", "job", "uid-c-job", 1);
  json args = metaArgs(pod, "gpu-node-2", {kSweep7, kSweep8, "uid-r"});
  args["NodeNameToMetaVictims"]["gpu-node-9"] = {{"Pods", {{{"UID", "x"}}}},
                                                 {"NumPDBViolations", 0}};
  const auto reply = client.post("/preempt", args);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.header("Content-Type"), "application/json");
  EXPECT_EQ(parseJson(reply.body),
            json::parse(R"({"NodeNameToMetaVictims":{"gpu-node-2":{"Pods":[{"UID":"uid-r"}],
                                                                  "NumPDBViolations":0}}})"));
  const auto bad = client.request("POST", "/preempt", R"({"Pod": 7})");
  EXPECT_EQ(bad.status, 400) << bad.body;
}

}  // namespace
}  // namespace gpufair::api
