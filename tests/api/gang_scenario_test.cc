// Gangs end to end: the real server on port 0, driven over HTTP the way kube-scheduler drives it
// (one pod at a time: filter every node, prioritize the feasible ones, bind the best).
#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "gpufair/api/server.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testsupport::HttpClient;
using testsupport::parseJson;
using testsupport::podJson;

json gangPod(const std::string& ns, const std::string& gang, int index, int size, int gpus) {
  const std::string name = gang + "-" + std::to_string(index);
  json pod = podJson(ns, name, "uid-" + ns + "-" + name, gpus);
  pod["metadata"]["labels"] = {{"gpufair.io/gang", gang}};
  pod["metadata"]["annotations"] = {{"gpufair.io/gang-size", std::to_string(size)}};
  return pod;
}

struct Outcome {
  std::string node;    // bound here; empty: refused
  std::string reason;  // the first refusal
};

// Six nodes of 8 GPUs. team-a runs small pods; team-b, team-c deserve room for a gang each.
class GangScenarioTest : public ::testing::Test {
 protected:
  GangScenarioTest()
      : clock_(std::make_shared<testing::ManualClock>()), mirror_(clock_, options()) {
    QuotaConfig quota;
    quota.queues = {testing::MakeQueue("team-a").deserved(16),
                    testing::MakeQueue("team-b").deserved(32),
                    testing::MakeQueue("team-c").deserved(32)};
    mirror_.setQuotaConfig(quota);
    for (int i = 1; i <= 6; ++i) {
      names_.push_back("n" + std::to_string(i));
      mirror_.upsertNode(testing::MakeNode(names_.back()).gpus(8));
    }
  }
  static state::MirrorOptions options() {
    state::MirrorOptions o;
    o.gangTimeout = 120s;
    return o;
  }
  void SetUp() override {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.threads = 2;
    server_ = std::make_unique<ExtenderServer>(service_, options);
    ASSERT_TRUE(server_->start().isOk());
  }
  void TearDown() override { server_->stop(); }

  void running(const std::string& name, int gpus, const std::string& node) {
    mirror_.upsertPod(testing::MakePod("team-a", name).gpus(gpus).on(node));
  }
  void finished(const std::string& ns, const std::string& name, int gpus, const std::string& node) {
    mirror_.upsertPod(
        testing::MakePod(ns, name).gpus(gpus).on(node).phase(policy::PodPhase::kSucceeded));
  }

  // One scheduling cycle of kube-scheduler for `pod`.
  Outcome schedule(HttpClient& client, const json& pod) {
    const json names = names_;
    const auto filtered = client.post("/filter", {{"Pod", pod}, {"NodeNames", names}});
    EXPECT_EQ(filtered.status, 200) << filtered.body;
    const json result = parseJson(filtered.body);
    const json feasible = result.value("NodeNames", json::array());
    if (feasible.empty()) {
      Outcome refused;
      for (const char* key : {"FailedAndUnresolvableNodes", "FailedNodes"}) {
        if (result.contains(key) && result[key].is_object() && !result[key].empty()) {
          refused.reason = result[key].begin().value().get<std::string>();
        }
      }
      return refused;
    }
    const auto prioritized = client.post("/prioritize", {{"Pod", pod}, {"NodeNames", feasible}});
    EXPECT_EQ(prioritized.status, 200) << prioritized.body;
    std::string best;
    int bestScore = -1;
    for (const auto& entry : parseJson(prioritized.body)) {
      const int score = entry.at("Score").get<int>();
      const std::string host = entry.at("Host").get<std::string>();
      if (score > bestScore || (score == bestScore && host < best)) {
        bestScore = score;
        best = host;
      }
    }
    const json& meta = pod.at("metadata");
    const auto bound = client.post("/bind", {{"PodName", meta.at("name")},
                                             {"PodNamespace", meta.at("namespace")},
                                             {"PodUID", meta.at("uid")},
                                             {"Node", best}});
    const std::string error = parseJson(bound.body).value("Error", "");
    if (!error.empty()) return {"", error};
    return {best, ""};
  }

