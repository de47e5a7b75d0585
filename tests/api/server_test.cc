// The real server on 127.0.0.1, port 0, driven over HTTP the way kube-scheduler drives it.
#include "gpufair/api/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::HttpClient;
using testsupport::parseJson;
using testsupport::podJson;
using testsupport::readTestdata;

ServerOptions localOptions() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  return options;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server.start().isOk()); }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
  ExtenderServer server{service, localOptions()};
};

TEST_F(ServerTest, SchedulesAPodLikeKubeScheduler) {
  ASSERT_NE(server.port(), 0);
  HttpClient client(server.port());
  const json pod = podJson("team-a", "train-2", "uid-train-2", 2);
  const json names = {"gpu-node-1", "gpu-node-2", "gpu-node-3", "cpu-node-1"};

  const auto filtered = client.post("/filter", filterArgs(pod, names));
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  EXPECT_EQ(filtered.header("Content-Type"), "application/json");
  EXPECT_TRUE(filtered.keepAlive);
  const json feasible = parseJson(filtered.body).at("NodeNames");
  EXPECT_EQ(feasible, json::array({"gpu-node-1", "gpu-node-2"}));

  const auto prioritized = client.post("/prioritize", filterArgs(pod, feasible));
  ASSERT_EQ(prioritized.status, 200) << prioritized.body;
  std::string best;
  int bestScore = -1;
  for (const auto& entry : parseJson(prioritized.body)) {
    if (entry.at("Score").get<int>() > bestScore) {
      bestScore = entry.at("Score").get<int>();
      best = entry.at("Host").get<std::string>();
    }
  }
  EXPECT_EQ(best, "gpu-node-2");  // fills the partly used node, keeps gpu-node-1's 8 GPUs whole

  const auto bound = client.post("/bind", {{"PodName", "train-2"},
                                           {"PodNamespace", "team-a"},
                                           {"PodUID", "uid-train-2"},
                                           {"Node", best}});
  ASSERT_EQ(bound.status, 200);
  EXPECT_EQ(parseJson(bound.body), json({{"Error", ""}}));

  const auto snapshot = client.request("GET", "/debug/snapshot");
  ASSERT_EQ(snapshot.status, 200);
  // Keep the document alive: a range-for over parseJson(...).at(...) iterates a destroyed
  // temporary.
  const json view = parseJson(snapshot.body);
  int seen = 0;
  for (const auto& node : view.at("nodes")) {
    if (node.at("name") == "gpu-node-2") {
      ++seen;
      EXPECT_EQ(node.at("free"), 0);
      // Pods are listed in uid order; the set is what matters here.
      EXPECT_THAT(node.at("pods").get<std::vector<std::string>>(),
                  ::testing::UnorderedElementsAre("team-a/train-2", "team-b/sweep-7"));
    }
  }
  EXPECT_EQ(seen, 1);
  // The next pod sees the node full.
  const auto again =
      client.post("/filter", filterArgs(podJson("team-a", "t3", "uid-t3", 2), {"gpu-node-2"}));
  EXPECT_EQ(parseJson(again.body).at("FailedNodes").at("gpu-node-2"), "fewer than 2 GPUs free");
}

TEST_F(ServerTest, GoldenRequestsOverHttp) {
  HttpClient client(server.port());
  for (const char* file : {"filter_node_names.json", "filter_nodes.json", "filter_odd_case.json"}) {
    const auto reply = client.request("POST", "/filter", readTestdata(file));
    EXPECT_EQ(reply.status, 200) << file << ": " << reply.body;
    EXPECT_EQ(parseJson(reply.body).at("Error"), "") << file;
  }
  const auto preempt = client.request("POST", "/preempt", readTestdata("preempt_victims.json"));
  EXPECT_EQ(preempt.status, 200);
  const auto bind = client.request("POST", "/bind", readTestdata("bind.json"));
  EXPECT_EQ(parseJson(bind.body), json({{"Error", ""}}));
  EXPECT_EQ(cluster.mirror.findPod(testsupport::kTrainUid)->nodeName, "gpu-node-1");
}

