#include "gpufair/sim/replay.h"

#include <map>
#include <numeric>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/sim/sampling.h"

#include "sim/sim_testing.h"

namespace gpufair::sim {
namespace {

using ::testing::ElementsAre;

NodeRow node(std::string name, int gpus, std::string model, std::int64_t cpu,
             std::int64_t memMib = 1 << 20) {
  return NodeRow{std::move(name), cpu, memMib, gpus, std::move(model), 0};
}

PodRow pod(std::string name, int gpus, MilliGpu milli, std::int64_t cpu = 1000,
           std::vector<std::string> models = {}, std::int64_t memMib = 1024) {
  return PodRow{std::move(name), cpu, memMib, gpus, gpus > 0 ? milli : 0, std::move(models), 0};
}

// Scores nodes by a fixed preference (higher first); unknown nodes score 0.
class PreferenceScorer final : public policy::Scorer {
 public:
  explicit PreferenceScorer(std::map<std::string, double> prefs) : prefs_(std::move(prefs)) {}
  std::string_view name() const override { return "preference"; }
  void score(const policy::ClusterSnapshot&, const policy::Pod&,
             std::span<const policy::NodeState* const> nodes,
             std::span<double> out) const override {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto it = prefs_.find(nodes[i]->name());
      out[i] = it == prefs_.end() ? 0.0 : it->second;
    }
  }

 private:
  std::map<std::string, double> prefs_;
};

std::vector<std::size_t> inOrder(std::size_t n) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  return order;
}

std::vector<std::string> placedOn(const Scenario& s, const ReplayResult& r) {
  std::vector<std::string> out;
  for (int i : r.placements) out.push_back(i < 0 ? "-" : s.nodes[static_cast<std::size_t>(i)].name);
  return out;
}

class TinyCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = scenarioFromRows(
        {node("a", 2, "A", 8000), node("b", 4, "B", 4000), node("c", 1, "A", 16000)},
        {
            pod("two-gpus", 2, 1000),
            pod("four-gpus", 4, 1000),            // only b has 4, and it has 2 left: fails
            pod("half", 1, 500),                  // c is preferred
            pod("sixty", 1, 600),                 // c has 500 left; b next
            pod("cpu-hungry", 0, 0, 20000),       // no node has 20 CPUs
            pod("b-only", 1, 1000, 500, {"B"}),   // b's last whole GPU
            pod("forty", 1, 400),                 // back to c, sharing its GPU
            pod("whole-a", 1, 1000, 500, {"A"}),  // c is full: a
        },
        "tiny");
    ASSERT_TRUE(s.ok()) << s.error();
    scenario = std::move(s.value());
  }
  Scenario scenario;
  PreferenceScorer prefer{{{"c", 3}, {"b", 2}, {"a", 1}}};
};

TEST_F(TinyCluster, PlacesOnTheBestFittingNodeAndFailsForGood) {
  const auto order = inOrder(scenario.templates.size());
  ReplayResult r = replay(scenario, order, prefer, {});
  EXPECT_THAT(placedOn(scenario, r), ElementsAre("b", "-", "c", "b", "-", "b", "c", "a"));
  EXPECT_EQ(r.placed, 6u);
  EXPECT_EQ(r.failed, 2u);
  EXPECT_EQ(r.failedGpus, 4000);
  EXPECT_EQ(r.capacity, 7000);
  EXPECT_EQ(r.gpuIndexes[2], 0) << "the fractional pod's GPU on c";
  EXPECT_EQ(r.gpuIndexes[6], 0) << "shares c's only GPU";
}

TEST_F(TinyCluster, EventsCountArrivedAndAllocatedRequests) {
  const auto order = inOrder(scenario.templates.size());
  ReplayResult r = replay(scenario, order, prefer, {});
  std::vector<MilliGpu> arrived, allocated;
  for (const auto& e : r.events) {
    arrived.push_back(e.arrived);
    allocated.push_back(e.allocated);
  }
  EXPECT_THAT(arrived, ElementsAre(2000, 6000, 6500, 7100, 7100, 8100, 8500, 9500));
  EXPECT_THAT(allocated, ElementsAre(2000, 2000, 2500, 3100, 3100, 4100, 4500, 5500));
}

