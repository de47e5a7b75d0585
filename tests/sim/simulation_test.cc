#include "gpufair/sim/simulation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/sim_testing.h"

namespace gpufair::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Seeds, ParsesRangesAndLists) {
  auto range = parseSeeds("42-51");
  ASSERT_TRUE(range.ok()) << range.error();
  EXPECT_EQ(range->size(), 10u);
  EXPECT_EQ(range->front(), 42u);
  EXPECT_EQ(range->back(), 51u);
  auto mixed = parseSeeds("1, 2,5-7,0");
  ASSERT_TRUE(mixed.ok()) << mixed.error();
  EXPECT_THAT(*mixed, ElementsAre(1, 2, 5, 6, 7, 0));
  EXPECT_THAT(*parseSeeds("7"), ElementsAre(7));
}

TEST(Seeds, RejectsBadSyntax) {
  for (const char* bad : {"", "x", "5-3", "1,,2", "1-", "-4", "1,1", "3,1-4", "1.5", "0-99999"}) {
    auto r = parseSeeds(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_THAT(r.error(), HasSubstr("seeds \"")) << bad;
    }
  }
}

TEST(Policies, ParsesCommaLists) {
  EXPECT_THAT(*parsePolicies("fgd, bestfit"), ElementsAre("fgd", "bestfit"));
  EXPECT_FALSE(parsePolicies("fgd,,bestfit").ok());
  EXPECT_FALSE(parsePolicies("fgd,fgd").ok());
}

class TraceSlice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::haveTrace()) GTEST_SKIP() << "openb trace not found under ../shared";
    auto nodes = parseNodeCsv(testing::sliceOf("openb_node_list_gpu_node.csv", 30, 40), "n.csv");
    auto pods = parsePodCsv(testing::sliceOf("openb_pod_list_default.csv", 20, 300), "p.csv");
    ASSERT_TRUE(nodes.ok() && pods.ok());
    auto s = scenarioFromRows(*nodes, *pods, "slice");
    ASSERT_TRUE(s.ok()) << s.error();
    scenario = std::move(s.value());
  }
  Scenario scenario;
};

TEST_F(TraceSlice, RunsEveryPolicyAndSeedAndSummarizes) {
  SimulationOptions o;
  o.policies = {"fgd", "bestfit", "random"};
  o.seeds = {42, 43, 44};
  o.threads = 2;
  Progress progress;
  o.progress = &progress;
  auto report = simulate(scenario, o);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(progress.runsDone.load(), 9u);
  EXPECT_EQ(progress.done.load(), progress.total.load());
  ASSERT_EQ(report->policies.size(), 3u);
  for (const auto& p : report->policies) {
    ASSERT_EQ(p.runs.size(), 3u);
    EXPECT_EQ(p.runs[1].seed, 43u);
    ASSERT_EQ(p.allocationAt.size(), 4u);
    ASSERT_TRUE(p.allocationAt[2].has_value()) << p.policy;
    EXPECT_GT(*p.allocationAt[2], 50.0) << p.policy;
    EXPECT_LE(*p.allocationAt[3], 100.0) << p.policy;
    EXPECT_EQ(p.runs[0].curve.arrivedPercent.size(), 131u);
    EXPECT_GT(p.runs[0].failed, 0u);
  }
  // A seed fixes the submitted pods: the same for every policy.
  EXPECT_EQ(report->policies[0].runs[0].pods, report->policies[1].runs[0].pods);
  EXPECT_EQ(report->policies[0].runs[0].arrivedGpus, report->policies[2].runs[0].arrivedGpus);
}

TEST_F(TraceSlice, IsDeterministicWhateverTheThreads) {
  SimulationOptions o;
  o.policies = {"fgd", "random"};
  o.seeds = {7, 8};
  o.threads = 1;
  auto one = simulate(scenario, o);
  o.threads = 2;
  auto two = simulate(scenario, o);
  ASSERT_TRUE(one.ok() && two.ok());
  auto strip = [](std::string json) {
    auto j = nlohmann::json::parse(json);
    j.erase("seconds");
    j.erase("threads");
    for (auto& p : j["policies"]) {
      for (auto& r : p["runs"]) r.erase("seconds");
    }
    return j;
  };
  EXPECT_EQ(strip(toJson(*one)), strip(toJson(*two)));
}

TEST_F(TraceSlice, RejectsUnknownPoliciesBeforeReplaying) {
  SimulationOptions o;
  o.policies = {"fgd", "nope"};
  auto r = simulate(scenario, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("unknown policy \"nope\" (known: "));
  EXPECT_THAT(r.error(), HasSubstr("fgd"));
}

TEST(Simulation, ReplaysAYamlClusterAndWorkload) {
  const std::string dir = ::testing::TempDir();
  const std::string cluster = dir + "/sim_cluster.yaml";
  const std::string workload = dir + "/sim_workload.yaml";
  {
    std::ofstream(cluster) << R"(apiVersion: v1
kind: List
items:
- kind: Node
  metadata: {name: n1}
  status: {allocatable: {nvidia.com/gpu: "4", cpu: "32", memory: 128Gi}}
- kind: Node
  metadata: {name: n2}
  status: {allocatable: {nvidia.com/gpu: "8", cpu: "64", memory: 256Gi}}
- kind: Pod
  metadata: {name: resident, namespace: ml}
  spec:
    nodeName: n2
    containers: [{name: c, resources: {requests: {nvidia.com/gpu: "2", cpu: "4"}}}]
  status: {phase: Running}
)";
    std::ofstream(workload) << R"(kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers: [{name: c, resources: {requests: {nvidia.com/gpu: "1", cpu: "2"}}}]
---
kind: Pod
metadata: {name: big, namespace: ml}
spec:
  containers: [{name: c, resources: {requests: {nvidia.com/gpu: "4", cpu: "8"}}}]
)";
  }
  auto s = loadYamlScenario(cluster, workload, "gpufair-system");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->nodes.size(), 2u);
  EXPECT_EQ(s->running.size(), 1u);
  EXPECT_EQ(s->templates.size(), 2u);
  EXPECT_EQ(s->gpuCapacity(), 12000);
  SimulationOptions o;
  o.policies = {"bestfit"};
  o.seeds = {1, 2};
  auto report = simulate(*s, o);
  ASSERT_TRUE(report.ok()) << report.error();
  // 2 GPUs run already; the rest of the 12 fill up: allocation reaches 100% of capacity or close.
  EXPECT_GE(report->policies[0].runs[0].allocatedGpus, 10000);

  auto missing = loadYamlScenario(dir + "/nope.yaml", workload, "gpufair-system");
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace gpufair::sim
