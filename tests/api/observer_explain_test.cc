// The service's hooks for metrics (RequestObserver, rejection categories) and /debug/explain.
#include <mutex>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/api/explain.h"
#include "gpufair/api/extender_service.h"
#include "gpufair/api/request_observer.h"

#include "test_support.h"
#include "testing/cluster.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::parseJson;
using testsupport::podJson;

class RecordingObserver final : public RequestObserver {
 public:
  void observe(std::string_view verb, std::string_view result, double seconds) override {
    std::lock_guard lock(mu);
    requests.emplace_back(verb, result);
    EXPECT_GE(seconds, 0);
  }
  void filterRejected(std::string_view category) override {
    std::lock_guard lock(mu);
    rejections.emplace_back(category);
  }
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> requests;
  std::vector<std::string> rejections;
};

class ObserverTest : public ::testing::Test {
 protected:
  void SetUp() override { service.setRequestObserver(&observer); }
  Response call(std::string_view method, std::string_view target, std::string_view body = "") {
    return service.handle(Request{method, target, body});
  }
  Response filter(const std::string& ns, const std::string& name, int gpus,
                  const json& nodes = json::array({"gpu-node-1", "gpu-node-2", "gpu-node-3"})) {
    const std::string body = filterArgs(podJson(ns, name, "uid-" + name, gpus), nodes).dump();
    return call("POST", "/filter", body);
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
  RecordingObserver observer;
};

TEST_F(ObserverTest, EveryRequestIsObservedWithItsVerbAndResult) {
  using P = std::pair<std::string, std::string>;
  struct Case {
    std::string method;
    std::string target;
    std::string body;
    P want;
  };
  const std::string ok = filterArgs(podJson("team-a", "train", "u1", 2), json::array()).dump();
  const std::vector<Case> cases = {
      {"POST", "/filter", ok, {"filter", "ok"}},
      {"POST", "/filter", "{not json", {"filter", "bad_request"}},
      {"GET", "/filter", "", {"filter", "method_not_allowed"}},
      {"POST", "/prioritize", ok, {"prioritize", "ok"}},
      {"GET", "/healthz", "", {"healthz", "ok"}},
      {"GET", "/debug/snapshot", "", {"debug_snapshot", "ok"}},
      {"GET", "/debug/explain?pod=team-a/train", "", {"debug_explain", "ok"}},
      {"GET", "/debug/explain?pod=nobody/here", "", {"debug_explain", "not_found"}},
      {"GET", "/metrics", "", {"unknown", "not_found"}},
  };
  for (const auto& c : cases) {
    observer.requests.clear();
    call(c.method, c.target, c.body);
    ASSERT_EQ(observer.requests.size(), 1u) << c.method << " " << c.target;
    EXPECT_EQ(observer.requests.front(), c.want) << c.method << " " << c.target;
  }
}

TEST_F(ObserverTest, AFilterThatLeavesNoNodeReportsItsCategoryOnce) {
  filter("team-a", "fits", 2);
  EXPECT_TRUE(observer.rejections.empty());
  filter("team-a", "too-big", 9);     // within team-a's limit of 12, but no node has 9 free
  filter("team-c", "over-limit", 4);  // team-c's limit is 2
  filter("team-a", "cordoned", 1, json::array({"gpu-node-3"}));
  EXPECT_EQ(observer.rejections,
            (std::vector<std::string>{"insufficient_gpus", "quota_limit", "cordoned"}));
}

TEST(RejectionCategory, Table) {
  const auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8).model("A100"), MakeNode("n2").gpus(4).unschedulable(),
       MakeNode("n3").gpus(8).cpu(4).memGi(16)},
      {MakePod("team-a", "run").gpus(6).on("n1")},
      {MakeQueue("team-a").deserved(8).limit(10), MakeQueue("team-z").deserved(0).weight(0)});
  struct Case {
    const char* name;
    policy::Pod pod;
    std::vector<std::string_view> nodes;
    std::string_view want;
  };
  const std::vector<Case> cases = {
      {"beyond the limit", MakePod("team-a", "p").gpus(6), {"n1", "n3"}, "quota_limit"},
      {"no borrowing with weight 0", MakePod("team-z", "p").gpus(1), {"n1"}, "quota_borrow"},
      {"no such queue", MakePod("team-a", "p").gpus(1).queue("ghost"), {"n1"}, "unknown_queue"},
      {"too few GPUs free", MakePod("team-a", "p").gpus(4), {"n1"}, "insufficient_gpus"},
      {"wrong GPU model", MakePod("team-a", "p").gpus(1).models({"H100"}), {"n1"}, "gpu_model"},
      {"cordoned first", MakePod("team-a", "p").gpus(4), {"n1", "n2"}, "cordoned"},
      {"unknown node", MakePod("team-a", "p").gpus(1), {"ghost"}, "unknown_node"},
  };
  for (const auto& c : cases) {
    const policy::Pod pod = testing::resolved(*snap, c.pod);
    const policy::FilterResult result = policy::filter(*snap, pod, c.nodes);
    ASSERT_TRUE(result.feasible.empty()) << c.name;
    const std::string_view got = rejectionCategory(*snap, pod, result);
    EXPECT_EQ(got, c.want) << c.name;
    EXPECT_NE(std::find(std::begin(kRejectionCategories), std::end(kRejectionCategories), got),
              std::end(kRejectionCategories))
        << c.name;
  }
}

