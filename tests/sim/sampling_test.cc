#include "gpufair/sim/sampling.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufair::sim {
namespace {

using ::testing::HasSubstr;

MilliGpu sumOf(const std::vector<MilliGpu>& requests, const std::vector<std::size_t>& order) {
  MilliGpu s = 0;
  for (std::size_t i : order) s += requests[i];
  return s;
}

TEST(Rng, IsMt19937_64) {
  Rng ours(42);
  std::mt19937_64 std(42);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(ours.next(), std());
}

TEST(Rng, BelowStaysInRangeAndShuffleIsAPermutation) {
  Rng rng(7);
  for (int i = 0; i < 1000; ++i) ASSERT_LT(rng.below(3), 3u);
  std::vector<int> v(100);
  std::iota(v.begin(), v.end(), 0);
  auto shuffled = v;
  rng.shuffle(shuffled);
  EXPECT_NE(shuffled, v);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, v);
}

TEST(LoadLimit, RoundsDownRobustly) {
  EXPECT_EQ(loadLimit(1.3, 6212000), 8075600);
  EXPECT_EQ(loadLimit(1.0, 6212000), 6212000);
  EXPECT_EQ(loadLimit(0.5, 3), 1);
}

TEST(Sampling, ParsesModeNames) {
  EXPECT_EQ(parseSampling("inflate"), Sampling::kInflate);
  EXPECT_EQ(parseSampling("resample"), Sampling::kResample);
  EXPECT_EQ(parseSampling("bogus"), std::nullopt);
  EXPECT_STREQ(samplingName(Sampling::kResample), "resample");
}

TEST(Sampling, ResampleStopsAtTheFirstPodThatWouldPassTheLoad) {
  // One template of one GPU on a 10-GPU cluster at load 1.3: exactly 13 pods.
  const std::vector<MilliGpu> one{1000};
  auto order = samplePods(one, 10000, {1.3, Sampling::kResample, 1});
  ASSERT_TRUE(order.ok()) << order.error();
  EXPECT_EQ(order->size(), 13u);

  const std::vector<MilliGpu> requests{8000, 500, 1000, 0, 2000};
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    auto o = samplePods(requests, 20000, {1.3, Sampling::kResample, seed});
    ASSERT_TRUE(o.ok());
    const MilliGpu sum = sumOf(requests, *o);
    EXPECT_LE(sum, 26000);
    EXPECT_GT(sum, 26000 - 8000) << "stops only when some pod would pass the load";
  }
}

TEST(Sampling, IsDeterministicForASeedAndDiffersAcrossSeeds) {
  std::vector<MilliGpu> requests(50);
  for (std::size_t i = 0; i < requests.size(); ++i) requests[i] = 100 * (i % 10 + 1);
  for (Sampling mode : {Sampling::kInflate, Sampling::kResample}) {
    auto a = samplePods(requests, 20000, {1.3, mode, 42});
    auto b = samplePods(requests, 20000, {1.3, mode, 42});
    auto c = samplePods(requests, 20000, {1.3, mode, 43});
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(*a, *b) << samplingName(mode);
    EXPECT_NE(*a, *c) << samplingName(mode);
  }
}

TEST(Sampling, InflateSubmitsEveryTracePodOnceShuffledThenDrawsMore) {
  std::vector<MilliGpu> requests(40, 1000);  // 40 GPUs asked of a 50-GPU cluster
  auto order = samplePods(requests, 50000, {1.3, Sampling::kInflate, 42});
  ASSERT_TRUE(order.ok());
  ASSERT_EQ(order->size(), 65u);  // 65 GPUs = 1.3 x 50
  std::vector<std::size_t> head(order->begin(), order->begin() + 40);
  std::vector<std::size_t> sorted = head;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> all(40);
  std::iota(all.begin(), all.end(), std::size_t{0});
  EXPECT_EQ(sorted, all) << "the first 40 are the trace, each pod once";
  EXPECT_NE(head, all) << "in a shuffled order";
}

TEST(Sampling, InflateDropsRandomPodsOfATraceAboveTheLoad) {
  std::vector<MilliGpu> requests(100, 1000);
  auto order = samplePods(requests, 50000, {1.3, Sampling::kInflate, 3});
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->size(), 65u);
  std::vector<std::size_t> sorted = *order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "no repeats";
}

TEST(Sampling, ResampleShufflesTheDraws) {
  // Submission order must not follow the template order (index 0 first, ...).
  std::vector<MilliGpu> requests(30, 100);
  auto order = samplePods(requests, 10000, {1.0, Sampling::kResample, 5});
  ASSERT_TRUE(order.ok());
  EXPECT_FALSE(std::is_sorted(order->begin(), order->end()));
}

TEST(Sampling, RefusesWorkloadsThatCannotReachTheLoad) {
  const std::vector<MilliGpu> cpuOnly{0, 0};
  auto noGpu = samplePods(cpuOnly, 1000, {});
  ASSERT_FALSE(noGpu.ok());
  EXPECT_THAT(noGpu.error(), HasSubstr("no pod of the workload requests a GPU"));
  const std::vector<MilliGpu> some{1000};
  EXPECT_FALSE(samplePods(some, 0, {}).ok());
  EXPECT_FALSE(samplePods(some, 1000, {0.0, Sampling::kInflate, 1}).ok());
}

}  // namespace
}  // namespace gpufair::sim
