#include "gpufair/sim/hindsight.h"

#include <gtest/gtest.h>

#include "gpufair/policy/scorer.h"

#include "hindsight_bins.h"

namespace gpufair::sim {
namespace {

NodeRow node(std::string name, int gpus, std::string model = "A", std::int64_t cpu = 32000) {
  return NodeRow{std::move(name), cpu, 1 << 20, gpus, std::move(model), 0};
}

PodRow pod(std::string name, int gpus, MilliGpu milli = 1000, std::int64_t cpu = 1000,
           std::vector<std::string> models = {}) {
  return PodRow{std::move(name), cpu, 1024, gpus, gpus > 0 ? milli : 0, std::move(models), 0};
}

// Two 4-GPU nodes; pods arrive 1, 1, 4, 2 GPUs. Spreading the two 1-GPU pods leaves no node for
// the 4-GPU pod; knowing it comes, the planner packs 4 + (1, 1, 2): all 8 GPUs.
TEST(Hindsight, PacksLargestFirstWithTheWholeArrivalSetKnown) {
  auto s = scenarioFromRows({node("a", 4), node("b", 4)},
                            {pod("one", 1), pod("two", 1), pod("four", 4), pod("pair", 2)}, "t");
  ASSERT_TRUE(s) << s.error();
  const std::vector<std::size_t> order{0, 1, 2, 3};
  EXPECT_EQ(hindsightAllocation(*s, order, 4), 8000);
  // Only the first two arrived: 2 GPUs.
  EXPECT_EQ(hindsightAllocation(*s, order, 2), 2000);
  auto spread = policy::makeScorer("spread");
  ReplayOptions options;
  const ReplayResult online = replay(*s, order, *spread, options);
  EXPECT_EQ(online.events.back().allocated, 4000);  // 1 + 1 spread, then only the 2-GPU pod
}

// Node a has model B, node b model A. In arrival (and size) order the unrestricted pod takes a
// first and the B-only pod finds no node; placing pods allowed the fewest GPUs first fits both.
TEST(Hindsight, RestrictedPodsFirst) {
  auto s = scenarioFromRows({node("a", 2, "B"), node("b", 2, "A")},
                            {pod("any", 2), pod("onlyB", 2, 1000, 1000, {"B"})}, "t");
  ASSERT_TRUE(s) << s.error();
  const std::vector<std::size_t> order{0, 1};
  EXPECT_EQ(hindsightAllocation(*s, order, 2), 4000);
}

// CPU counts: a 1-GPU pod asking for the whole CPU of a node leaves its other GPU unusable.
TEST(Hindsight, CpuLimitsWhatFits) {
  auto s = scenarioFromRows({node("a", 2, "A", 8000)},
                            {pod("hungry", 1, 1000, 8000), pod("other", 1, 1000, 1000)}, "t");
  ASSERT_TRUE(s) << s.error();
  const std::vector<std::size_t> order{0, 1};
  EXPECT_EQ(hindsightAllocation(*s, order, 2), 1000);
}

// The replay-shaped result: one event at the last pod within 100 % of the 8 GPUs.
TEST(Hindsight, ReplayHasOneEventPerPercent) {
  auto s = scenarioFromRows({node("a", 4), node("b", 4)},
                            {pod("one", 1), pod("four", 4), pod("pair", 2), pod("more", 2)}, "t");
  ASSERT_TRUE(s) << s.error();
  const std::vector<std::size_t> order{0, 1, 2, 3};
  const int percents[] = {100};
  const ReplayResult r = hindsightReplay(*s, order, percents);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].arrived, 7000);  // 1 + 4 + 2; the next 2 would pass 8
  EXPECT_EQ(r.events[0].allocated, 7000);
  EXPECT_EQ(r.capacity, 8000);
}

// Two 1-GPU nodes; 0.4, 0.4, then a whole GPU. Spread puts one 0.4 on each GPU and the whole-GPU
// pod fails; the repair moves one 0.4 beside the other (0.8 of one GPU) and places it on the
// GPU so freed: 1.8 GPUs in all, every placed pod still placed.
TEST(Hindsight, RepairMovesOnePodToPlaceAFailedOne) {
  auto s = scenarioFromRows({node("a", 1), node("b", 1)},
                            {pod("x", 1, 400), pod("y", 1, 400), pod("whole", 1)}, "t");
  ASSERT_TRUE(s) << s.error();
  const std::vector<std::size_t> order{0, 1, 2};
  auto spread = policy::makeScorer("spread");
  const ReplayResult online = replay(*s, order, *spread, ReplayOptions{});
  ASSERT_EQ(online.failed, 1u);
  std::vector<detail::Bin> bins = detail::initialBins(*s);
  std::vector<std::vector<detail::Placed>> on;
  std::vector<std::size_t> failed;
  EXPECT_EQ(detail::planOfReplay(*s, online, order, bins, on, failed), 800);
  ASSERT_EQ(failed, std::vector<std::size_t>{2});
  EXPECT_EQ(detail::repairPlan(*s, bins, on, failed), 1000);
  EXPECT_EQ(bins[0].free + bins[1].free, 200);
  EXPECT_EQ(on[0].size() + on[1].size(), 3u);
  // The planner keeps the repaired plan of the scorer's replay: all 1.8 GPUs.
  EXPECT_EQ(hindsightAllocation(*s, order, 3, spread.get()), 1800);
}

// A failed pod that no single move can place stays failed: two 1-GPU nodes each full with one
// whole-GPU pod, and a third whole-GPU pod.
TEST(Hindsight, RepairLeavesWhatCannotBePlaced) {
  auto s =
      scenarioFromRows({node("a", 1), node("b", 1)}, {pod("p", 1), pod("q", 1), pod("r", 1)}, "t");
  ASSERT_TRUE(s) << s.error();
  const std::vector<std::size_t> order{0, 1, 2};
  auto spread = policy::makeScorer("spread");
  const ReplayResult online = replay(*s, order, *spread, ReplayOptions{});
  std::vector<detail::Bin> bins = detail::initialBins(*s);
  std::vector<std::vector<detail::Placed>> on;
  std::vector<std::size_t> failed;
  EXPECT_EQ(detail::planOfReplay(*s, online, order, bins, on, failed), 2000);
  EXPECT_EQ(detail::repairPlan(*s, bins, on, failed), 0);
  EXPECT_EQ(bins[0].free + bins[1].free, 0);
}

}  // namespace
}  // namespace gpufair::sim
