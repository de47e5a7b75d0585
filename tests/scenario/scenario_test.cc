// Declarative cluster scenarios, run by one loop the way kube-scheduler drives gpufair:
// for each pod in turn, filter over every node, prioritize the feasible ones, bind to the highest
// score (ties: first node by name), and check where it went or why it was refused.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/filter.h"
#include "gpufair/state/mirror.h"

#include "testing/builders.h"

namespace gpufair {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

struct Step {
  policy::Pod pod;
  std::string node;    // expected placement; empty: expected refusal
  std::string reason;  // expected refusal reason (substring of the first node's reason)
};

struct Scenario {
  std::string name;
  std::vector<policy::Node> nodes;
  std::vector<policy::Pod> running;
  std::vector<QueueQuota> queues;
  std::string scorer;
  std::vector<Step> steps;
};

void PrintTo(const Scenario& s, std::ostream* os) {
  *os << s.name;
}

class ScenarioTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(ScenarioTest, Runs) {
  const Scenario& sc = GetParam();
  state::Mirror mirror(std::make_shared<testing::ManualClock>());
  QuotaConfig quota;
  quota.queues = sc.queues;
  mirror.setQuotaConfig(quota);
  for (const auto& n : sc.nodes) mirror.upsertNode(n);
  for (const auto& p : sc.running) mirror.upsertPod(p);
  auto scorer = policy::makeScorer(sc.scorer);
  ASSERT_NE(scorer, nullptr);