TEST(RejectionCategory, ReservationsAndGangs) {
  // n1: 8 GPUs, 6 of them reserved for a reclaimer of team-b; n2 idle (asked about n1 only).
  const policy::Reservation held[] = {{"n1", testing::gpus(6), "uid-b", "team-b", "reclaim", ""}};
  const auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)}, {},
                          {MakeQueue("team-a").deserved(8), MakeQueue("team-b").deserved(8)}, {},
                          {std::begin(held), std::end(held)});
  const std::vector<std::string_view> nodes = {"n1"};
  const policy::Pod pod = testing::resolved(*snap, MakePod("team-a", "p").gpus(4));
  EXPECT_EQ(rejectionCategory(*snap, pod, policy::filter(*snap, pod, nodes)), "reserved");
  policy::Pod broken = testing::resolved(*snap, MakePod("team-a", "g").gpus(1));
  broken.gang = "train";
  broken.gangError = "annotation gpufair.io/gang-size is missing";
  EXPECT_EQ(rejectionCategory(*snap, broken, policy::filter(*snap, broken, nodes)), "gang");
}

// A queue tree: a parent's limit is a quota_limit refusal of its child's pod, and /debug/explain
// names the level that refused and the pod's place in the tree.
TEST(RejectionCategory, AParentsLimitAndTheExplainDocument) {
  const auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)},
      {MakePod("team-a", "run").gpus(4).on("n1"), MakePod("team-a", "wait").gpus(2)},
      {MakeQueue("research").namespaces({}).deserved(4).limit(4),
       MakeQueue("team-a").parent("research").deserved(4)});
  const std::vector<std::string_view> nodes = {"n1", "n2"};
  const policy::Pod pod = testing::resolved(*snap, MakePod("team-a", "p").gpus(1));
  EXPECT_EQ(rejectionCategory(*snap, pod, policy::filter(*snap, pod, nodes)), "quota_limit");

  const auto scorer = policy::makeScorer("blockfit");
  ASSERT_NE(scorer, nullptr);
  auto doc = renderExplainJson(*snap, "team-a/wait", *scorer);
  ASSERT_TRUE(doc.ok()) << doc.error();
  const json explain = parseJson(*doc);
  EXPECT_EQ(explain.at("queuePath"), "research > team-a");
  EXPECT_EQ(explain.at("admission").at("level"), "research");
  EXPECT_EQ(explain.at("admission").at("reason"),
            "queue research at 4/4 GPUs (limit), parent of team-a; pod needs 2 GPUs");
}

