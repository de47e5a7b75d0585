#include "gpufair/k8s/quota_watcher.h"

#include <mutex>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"
#include "k8s/mock_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::ManualClock;
using nlohmann::json;
using ::testing::_;
using testing::body;
using ::testing::HasSubstr;
using testing::MockKubeClient;
using ::testing::NiceMock;
using testing::reply;

constexpr const char* kNs = "gpufair-system";

std::string configMap(const std::string& name, const std::string& queues,
                      const std::string& ns = kNs, const std::string& rv = "1",
                      bool labelled = true) {
  json meta = {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}, {"resourceVersion", rv}};
  if (labelled) meta["labels"] = {{"gpufair.io/quota-config", "true"}};
  json cm = {{"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"metadata", meta}};
  if (!queues.empty()) cm["data"] = {{"queues.yaml", queues}};
  return cm.dump();
}

const std::string kTeamA =
    "queues:\n- name: team-a\n  namespaces: [team-a]\n  gpu: {deserved: 20, limit: 30}\n";
const std::string kTeamB =
    "queues:\n- name: team-b\n  namespaces: [team-b]\n  gpu: {deserved: 8}\n";
const std::string kBroken = "queues:\n- name: team-a\n  gpu: {deserved: lots}\n";

class QuotaWatcherTest : public ::testing::Test {
 protected:
  QuotaWatcherTest() {
    ON_CALL(*client_, send(_)).WillByDefault([this](const ApiRequest& request) {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      return reply(201, R"({"metadata":{"name":"ev"}})");
    });
  }
  std::vector<std::string> queueNames() {
    std::vector<std::string> names;
    for (const auto& q : mirror_.quotaConfig().queues) names.push_back(q.name);
    return names;
  }
  std::vector<ApiRequest> events() {
    EXPECT_TRUE(recorder_.waitIdle(std::chrono::milliseconds{5'000}));
    std::lock_guard lock(mu_);
    return requests_;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  state::Mirror mirror_{clock_};
  std::shared_ptr<NiceMock<MockKubeClient>> client_ = std::make_shared<NiceMock<MockKubeClient>>();
  std::mutex mu_;
  std::vector<ApiRequest> requests_;  // GUARDED_BY(mu_)
  EventRecorder recorder_{client_, clock_, EventRecorderOptions{}};
  QuotaWatcher watcher_{mirror_, kNs, &recorder_};
};

TEST_F(QuotaWatcherTest, TellsTheReflectorWhatToWatch) {
  ReflectorOptions options = watcher_.reflectorOptions();
  EXPECT_EQ(options.listPath, "/api/v1/namespaces/gpufair-system/configmaps");
  EXPECT_EQ(options.labelSelector, "gpufair.io/quota-config=true");
  EXPECT_FALSE(options.name.empty());
}

TEST_F(QuotaWatcherTest, AValidConfigMapIsAppliedAtOnce) {
  watcher_.replace({configMap("quotas", kTeamA)});
  ASSERT_EQ(queueNames(), std::vector<std::string>{"team-a"});
  EXPECT_EQ(mirror_.quotaConfig().queues[0].gpu.deserved, 20'000);
  EXPECT_TRUE(watcher_.healthy());
  EXPECT_EQ(watcher_.lastError(), "");
  EXPECT_EQ(watcher_.appliedChanges(), 1u);
  EXPECT_EQ(watcher_.configMaps(), 1u);

  const std::string raised =
      "queues:\n- name: team-a\n  namespaces: [team-a]\n  gpu: {deserved: 24}\n";
  watcher_.modified(configMap("quotas", raised, kNs, "2"));
  EXPECT_EQ(mirror_.quotaConfig().queues[0].gpu.deserved, 24'000);
  EXPECT_EQ(watcher_.appliedChanges(), 2u);
  EXPECT_TRUE(events().empty());
}

// Queue trees span ConfigMaps: a child whose parent is in no ConfigMap (deleted, or a cycle across
// two of them) is rejected with its file:line, and the last good tree stays in force.
TEST_F(QuotaWatcherTest, AnInvalidQueueTreeKeepsTheLastGoodTree) {
  const std::string dept = "queues:\n- name: research\n  gpu: {deserved: 8, limit: 8}\n";
  const std::string team =
      "queues:\n- name: team-a\n  parent: research\n  namespaces: [team-a]\n"
      "  gpu: {deserved: 8}\n";
  watcher_.replace({configMap("dept", dept), configMap("team", team)});
  ASSERT_EQ(queueNames(), (std::vector<std::string>{"research", "team-a"}));
  const QuotaConfig good = mirror_.quotaConfig();
  EXPECT_EQ(good.queues[1].parent, "research");

  watcher_.deleted(configMap("dept", dept));
  EXPECT_EQ(mirror_.quotaConfig(), good);
  EXPECT_FALSE(watcher_.healthy());
  EXPECT_THAT(watcher_.lastError(), HasSubstr("ConfigMap gpufair-system/team:3:11: queue "
                                              "\"team-a\": parent \"research\" is not a queue"));

  const std::string cycle = "queues:\n- name: research\n  parent: team-a\n";
  watcher_.added(configMap("dept", cycle, kNs, "2"));
  EXPECT_EQ(mirror_.quotaConfig(), good);
  EXPECT_THAT(watcher_.lastError(), HasSubstr("parents form a cycle"));

  watcher_.modified(configMap("dept", dept, kNs, "3"));
  EXPECT_TRUE(watcher_.healthy());
  EXPECT_EQ(mirror_.quotaConfig(), good);
}

TEST_F(QuotaWatcherTest, AnInvalidChangeKeepsTheLastGoodConfigAndSaysWhy) {
  watcher_.added(configMap("quotas", kTeamA));
  const QuotaConfig good = mirror_.quotaConfig();
  watcher_.modified(configMap("quotas", kBroken, kNs, "2"));
  EXPECT_EQ(mirror_.quotaConfig(), good);
  EXPECT_FALSE(watcher_.healthy());
  EXPECT_EQ(watcher_.rejectedChanges(), 1u);
  EXPECT_THAT(watcher_.lastError(), HasSubstr("ConfigMap gpufair-system/quotas:3:"));
  EXPECT_THAT(watcher_.lastError(), HasSubstr("lots"));

  auto sent = events();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].path, "/api/v1/namespaces/gpufair-system/events");
  json event = body(sent[0]);
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "InvalidQuotaConfig");
  EXPECT_EQ(event["involvedObject"]["kind"], "ConfigMap");
  EXPECT_EQ(event["involvedObject"]["name"], "quotas");
  EXPECT_EQ(event["involvedObject"]["resourceVersion"], "2");
  EXPECT_THAT(event["message"].get<std::string>(), HasSubstr("gpufair-system/quotas:3:"));

  // Fixed: healthy again, applied.
  watcher_.modified(configMap("quotas", kTeamB, kNs, "3"));
  EXPECT_TRUE(watcher_.healthy());
  EXPECT_EQ(watcher_.lastError(), "");
  EXPECT_EQ(queueNames(), std::vector<std::string>{"team-b"});
}

TEST_F(QuotaWatcherTest, AnInvalidFirstConfigLeavesTheDefault) {
  watcher_.replace({configMap("quotas", kBroken)});
  EXPECT_EQ(mirror_.quotaConfig(), QuotaConfig{});
  EXPECT_FALSE(watcher_.healthy());
  EXPECT_EQ(watcher_.appliedChanges(), 0u);
}

TEST_F(QuotaWatcherTest, ConfigMapsOutsideGpufairsNamespaceGrantNothing) {
  watcher_.replace({configMap("quotas", kTeamA)});
  const std::string greedy =
      "queues:\n- name: team-x\n  namespaces: [team-x]\n  gpu: {deserved: 1000}\n";
  watcher_.added(configMap("quotas", greedy, "team-x"));
  watcher_.added(configMap("unlabelled", greedy, kNs, "1", /*labelled=*/false));
  EXPECT_EQ(queueNames(), std::vector<std::string>{"team-a"});
  EXPECT_EQ(watcher_.ignoredObjects(), 2u);
  EXPECT_EQ(watcher_.configMaps(), 1u);
  // Deleting the foreign one changes nothing either.
  watcher_.deleted(configMap("quotas", greedy, "team-x"));
  EXPECT_EQ(queueNames(), std::vector<std::string>{"team-a"});
}

TEST_F(QuotaWatcherTest, SeveralConfigMapsAreMerged) {
  watcher_.replace({configMap("team-b", kTeamB), configMap("team-a", kTeamA)});
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"team-a", "team-b"}));

  // A second definition of team-a conflicts: rejected, the merged config stays.
  watcher_.added(configMap("dup", kTeamA));
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"team-a", "team-b"}));
  EXPECT_FALSE(watcher_.healthy());
  EXPECT_THAT(watcher_.lastError(), HasSubstr("team-a"));
  auto sent = events();
  ASSERT_FALSE(sent.empty());
  bool namesDup = false;
  for (const auto& request : sent) namesDup |= body(request)["involvedObject"]["name"] == "dup";
  EXPECT_TRUE(namesDup);

  watcher_.deleted(configMap("dup", kTeamA));
  EXPECT_TRUE(watcher_.healthy());
  watcher_.deleted(configMap("team-a", kTeamA));
  EXPECT_EQ(queueNames(), std::vector<std::string>{"team-b"});
}