  int boundOf(const std::string& prefix) {
    int n = 0;
    for (const auto& b : binder_.bindings()) n += b.podKey.starts_with(prefix) ? 1 : 0;
    return n;
  }
  std::vector<std::string> nodesOf(const std::string& prefix) {
    std::vector<std::string> nodes;
    for (const auto& b : binder_.bindings()) {
      if (b.podKey.starts_with(prefix)) nodes.push_back(b.node);
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  }

  std::shared_ptr<testing::ManualClock> clock_;
  state::Mirror mirror_;
  policy::ScorerPtr scorer_ = policy::makeScorer(policy::kDefaultScorer);
  MemoryBinder binder_;
  ExtenderService service_{mirror_, *scorer_, binder_};
  std::unique_ptr<ExtenderServer> server_;
  std::vector<std::string> names_;
};

TEST_F(GangScenarioTest, FourByEightIsPlacedOnlyOnceAllFourFit) {
  running("s1", 1, "n1");
  running("s2", 2, "n2");
  running("s3", 1, "n3");
  HttpClient client(server_->port());

  // Three nodes are free: every member is refused, none is placed, nothing is held.
  for (int i = 0; i < 4; ++i) {
    const Outcome out = schedule(client, gangPod("team-b", "train", i, 4, 8));
    EXPECT_EQ(out.node, "");
    EXPECT_EQ(out.reason, "gang train needs 4 × 8 GPUs; 3 nodes have 8 free");
  }
  EXPECT_EQ(boundOf("team-b/"), 0);
  EXPECT_TRUE(mirror_.reservations().empty());

  finished("team-a", "s2", 2, "n2");  // a fourth node frees up
  const Outcome first = schedule(client, gangPod("team-b", "train", 0, 4, 8));
  ASSERT_NE(first.node, "") << first.reason;
  EXPECT_EQ(mirror_.reservations().size(), 3u);  // the other three members' nodes are held

  // Meanwhile a small pod keeps off the reserved nodes.
  const Outcome small = schedule(client, podJson("team-a", "s4", "uid-team-a-s4", 1));
  EXPECT_TRUE(small.node == "n1" || small.node == "n3") << small.node << small.reason;

  for (int i = 1; i < 4; ++i) {
    const Outcome out = schedule(client, gangPod("team-b", "train", i, 4, 8));
    ASSERT_NE(out.node, "") << out.reason;
  }
  EXPECT_EQ(nodesOf("team-b/"), (std::vector<std::string>{"n2", "n4", "n5", "n6"}));
  EXPECT_TRUE(mirror_.reservations().empty());  // complete: nothing left held
}

TEST_F(GangScenarioTest, TwoGangsRacingForRoomForOne) {
  running("s1", 1, "n1");
  running("s2", 1, "n2");
  HttpClient client(server_->port());
  // kube-scheduler interleaves the members of both gangs.
  for (int i = 0; i < 4; ++i) {
    const Outcome a = schedule(client, gangPod("team-b", "a", i, 4, 8));
    EXPECT_NE(a.node, "") << a.reason;
    const Outcome b = schedule(client, gangPod("team-c", "b", i, 4, 8));
    EXPECT_EQ(b.node, "");
    EXPECT_EQ(b.reason, "gang b needs 4 × 8 GPUs; no node has 8 free");
  }
  EXPECT_EQ(boundOf("team-b/"), 4);  // one wins whole
  EXPECT_EQ(boundOf("team-c/"), 0);  // the other waits whole

  for (int i = 0; i < 4; ++i) {
    const auto nodes = nodesOf("team-b/");
    finished("team-b", "a-" + std::to_string(i), 8, nodes[static_cast<std::size_t>(i)]);
  }
  for (int i = 0; i < 4; ++i) {
    const Outcome b = schedule(client, gangPod("team-c", "b", i, 4, 8));
    EXPECT_NE(b.node, "") << b.reason;
  }
  EXPECT_EQ(boundOf("team-c/"), 4);
}

TEST_F(GangScenarioTest, TwoGangsRacingConcurrentlyNeverBothPlacePods) {
  running("s1", 1, "n1");
  running("s2", 1, "n2");
  // Two schedulers' worth of requests at once (kube-scheduler runs one cycle at a time, but retries
  // and a second profile can overlap): each member is offered until bound, a few rounds.
  auto drive = [&](const std::string& ns, const std::string& gang) {
    HttpClient client(server_->port());
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 4; ++i) schedule(client, gangPod(ns, gang, i, 4, 8));
    }
  };
  std::thread a(drive, "team-b", "a");
  std::thread b(drive, "team-c", "b");
  a.join();
  b.join();
  const int boundA = boundOf("team-b/");
  const int boundB = boundOf("team-c/");
  EXPECT_TRUE((boundA == 4 && boundB == 0) || (boundA == 0 && boundB == 4))
      << "a bound " << boundA << ", b bound " << boundB;
}