TEST(RejectionCategory, CpuAndMemoryWhenFitChecksThem) {
  policy::SnapshotOptions options;
  options.fit.checkCpuMemory = true;
  const auto snap = testing::snapshotOf({MakeNode("n1").gpus(8).cpu(4).memGi(16)}, {},
                                        {MakeQueue("team-a").deserved(8)}, options);
  const policy::Pod pod = testing::resolved(*snap, MakePod("team-a", "p").gpus(1).cpu(8));
  const std::vector<std::string_view> nodes = {"n1"};
  EXPECT_EQ(rejectionCategory(*snap, pod, policy::filter(*snap, pod, nodes)), "cpu_memory");
}

TEST(ResultLabel, Table) {
  const std::pair<int, std::string_view> cases[] = {{200, "ok"},
                                                    {204, "ok"},
                                                    {400, "bad_request"},
                                                    {404, "not_found"},
                                                    {405, "method_not_allowed"},
                                                    {503, "unavailable"},
                                                    {500, "error"},
                                                    {413, "error"}};
  for (const auto& [status, want] : cases) EXPECT_EQ(resultLabel(status), want) << status;
}

// A pod whose GPUs are free in total but on no one node: explain says it waits on fragmentation
// and what consolidation plans for it (the seed layout: one move of a6 to node-1).
TEST(ExplainConsolidation, SaysWhenAPodWaitsOnFragmentationAndThePlan) {
  std::vector<policy::Pod> pods;
  const char* layout[] = {"n1", "n1", "n2", "n2", "n3", "n4"};
  for (int i = 0; i < 6; ++i) {
    pods.push_back(MakePod("team-a", "a" + std::to_string(i + 1))
                       .gpus(3)
                       .on(layout[i])
                       .controller("job-a")
                       .movable());
  }
  pods.push_back(MakePod("team-b", "big").gpus(8));
  const auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(10), MakeNode("n2").gpus(10), MakeNode("n3").gpus(10),
       MakeNode("n4").gpus(10)},
      pods, {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)});
  const auto scorer = policy::makeScorer(policy::kDefaultScorer);
  const auto explained = renderExplainJson(*snap, "team-b/big", *scorer, Timestamp{});
  ASSERT_TRUE(explained.ok()) << explained.error();
  const json doc = json::parse(*explained);
  ASSERT_TRUE(doc.at("consolidation").is_object()) << doc.dump();
  EXPECT_EQ(doc["consolidation"]["outcome"], "planned");
  EXPECT_EQ(doc["consolidation"]["node"], "n3");
  EXPECT_EQ(doc["consolidation"]["moves"].size(), 1U);
  EXPECT_NE(doc["summary"].get<std::string>().find("waits on fragmentation alone"),
            std::string::npos)
      << doc["summary"];
  // A pod that fits has no consolidation part.
  const json fits = json::parse(*renderExplainJson(*snap, "team-a/a1", *scorer, Timestamp{}));
  EXPECT_FALSE(fits.contains("consolidation") && !fits["consolidation"].is_null());
}