TEST_F(QuotaWatcherTest, DeletingEveryConfigMapMeansTheDefaultConfig) {
  watcher_.replace({configMap("quotas", kTeamA)});
  watcher_.deleted(configMap("quotas", kTeamA));
  EXPECT_EQ(mirror_.quotaConfig(), QuotaConfig{});
  EXPECT_TRUE(watcher_.healthy());
  EXPECT_EQ(watcher_.configMaps(), 0u);

  watcher_.added(configMap("quotas", kTeamA));
  watcher_.replace({});  // a relist that finds none
  EXPECT_EQ(mirror_.quotaConfig(), QuotaConfig{});
}

TEST_F(QuotaWatcherTest, ALabelRemovedMeansNoLongerAQuotaConfigMap) {
  watcher_.added(configMap("quotas", kTeamA));
  watcher_.modified(configMap("quotas", kTeamA, kNs, "2", /*labelled=*/false));
  EXPECT_EQ(mirror_.quotaConfig(), QuotaConfig{});
}

TEST_F(QuotaWatcherTest, AConfigMapWithoutQueuesYamlIsAnError) {
  watcher_.added(configMap("quotas", kTeamA));
  watcher_.added(configMap("empty", ""));
  EXPECT_FALSE(watcher_.healthy());
  EXPECT_THAT(watcher_.lastError(),
              HasSubstr("ConfigMap gpufair-system/empty: has no key queues.yaml"));
  EXPECT_EQ(queueNames(), std::vector<std::string>{"team-a"});
}