TEST_F(ServerTest, BadRequestsAreAnsweredAndTheConnectionKeepsServing) {
  HttpClient client(server.port());
  struct Case {
    std::string method, target, body;
    int status;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"POST", "/filter", "{not json", 400, ""},
      {"POST", "/filter", R"({"Pod":"train","NodeNames":[]})", 400,
       "Pod: expected an object, got string"},
      {"POST", "/filter", R"({"NodeNames":["gpu-node-1"]})", 400, "missing Pod"},
      {"POST", "/prioritize", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":"gpu-node-1"})", 400,
       "NodeNames: expected an array, got string"},
      {"POST", "/bind", "[]", 400, "request body: expected a JSON object, got array"},
      {"POST", "/schedule", "{}", 404, "no such endpoint: /schedule"},
      {"DELETE", "/bind", "", 405, "/bind accepts POST only"},
  };
  for (const auto& c : cases) {
    const auto reply = client.request(c.method, c.target, c.body);
    EXPECT_EQ(reply.status, c.status) << c.method << " " << c.target << " " << c.body;
    const json body = parseJson(reply.body);
    if (c.error.empty()) {
      EXPECT_FALSE(body.at("Error").get<std::string>().empty());
    } else {
      EXPECT_EQ(body.at("Error"), c.error);
    }
    EXPECT_TRUE(reply.keepAlive);
  }
  EXPECT_EQ(client.request("GET", "/healthz").status, 200);
}

TEST_F(ServerTest, ManyClientsAtOnce) {
  constexpr int kClients = 8;
  constexpr int kRequests = 25;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      HttpClient client(server.port());
      for (int i = 0; i < kRequests; ++i) {
        const std::string uid = "uid-" + std::to_string(c) + "-" + std::to_string(i);
        const auto reply = client.post(
            "/filter", filterArgs(podJson("team-a", uid, uid, 1), {"gpu-node-1", "gpu-node-2"}));
        if (reply.status == 200 && parseJson(reply.body).at("NodeNames").size() == 2) ++ok;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
}

TEST(ServerLifecycleTest, ListenAddresses) {
  auto parsed = parseListenAddress("127.0.0.1:8888");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "127.0.0.1");
  EXPECT_EQ(parsed->port, 8888);
  parsed = parseListenAddress(":0");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "0.0.0.0");
  EXPECT_EQ(parsed->port, 0);
  parsed = parseListenAddress("[::1]:443");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "::1");
  EXPECT_FALSE(parseListenAddress("localhost").ok());
  EXPECT_FALSE(parseListenAddress("host:http").ok());
  EXPECT_FALSE(parseListenAddress("host:70000").ok());
  EXPECT_FALSE(parseListenAddress("::1:80").ok());
}

TEST(ServerLifecycleTest, PortInUseFailsToStartAndStopIsIdempotent) {
  Cluster cluster;
  ExtenderService service(cluster.mirror, *cluster.scorer, cluster.binder);
  ExtenderServer first(service, localOptions());
  ASSERT_TRUE(first.start().isOk());
  ServerOptions same = localOptions();
  same.listen = "127.0.0.1:" + std::to_string(first.port());
  ExtenderServer second(service, same);
  const Status status = second.start();
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.reason().find("bind"), std::string::npos) << status.reason();
  EXPECT_EQ(second.port(), 0);

  ServerOptions bad = localOptions();
  bad.threads = 0;
  EXPECT_EQ(ExtenderServer(service, bad).start().reason(), "threads must be at least 1");

  HttpClient client(first.port());
  EXPECT_EQ(client.request("GET", "/healthz").status, 200);
  first.stop();
  EXPECT_TRUE(client.closedByServer());  // the idle keep-alive connection is closed at stop
  first.stop();
}

}  // namespace
}  // namespace gpufair::api
