#include "gpufair/sim/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufair::sim {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Optional;

// Capacity 1000 milli-GPUs: an arrived/allocated amount of 10 is 1%.
ReplayEvent ev(MilliGpu arrived, MilliGpu allocated, double fragmented = 0) {
  return {arrived, allocated, fragmented};
}

TEST(Curve, MeansTheEventsWhoseArrivedPercentRoundsToThePoint) {
  const std::vector<ReplayEvent> events{ev(4, 4), ev(10, 10), ev(12, 12), ev(14, 8), ev(25, 20)};
  Curve c = curveOf(events, 1000, 3);
  ASSERT_EQ(c.arrivedPercent, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_THAT(c.allocatedPercent[0], Optional(DoubleNear(0.4, 1e-9)));  // 0.4% rounds to 0
  EXPECT_THAT(c.allocatedPercent[1], Optional(DoubleNear(1.0, 1e-9)))
      << "1.0, 1.2 and 1.4 round to 1: mean of 1.0, 1.2, 0.8";
  // 2.5% rounds half to even: to 2, as Python's round() does.
  EXPECT_THAT(c.allocatedPercent[2], Optional(DoubleNear(2.0, 1e-9)));
  EXPECT_THAT(c.allocatedPercent[3], Optional(DoubleNear(2.0, 1e-9)))
      << "no event at 3: falls back to the events at 2..4";
  EXPECT_EQ(c.allocatedAt(1), c.allocatedPercent[1]);
  EXPECT_EQ(c.allocatedAt(99), std::nullopt);
}

TEST(Curve, HasNoPointWhereNoEventIsNear) {
  Curve c = curveOf(std::vector<ReplayEvent>{ev(10, 10), ev(100, 90)}, 1000, 10, 5);
  ASSERT_EQ(c.arrivedPercent, (std::vector<int>{0, 5, 10}));
  EXPECT_THAT(c.allocatedPercent[0], Optional(DoubleNear(1.0, 1e-9))) << "from the event at 1%";
  EXPECT_EQ(c.allocatedPercent[1], std::nullopt);
  EXPECT_THAT(c.allocatedPercent[2], Optional(DoubleNear(9.0, 1e-9)));
}

TEST(Curve, ReportsFragmentationOfCapacityAndOfFreeGpus) {
  Curve c = curveOf(std::vector<ReplayEvent>{ev(500, 500, 100)}, 1000, 50, 50);
  EXPECT_THAT(c.fragmentedPercent[1], Optional(DoubleNear(10.0, 1e-9)));
  EXPECT_THAT(c.fragmentedOfFreePercent[1], Optional(DoubleNear(20.0, 1e-9)));
}

TEST(Median, OfOddEvenAndNoValues) {
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), std::nullopt);
}

RunReport runWith(std::uint64_t seed, std::vector<std::optional<double>> allocated) {
  RunReport r;
  r.seed = seed;
  for (std::size_t i = 0; i < allocated.size(); ++i) {
    r.curve.arrivedPercent.push_back(static_cast<int>(i + 1) * 50);
    r.curve.allocatedPercent.push_back(allocated[i]);
    r.curve.fragmentedPercent.push_back(0.0);
    r.curve.fragmentedOfFreePercent.push_back(0.0);
  }
  return r;
}

TEST(Summary, TakesTheMedianOverSeedsAtEachPoint) {
  SimulationReport report;
  report.summaryPoints = {50, 100, 150};
  PolicyReport p;
  p.policy = "x";
  p.runs = {runWith(1, {50, 90, std::nullopt}), runWith(2, {50, 94, std::nullopt}),
            runWith(3, {49, 92, std::nullopt}), runWith(4, {50, 96, 97})};
  report.policies.push_back(p);
  summarize(report);
  const auto& at = report.policies[0].allocationAt;
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0], 50.0);
  EXPECT_EQ(at[1], 93.0) << "mean of the middle two of 90, 92, 94, 96";
  EXPECT_EQ(at[2], 97.0) << "runs without a value are left out";
  EXPECT_EQ(report.policies[0].medianCurve.allocatedPercent[1], 93.0);

  const std::string table = summaryTable(report);
  EXPECT_THAT(table, HasSubstr("100%"));
  EXPECT_THAT(table, HasSubstr("93.00"));
  EXPECT_THAT(table, HasSubstr("97.00"));
}

}  // namespace
}  // namespace gpufair::sim
