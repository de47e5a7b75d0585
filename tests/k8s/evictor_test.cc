// KubeEvictor over a mock API server, and the Events ReclaimEvents writes for victims and
// reclaimers.
#include "gpufair/k8s/evictor.h"

#include <mutex>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/mock_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using ::testing::_;
using testing::body;
using testing::MockKubeClient;
using ::testing::NiceMock;
using testing::reply;
using ::testing::Return;
using testing::statusReply;

const policy::Pod kVictim =
    gpufair::testing::MakePod("team-a", "a4").uid("uid-a4").gpus(8).on("node-4");

struct EvictCase {
  std::string name;
  ApiResponse answer;
  state::EvictOutcome outcome;
  std::string message;  // substring
};

class KubeEvictorTest : public ::testing::TestWithParam<EvictCase> {};

TEST_P(KubeEvictorTest, MapsTheAnswer) {
  auto client = std::make_shared<NiceMock<MockKubeClient>>();
  ApiRequest sent;
  EXPECT_CALL(*client, send(_)).WillOnce([&](const ApiRequest& r) {
    sent = r;
    return GetParam().answer;
  });
  KubeEvictor evictor(client);
  const state::EvictResult result = evictor.evict(kVictim, "Reclaimed by queue team-b");
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.path, "/api/v1/namespaces/team-a/pods/a4/eviction");
  EXPECT_EQ(body(sent)["deleteOptions"]["preconditions"]["uid"], "uid-a4");
  EXPECT_EQ(state::evictOutcomeName(result.outcome),
            std::string(state::evictOutcomeName(GetParam().outcome)));
  EXPECT_NE(result.message.find(GetParam().message), std::string::npos) << result.message;
}

INSTANTIATE_TEST_SUITE_P(
    Answers, KubeEvictorTest,
    ::testing::Values(
        EvictCase{"Accepted", reply(201), state::EvictOutcome::kEvicted, ""},
        EvictCase{"RefusedByPdb",
                  statusReply(429, "TooManyRequests",
                              "Cannot evict pod as it would violate the pod's disruption budget."),
                  state::EvictOutcome::kRefused, "disruption budget"},
        EvictCase{"Gone", statusReply(404, "NotFound", "pods \"a4\" not found"),
                  state::EvictOutcome::kNotFound, "not found"},
        EvictCase{"ServerError", statusReply(500, "InternalError", "several PDBs match"),
                  state::EvictOutcome::kError, "HTTP 500"}),
    [](const auto& info) { return info.param.name; });

class ReclaimEventsTest : public ::testing::Test {
 protected:
  ReclaimEventsTest() {
    ON_CALL(*client_, send(_)).WillByDefault([this](const ApiRequest& request) {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      return reply(201, R"({"metadata":{"name":"ev"}})");
    });
  }
  std::vector<nlohmann::json> written() {
    std::lock_guard lock(mu_);
    std::vector<nlohmann::json> out;
    for (const auto& r : requests_) out.push_back(body(r));
    return out;
  }

  std::shared_ptr<NiceMock<MockKubeClient>> client_ = std::make_shared<NiceMock<MockKubeClient>>();
  std::shared_ptr<gpufair::testing::ManualClock> clock_ =
      std::make_shared<gpufair::testing::ManualClock>();
  std::mutex mu_;
  std::vector<ApiRequest> requests_;  // GUARDED_BY(mu_)
};

TEST_F(ReclaimEventsTest, TellsTheVictimAndTheReclaimer) {
  EventRecorderOptions options;
  options.reportingInstance = "gpufair-0";
  EventRecorder recorder(client_, clock_, options);
  ReclaimEvents events(recorder);
  policy::ReclaimPlan plan;
  plan.node = "node-4";
  plan.reclaimer = "team-b/big";
  plan.reclaimerUid = "uid-big";
  plan.reason = "queue team-b (0/20 GPUs deserved) reclaims 8 GPUs on node-4";
  plan.victims.push_back(
      {std::make_shared<const policy::Pod>(kVictim),
       "Reclaimed by queue team-b: team-a is 20 GPUs over its fair share of 20"});
  events.evicted(plan, plan.victims[0]);
  events.reclaimed(plan);
  events.evictionFailed(plan, plan.victims[0], {state::EvictOutcome::kRefused, "HTTP 429: PDB"});
  ASSERT_TRUE(recorder.waitIdle(std::chrono::seconds{5}));
  recorder.stop();

  const auto sent = written();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0]["involvedObject"]["name"], "a4");
  EXPECT_EQ(sent[0]["reason"], "Reclaimed");
  EXPECT_EQ(sent[0]["message"],
            "Reclaimed by queue team-b: team-a is 20 GPUs over its fair share of 20");
  EXPECT_EQ(sent[1]["involvedObject"]["name"], "big");
  EXPECT_EQ(sent[1]["involvedObject"]["namespace"], "team-b");
  EXPECT_EQ(sent[1]["involvedObject"]["uid"], "uid-big");
  EXPECT_EQ(sent[1]["reason"], "Reclaiming");
  EXPECT_EQ(sent[1]["message"], plan.reason);
  EXPECT_EQ(sent[2]["reason"], "ReclaimBlocked");
  EXPECT_EQ(sent[2]["type"], "Warning");
  EXPECT_EQ(sent[2]["message"],
            "could not evict team-a/a4 (refused): HTTP 429: PDB; trying another plan");
}

TEST(DescribeDryRunTest, ListsTheVictims) {
  policy::ReclaimPlan plan;
  plan.node = "node-4";
  plan.reclaimer = "team-b/big";
  plan.reason = "why";
  plan.victims.push_back({std::make_shared<const policy::Pod>(kVictim), ""});
  EXPECT_EQ(describeDryRun(plan), "dry run: would evict team-a/a4 on node-4 for team-b/big (why)");
}

}  // namespace
}  // namespace gpufair::k8s