TEST_F(TinyCluster, CpuAndMemoryCountInFit) {
  // c is preferred, but after a 15-CPU pod it has 1 CPU left.
  auto s = scenarioFromRows({node("a", 2, "A", 8000), node("c", 2, "A", 16000, 2048)},
                            {pod("big-cpu", 1, 1000, 15000), pod("two-cpus", 1, 1000, 2000),
                             pod("big-mem", 1, 1000, 500, {}, 4096)},
                            "cpu");
  ASSERT_TRUE(s.ok());
  ReplayResult r = replay(*s, inOrder(3), prefer, {});
  EXPECT_THAT(placedOn(*s, r), ElementsAre("c", "a", "a"));
}

TEST_F(TinyCluster, RunningPodsStartAllocated) {
  policy::Pod running = toPod(pod("resident", 2, 1000));
  running.nodeName = "b";
  running.phase = policy::PodPhase::kRunning;
  scenario.running.push_back(running);
  ReplayResult r = replay(scenario, std::vector<std::size_t>{0}, prefer, {});
  EXPECT_THAT(placedOn(scenario, r), ElementsAre("b"));
  EXPECT_EQ(r.events[0].allocated, 4000);
  // b is now full: a second two-GPU pod goes to a.
  r = replay(scenario, std::vector<std::size_t>{0, 0}, prefer, {});
  EXPECT_THAT(placedOn(scenario, r), ElementsAre("b", "a"));
}

TEST(Replay, BreaksTiesInASeededNodeOrder) {
  std::vector<NodeRow> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back(node("n" + std::to_string(i), 8, "", 96000));
  auto s = scenarioFromRows(nodes, {pod("p", 8, 1000)}, "ties");
  ASSERT_TRUE(s.ok());
  PreferenceScorer flat{{}};
  const std::vector<std::size_t> order(5, 0);
  auto run = [&](std::uint64_t seed) {
    ReplayOptions o;
    o.seed = seed;
    return placedOn(*s, replay(*s, order, flat, o));
  };
  EXPECT_EQ(run(42), run(42));
  std::set<std::string> firsts;
  for (std::uint64_t seed = 0; seed < 10; ++seed) firsts.insert(run(seed)[0]);
  EXPECT_GT(firsts.size(), 3u) << "different seeds start on different nodes";
  const auto placed = run(42);
  EXPECT_EQ(std::set<std::string>(placed.begin(), placed.end()).size(), 5u);
}

TEST(Replay, PrefilterChangesNothing) {
  if (!testing::haveTrace()) GTEST_SKIP() << "openb trace not found under ../shared";
  auto nodes = parseNodeCsv(testing::sliceOf("openb_node_list_gpu_node.csv", 20, 60), "nodes");
  auto pods = parsePodCsv(testing::sliceOf("openb_pod_list_default.csv", 16, 400), "pods");
  ASSERT_TRUE(nodes.ok() && pods.ok());
  auto s = scenarioFromRows(*nodes, *pods, "slice");
  ASSERT_TRUE(s.ok());
  auto order = samplePods(s->templateRequests(), s->gpuCapacity(), {1.3, Sampling::kInflate, 42});
  ASSERT_TRUE(order.ok());
  auto workload = std::make_shared<const policy::Workload>(typicalWorkload(s->templates));
  for (const char* name : {"bestfit", "fgd", "packing"}) {
    auto scorer = policy::makeScorer(name, {0, workload});
    ASSERT_TRUE(scorer) << name;
    ReplayOptions on, off;
    on.workload = off.workload = workload;
    off.prefilter = false;
    ReplayResult a = replay(*s, *order, *scorer, on);
    ReplayResult b = replay(*s, *order, *scorer, off);
    EXPECT_EQ(a.placements, b.placements) << name;
    EXPECT_EQ(a.gpuIndexes, b.gpuIndexes) << name;
    EXPECT_GT(a.failed, 0u) << name << ": the slice is loaded to 130%";
    EXPECT_GT(a.events.back().fragmented, 0.0) << name;
  }
}

}  // namespace
}  // namespace gpufair::sim
