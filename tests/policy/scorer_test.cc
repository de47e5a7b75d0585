#include "gpufair/policy/scorer.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::rawScores;

// n1: 8 free of 8; n2: 3 free of 8; n3: 4 free of 8.
policy::SnapshotPtr threeNodes() {
  return testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8), MakeNode("n3").gpus(8)},
      {MakePod("a", "x").gpus(5).on("n2"), MakePod("a", "y").gpus(4).on("n3")});
}

TEST(SpreadScorer, PrefersMostFreeAfterPlacement) {
  auto snap = threeNodes();
  auto raw = rawScores(*makeSpreadScorer(), *snap, MakePod("a", "p").gpus(2));
  EXPECT_GT(raw[0], raw[2]);
  EXPECT_GT(raw[2], raw[1]);
  EXPECT_DOUBLE_EQ(raw[0], 6.0 / 8);
}

TEST(BinpackScorer, PrefersMostAllocatedAfterPlacement) {
  auto snap = threeNodes();
  auto raw = rawScores(*makeBinpackScorer(), *snap, MakePod("a", "p").gpus(2));
  EXPECT_GT(raw[1], raw[2]);
  EXPECT_GT(raw[2], raw[0]);
  EXPECT_DOUBLE_EQ(raw[1], 7.0 / 8);
}

TEST(BlockFitScorer, KeepsTheOnlyLargeBlockWhole) {
  auto snap = threeNodes();
  // 2 GPUs: n2 (3 free -> 1) loses a 2-block offered by 3 nodes; n3 (4 -> 2) loses the 4-block
  // offered by 2 nodes; n1 (8 -> 6) loses the only 8-block. n2 costs least.
  auto raw = rawScores(*makeBlockFitScorer(), *snap, MakePod("a", "p").gpus(2));
  EXPECT_GT(raw[1], raw[2]);
  EXPECT_GT(raw[2], raw[0]);
}

TEST(BlockFitScorer, ExactFitLosesNothingUsable) {
  auto snap = threeNodes();
  // 4 GPUs: n3 (4 -> 0) loses blocks 1, 2, 4 each offered by 3, 3, 2 nodes: 1/3 + 2/3 + 4/2 = 3;
  // n1 (8 -> 4) loses the only 8-block: 8/1 = 8. n2 does not fit and is not asked.
  auto raw = rawScores(*makeBlockFitScorer(), *snap, MakePod("a", "p").gpus(4));
  EXPECT_GT(raw[2], raw[0]);
}

TEST(BlockFitScorer, TightestFitBreaksTies) {
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(10), MakeNode("n2").gpus(10)},
                                  {MakePod("a", "x").gpus(3).on("n2")});
  // 1 GPU: n1 10 -> 9 and n2 7 -> 6 lose no power-of-two block; n2 is tighter.
  auto raw = rawScores(*makeBlockFitScorer(), *snap, MakePod("a", "p").gpus(1));
  EXPECT_GT(raw[1], raw[0]);
}

TEST(ScorerRegistry, KnownNames) {
  for (const auto& name : scorerNames()) {
    ScorerPtr s = makeScorer(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->name(), name);
  }
  EXPECT_EQ(makeScorer(kDefaultScorer)->name(), "fgdm");
  EXPECT_EQ(makeScorer("no-such-scorer"), nullptr);
}

TEST(ScorerRegistry, OneRowPerStrategyDefaultFirst) {
  const auto registry = scorerRegistry();
  ASSERT_FALSE(registry.empty());
  EXPECT_EQ(registry.front().name, kDefaultScorer);
  std::vector<std::string> names;
  for (const ScorerInfo& info : registry) {
    SCOPED_TRACE(std::string(info.name));
    EXPECT_FALSE(info.description.empty());
    EXPECT_EQ(info.description.find('\n'), std::string_view::npos);  // one line for help texts
    EXPECT_EQ(findScorer(info.name), &info);
    ScorerPtr built = info.make(ScorerOptions{});
    ASSERT_NE(built, nullptr);
    EXPECT_EQ(built->name(), info.name);
    EXPECT_EQ(std::count(names.begin(), names.end(), info.name), 0) << "listed twice";
    names.emplace_back(info.name);
  }
  EXPECT_EQ(names, scorerNames());
  EXPECT_EQ(findScorer("default"), &registry.front());
  EXPECT_EQ(findScorer("Blockfit"), nullptr);  // names are exact
}

TEST(ScorerRegistry, OptionsReachTheFactory) {
  // "random" mixes its seed into every score: two seeds give two different orders somewhere.
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8),
                                   MakeNode("n3").gpus(8), MakeNode("n4").gpus(8)},
                                  {});
  const Pod pod = MakePod("t", "p").gpus(1);
  ScorerOptions one;
  one.seed = 1;
  ScorerOptions two;
  two.seed = 2;
  const auto a = testing::rawScores(*findScorer("random")->make(one), *snap, pod);
  const auto b = testing::rawScores(*findScorer("random")->make(two), *snap, pod);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, testing::rawScores(*makeScorer("random", one), *snap, pod));
}

TEST(NormalizeScores, BestGetsTenOthersBelow) {
  std::vector<double> raw{1.0, 3.0, 2.0, 3.0, 2.999};
  auto s = normalizeScores(raw);
  EXPECT_EQ(s, (std::vector<int>{0, 10, 5, 10, 9}));
}

TEST(NormalizeScores, AllEqualAllTen) {
  std::vector<double> raw{4.0, 4.0};
  EXPECT_EQ(normalizeScores(raw), (std::vector<int>{10, 10}));
  EXPECT_TRUE(normalizeScores({}).empty());
}

}  // namespace
}  // namespace gpufair::policy