TEST_F(GangScenarioTest, AGangThatDoesNotCompleteInTimeReleasesItsReservations) {
  for (int i = 1; i <= 4; ++i) running("s" + std::to_string(i), 1, "n" + std::to_string(i));
  HttpClient client(server_->port());
  const Outcome first = schedule(client, gangPod("team-b", "train", 0, 2, 8));
  ASSERT_NE(first.node, "") << first.reason;
  const std::string held = first.node == "n5" ? "n6" : "n5";
  // The second member never comes; a team-a pod of 8 GPUs is kept off the held node.
  const json big = podJson("team-a", "big", "uid-team-a-big", 8);
  const json refused =
      parseJson(client.post("/filter", {{"Pod", big}, {"NodeNames", names_}}).body);
  EXPECT_EQ(refused.value("NodeNames", json::array()), json::array());
  EXPECT_EQ(refused.at("FailedNodes").value(held, ""),
            "node " + held +
                ": 8 GPUs reserved for gang team-b/train (gang of 2 × 8 GPUs), of 8 whole GPUs "
                "free; pod needs 8 GPUs");

  clock_->advance(119s);
  mirror_.expire();
  EXPECT_EQ(schedule(client, big).node, "");
  clock_->advance(1s);
  EXPECT_GE(mirror_.expire(), 1u);
  EXPECT_TRUE(mirror_.reservations().empty());
  EXPECT_EQ(schedule(client, big).node, held);
}

TEST_F(GangScenarioTest, AMemberIsNotBoundOutsideItsGangsReservation) {
  for (int i = 1; i <= 3; ++i) running("s" + std::to_string(i), 1, "n" + std::to_string(i));
  HttpClient client(server_->port());
  const json pod = gangPod("team-b", "train", 0, 2, 8);
  // kube-scheduler binds without asking prioritize where (e.g. a stale cycle): not outside the
  // gang's room.
  ASSERT_EQ(client.post("/filter", {{"Pod", pod}, {"NodeNames", names_}}).status, 200);
  const auto reservations = mirror_.reservations();
  ASSERT_EQ(reservations.size(), 2u);
  const auto bound = client.post("/bind", {{"PodName", "train-0"},
                                           {"PodNamespace", "team-b"},
                                           {"PodUID", "uid-team-b-train-0"},
                                           {"Node", "n1"}});
  const std::string error = parseJson(bound.body).value("Error", "");
  EXPECT_EQ(error, "pod team-b/train-0 cannot bind to node n1: gang train has room reserved on " +
                       reservations[0].node + ", " + reservations[1].node + ", not on node n1");
}

TEST_F(GangScenarioTest, AnUnreadableGangSizeIsRefusedWithTheReason) {
  HttpClient client(server_->port());
  json pod = gangPod("team-b", "train", 0, 2, 8);
  pod["metadata"]["annotations"]["gpufair.io/gang-size"] = "two";
  const Outcome out = schedule(client, pod);
  EXPECT_EQ(out.node, "");
  EXPECT_EQ(out.reason,
            "annotation gpufair.io/gang-size of pod team-b/train-0: \"two\" is not a whole number "
            "from 1 to 100000");
}

}  // namespace
}  // namespace gpufair::api