TEST_F(QuotaWatcherTest, UndecodableObjectsAreSkipped) {
  watcher_.added(configMap("quotas", kTeamA));
  watcher_.modified(R"({"metadata":{"name":"quotas","namespace":"gpufair-system","labels":7}})");
  EXPECT_EQ(watcher_.ignoredObjects(), 1u);
  EXPECT_EQ(queueNames(), std::vector<std::string>{"team-a"});
}

TEST(DescribeQuota, SummarisesQueues) {
  QuotaConfig config;
  config.queues = {gpufair::testing::MakeQueue("team-a").deserved(20).limit(30),
                   gpufair::testing::MakeQueue("team-b").deserved(2.5)};
  EXPECT_EQ(describeQuota(config), "2 queues: team-a 20/30, team-b 2.5/-; default queue 0/-");
}

// End to end: the real client and Reflector against the fake API server.
TEST(QuotaWatcherAgainstFakeApiServer, ChangesApplyWithinOneWatchEvent) {
  fake::FakeApiServer server;
  server.start();
  ClientConfig config;
  config.server = server.url();
  auto made = makeKubeClient(config);
  ASSERT_TRUE(made.ok()) << made.error();
  KubeClientPtr client = made.value();
  auto clock = std::make_shared<SystemClock>();
  state::Mirror mirror(clock);
  EventRecorder recorder(client, clock);
  QuotaWatcher watcher(mirror, kNs, &recorder);
  auto create = [&](const std::string& text) {
    json cm = json::parse(text);
    cm["metadata"].erase("resourceVersion");
    server.create(
        "/api/v1/namespaces/" + cm["metadata"]["namespace"].get<std::string>() + "/configmaps", cm);
  };
  create(configMap("quotas", kTeamA));
  create(configMap("quotas", "queues:\n- name: team-x\n  namespaces: [team-x]\n", "team-x"));
  auto queues = [&] {
    std::vector<std::string> names;
    for (const auto& q : mirror.quotaConfig().queues) names.push_back(q.name);
    return names;
  };
  const std::string item = "/api/v1/namespaces/gpufair-system/configmaps/quotas";
  auto setQueues = [&](const std::string& text) {
    server.mutate(item, [&](json& cm) { cm["data"]["queues.yaml"] = text; });
  };

  Reflector reflector(client, watcher.reflectorOptions(), watcher, clock);
  std::thread thread([&] { reflector.run(); });
  EXPECT_TRUE(fake::waitUntil([&] { return queues() == std::vector<std::string>{"team-a"}; }));

  setQueues(kBroken);
  EXPECT_TRUE(fake::waitUntil([&] { return !watcher.healthy(); }));
  EXPECT_EQ(queues(), std::vector<std::string>{"team-a"});
  EXPECT_TRUE(fake::waitUntil(
      [&] { return server.list("/api/v1/namespaces/gpufair-system/events").size() == 1; }));
  auto events = server.list("/api/v1/namespaces/gpufair-system/events");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "InvalidQuotaConfig");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "quotas");

  setQueues(kTeamB);
  EXPECT_TRUE(fake::waitUntil([&] { return queues() == std::vector<std::string>{"team-b"}; }));
  EXPECT_TRUE(watcher.healthy());
  server.remove(item);
  EXPECT_TRUE(fake::waitUntil([&] { return mirror.quotaConfig() == QuotaConfig{}; }));
  EXPECT_EQ(watcher.ignoredObjects(), 0u);  // the team-x ConfigMap was never even listed
  reflector.stop();
  thread.join();
}

}  // namespace
}  // namespace gpufair::k8s