  for (std::size_t i = 0; i < sc.steps.size(); ++i) {
    const Step& step = sc.steps[i];
    SCOPED_TRACE("step " + std::to_string(i) + ": pod " + step.pod.key());
    mirror.notePending(step.pod);
    const policy::Pod pod = *mirror.findPod(step.pod.uid);
    auto snap = mirror.snapshot();
    std::vector<std::string_view> all;
    for (const auto& n : snap->nodes()) all.push_back(n->name());

    policy::FilterResult filtered = policy::filter(*snap, pod, all);
    if (step.node.empty()) {
      ASSERT_TRUE(filtered.feasible.empty()) << "placed although a refusal was expected";
      const auto& verdicts =
          filtered.unresolvable.empty() ? filtered.failed : filtered.unresolvable;
      ASSERT_FALSE(verdicts.empty());
      EXPECT_NE(verdicts.front().reason.find(step.reason), std::string::npos)
          << verdicts.front().reason;
      continue;
    }
    ASSERT_FALSE(filtered.feasible.empty())
        << (filtered.failed.empty() ? filtered.unresolvable : filtered.failed).front().reason;
    auto scores = policy::prioritize(*snap, pod, filtered.feasible, *scorer);
    auto best = std::max_element(scores.begin(), scores.end(),
                                 [](const auto& a, const auto& b) { return a.score < b.score; });
    EXPECT_EQ(best->node, step.node);
    auto bound = mirror.assume(pod.uid, best->node);
    ASSERT_TRUE(bound.ok()) << bound.error();
    mirror.confirm(pod.uid);
  }
}

std::vector<policy::Node> fourByTen() {
  return {MakeNode("node-1").gpus(10), MakeNode("node-2").gpus(10), MakeNode("node-3").gpus(10),
          MakeNode("node-4").gpus(10)};
}

std::vector<QueueQuota> teams() {
  return {MakeQueue("team-a").deserved(20).limit(30), MakeQueue("team-b").deserved(20).limit(30)};
}

// Team A submits six 3-GPU pods, then team B asks for 8 GPUs on one node.
std::vector<Step> sixThreesThenEight(std::vector<std::string> placements, std::string eight) {
  std::vector<Step> steps;
  for (int i = 0; i < 6; ++i) {
    steps.push_back({MakePod("team-a", "train-" + std::to_string(i)).gpus(3), placements[i], ""});
  }
  steps.push_back(
      {MakePod("team-b", "big").gpus(8), eight, eight.empty() ? "fewer than 8 GPUs free" : ""});
  return steps;
}

INSTANTIATE_TEST_SUITE_P(Greedy, ScenarioTest,
                         ::testing::Values(Scenario{
                             "QueueAtLimitIsRefusedWhileAnotherSchedules",
                             fourByTen(),
                             {MakePod("team-a", "r1").gpus(10).on("node-1"),
                              MakePod("team-a", "r2").gpus(10).on("node-2"),
                              MakePod("team-a", "r3").gpus(10).on("node-3")},
                             teams(),
                             "blockfit",
                             {{MakePod("team-a", "one-more").gpus(1), "",
                               "queue team-a at 30/30 GPUs (limit); pod needs 1 GPU"},
                              {MakePod("team-b", "fits").gpus(4), "node-4", ""},
                              {MakePod("team-a", "still-no").gpus(1), "",
                               "queue team-a at 30/30 GPUs (limit)"},
                              {MakePod("team-b", "cpu-only"), "node-1", ""}}}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Fragmentation, ScenarioTest,
    ::testing::Values(
        Scenario{
            "SpreadLeavesNoRoomForEight",
            fourByTen(),
            {},
            teams(),
            "spread",
            sixThreesThenEight({"node-1", "node-2", "node-3", "node-4", "node-1", "node-2"}, "")},
        Scenario{"DefaultKeepsTwoNodesWhole",
                 fourByTen(),
                 {},
                 teams(),
                 "blockfit",
                 sixThreesThenEight({"node-1", "node-1", "node-1", "node-2", "node-2", "node-2"},
                                    "node-3")},
        // The default (fgdm) with no workload learned yet: the 3-GPU pod stands for it, and a
        // third one on a node would strand its last GPU, so two per node; the 8 fits.
        Scenario{"DefaultFitsEight",
                 fourByTen(),
                 {},
                 teams(),
                 policy::kDefaultScorer,
                 sixThreesThenEight({"node-1", "node-1", "node-2", "node-2", "node-3", "node-3"},
                                    "node-4")},
        // Against a workload of 3-GPU pods, a third pod on a node would strand its last GPU
        // (fragmentation +1 GPU), which costs more than opening a fresh node (0.3): two per node.
        Scenario{"FgdPlusAlsoFitsEight",
                 fourByTen(),
                 {},
                 teams(),
                 "fgdplus",
                 sixThreesThenEight({"node-1", "node-1", "node-2", "node-2", "node-3", "node-3"},
                                    "node-4")},
        Scenario{"BinpackAlsoFits",
                 fourByTen(),
                 {},
                 teams(),
                 "binpack",
                 sixThreesThenEight({"node-1", "node-1", "node-1", "node-2", "node-2", "node-2"},
                                    "node-3")}),
    [](const auto& info) { return info.param.name; });

std::vector<policy::Node> twoByTwo() {
  return {MakeNode("node-1").gpus(2), MakeNode("node-2").gpus(2)};
}

// Two halves, then a pod that needs two whole GPUs: packing the halves onto one GPU keeps a node
// whole; spreading them leaves no node with two whole GPUs.
std::vector<Step> twoHalvesThenTwo(std::string second, std::string two) {
  return {{MakePod("team-a", "half-1").share(0.5), "node-1", ""},
          {MakePod("team-a", "half-2").share(0.5), second, ""},
          {MakePod("team-b", "two").gpus(2), two, two.empty() ? "fewer than 2 GPUs free" : ""}};
}

INSTANTIATE_TEST_SUITE_P(
    FractionalGpus, ScenarioTest,
    ::testing::Values(Scenario{"FgdSharesOneGpuAndKeepsANodeWhole",
                               twoByTwo(),
                               {},
                               teams(),
                               "fgd",
                               twoHalvesThenTwo("node-1", "node-2")},
                      Scenario{"DefaultAlsoKeepsANodeWhole",
                               twoByTwo(),
                               {},
                               teams(),
                               policy::kDefaultScorer,
                               twoHalvesThenTwo("node-1", "node-2")},
                      Scenario{"FgdPlusSharesOneGpu",
                               twoByTwo(),
                               {},
                               teams(),
                               "fgdplus",
                               twoHalvesThenTwo("node-1", "node-2")},
                      Scenario{"SpreadBreaksBothNodes",
                               twoByTwo(),
                               {},
                               teams(),
                               "spread",
                               twoHalvesThenTwo("node-2", "")},
                      Scenario{"QueueChargedForFractions",
                               twoByTwo(),
                               {MakePod("team-a", "r1").gpus(1).on("node-1")},
                               {MakeQueue("team-a").deserved(1).limit(1.5)},
                               "fgd",
                               {{MakePod("team-a", "half").share(0.5), "node-1", ""},
                                {MakePod("team-a", "quarter").share(0.25), "",
                                 "queue team-a at 1.5/1.5 GPUs (limit); pod needs 0.25 GPUs"}}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gpufair