TEST(QueryParameter, Table) {
  struct Case {
    std::string_view target;
    std::string_view key;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"/debug/explain?pod=team-a/x", "pod", "team-a/x"},
      {"/debug/explain?a=1&pod=team-a%2Fx&b=2", "pod", "team-a/x"},
      {"/debug/explain?pod=a+b", "pod", "a b"},
      {"/debug/explain?pod=", "pod", ""},
      {"/debug/explain?pods=x", "pod", std::nullopt},
      {"/debug/explain", "pod", std::nullopt},
      {"/debug/explain?pod=%2", "pod", std::nullopt},
      {"/debug/explain?pod=%zz", "pod", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(queryParameter(c.target, c.key), c.want) << c.target;
}

class ExplainTest : public ObserverTest {};

TEST_F(ExplainTest, APendingPodThatFitsSaysWhereItWouldGoNodeByNode) {
  filter("team-a", "train", 4);  // offered by kube-scheduler: now pending
  const Response response = call("GET", "/debug/explain?pod=team-a%2Ftrain");
  ASSERT_EQ(response.status, 200) << response.body;
  const json doc = parseJson(response.body);
  EXPECT_EQ(doc.at("pod"), "team-a/train");
  EXPECT_EQ(doc.at("state"), "pending");
  EXPECT_EQ(doc.at("queue"), "team-a");
  EXPECT_EQ(doc.at("gpus"), 4);
  EXPECT_EQ(doc.at("admission").at("admitted"), true);
  EXPECT_EQ(doc.at("feasibleNodes"), 1);
  EXPECT_EQ(doc.at("totalNodes"), 4);
  const json& nodes = doc.at("nodes");
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].at("name"), "gpu-node-1");
  EXPECT_EQ(nodes[0].at("fits"), true);
  EXPECT_EQ(nodes[0].at("free"), 8);
  EXPECT_TRUE(nodes[0].at("score").is_number());
  std::map<std::string, std::string> reasons;
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    EXPECT_EQ(nodes[i].at("fits"), false);
    EXPECT_TRUE(nodes[i].at("score").is_null());
    reasons[nodes[i].at("name")] = nodes[i].at("reason");
  }
  EXPECT_EQ(reasons.at("gpu-node-2"), "fewer than 4 GPUs free");
  EXPECT_EQ(reasons.at("gpu-node-3"), "node gpu-node-3 is unschedulable (cordoned)");
  EXPECT_EQ(reasons.at("cpu-node-1"), "node cpu-node-1 has 0 GPUs; pod needs 4 GPUs");
  EXPECT_EQ(
      doc.at("summary").get<std::string>().rfind("it fits now, best on gpu-node-1 (score ", 0), 0u)
      << doc.at("summary");
}

TEST_F(ExplainTest, APendingPodThatFitsNowhereGroupsTheReasons) {
  cluster.mirror.upsertPod(MakePod("team-b", "other").gpus(4).on("gpu-node-1"));
  filter("team-a", "huge", 6);  // 4 free on gpu-node-1, 2 on gpu-node-2
  const json doc = parseJson(call("GET", "/debug/explain?pod=team-a/huge").body);
  EXPECT_EQ(doc.at("feasibleNodes"), 0);
  const std::string summary = doc.at("summary");
  EXPECT_EQ(summary.rfind("no node fits: ", 0), 0u) << summary;
  EXPECT_NE(summary.find("2 nodes: fewer than 6 GPUs free"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1 node: node gpu-node-3 is unschedulable (cordoned)"), std::string::npos)
      << summary;
}

TEST_F(ExplainTest, AQueueRefusalIsTheWholeStory) {
  filter("team-c", "greedy", 3);  // team-c's limit is 2
  const json doc = parseJson(call("GET", "/debug/explain?pod=team-c/greedy").body);
  EXPECT_EQ(doc.at("admission").at("admitted"), false);
  EXPECT_EQ(doc.at("admission").at("reason"), "queue team-c at 0/2 GPUs (limit); pod needs 3 GPUs");
  EXPECT_EQ(doc.at("summary"),
            "its queue refuses it on every node: queue team-c at 0/2 GPUs (limit); pod needs 3 "
            "GPUs");
}

TEST_F(ExplainTest, ABoundPodSaysWhereItIs) {
  const json doc = parseJson(call("GET", "/debug/explain?pod=team-b/sweep-7").body);
  EXPECT_EQ(doc.at("state"), "bound");
  EXPECT_EQ(doc.at("node"), "gpu-node-2");
  EXPECT_EQ(doc.at("summary"), "it is bound to node gpu-node-2");
  EXPECT_TRUE(doc.at("nodes").empty());
}

TEST_F(ExplainTest, UnknownPodsAndBadQueries) {
  Response response = call("GET", "/debug/explain?pod=team-a/nobody");
  EXPECT_EQ(response.status, 404);
  EXPECT_NE(
      parseJson(response.body).at("Error").get<std::string>().find("knows no pod team-a/nobody"),
      std::string::npos);
  for (const char* target :
       {"/debug/explain", "/debug/explain?pod=no-slash", "/debug/explain?pod=%"}) {
    response = call("GET", target);
    EXPECT_EQ(response.status, 400) << target;
    EXPECT_NE(response.body.find("needs ?pod=NAMESPACE/NAME"), std::string::npos) << target;
  }
}

}  // namespace
}  // namespace gpufair::api
