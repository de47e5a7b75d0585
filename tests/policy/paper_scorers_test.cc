// The paper's baselines and fgd: each one's preference on a small table of nodes.
#include <gtest/gtest.h>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::rawScores;

// Index of the best raw score (first among equals), i.e. the node (by name order) chosen.
std::size_t best(const std::vector<double>& raw) {
  return static_cast<std::size_t>(std::max_element(raw.begin(), raw.end()) - raw.begin());
}

// a: idle 8 GPUs; b: 6 of 8 GPUs used, 16 of 32 CPUs; c: 2 of 8 used.
SnapshotPtr table() {
  return testing::snapshotOf(
      {MakeNode("a").gpus(8).cpu(32), MakeNode("b").gpus(8).cpu(32), MakeNode("c").gpus(8).cpu(32)},
      {MakePod("t", "b1").gpus(6).cpu(16).on("b"), MakePod("t", "c1").gpus(2).cpu(4).on("c")});
}

TEST(BestFitScorer, LeastLeftoverWins) {
  auto raw = rawScores(*makeBestFitScorer(), *table(), MakePod("t", "p").gpus(1).cpu(2));
  EXPECT_EQ(best(raw), 1u);  // b leaves 1 GPU and 14 CPUs
  EXPECT_GT(raw[2], raw[0]);
  // (32-2)/32 * 0.5 + (8-1)/8 * 0.5 on the idle node.
  EXPECT_DOUBLE_EQ(raw[0], -(0.5 * 30.0 / 32 + 0.5 * 7.0 / 8));
}

TEST(DotProductScorer, SmallestProductWins) {
  auto raw = rawScores(*makeDotProductScorer(), *table(), MakePod("t", "p").gpus(1).cpu(2));
  EXPECT_EQ(best(raw), 1u);
  EXPECT_GT(raw[2], raw[0]);
}

TEST(RandomScorer, DeterministicPerSeedAndInRange) {
  auto snap = table();
  const Pod pod = MakePod("t", "p").gpus(1);
  auto one = rawScores(*makeRandomScorer(1), *snap, pod);
  EXPECT_EQ(one, rawScores(*makeRandomScorer(1), *snap, pod));
  for (double x : one) {
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 1.0);
  }
  bool differs = false;
  for (std::uint64_t seed = 2; seed < 6 && !differs; ++seed) {
    differs = rawScores(*makeRandomScorer(seed), *snap, pod) != one;
  }
  EXPECT_TRUE(differs);
  auto viaSnapshot = testing::snapshotOf({MakeNode("a").gpus(8), MakeNode("b").gpus(8)}, {}, {},
                                         SnapshotOptions{{}, nullptr, 42});
  auto plain = testing::snapshotOf({MakeNode("a").gpus(8), MakeNode("b").gpus(8)}, {});
  EXPECT_NE(rawScores(*makeRandomScorer(), *viaSnapshot, pod),
            rawScores(*makeRandomScorer(), *plain, pod));
}

// a: idle; b: GPU 0 shared (0.5 used); c: one whole GPU used, no shared GPU.
SnapshotPtr sharing() {
  return testing::snapshotOf(
      {MakeNode("a").gpus(4), MakeNode("b").gpus(4), MakeNode("c").gpus(4)},
      {MakePod("t", "b1").share(0.5).on("b"), MakePod("t", "c1").gpus(1).on("c")});
}

TEST(PackingScorer, SharedGpuThenUsedNodeThenIdleNode) {
  auto snap = sharing();
  auto raw = rawScores(*makePackingScorer(), *snap, MakePod("t", "p").share(0.25));
  EXPECT_GT(raw[1], raw[2]);
  EXPECT_GT(raw[2], raw[0]);
  raw = rawScores(*makePackingScorer(), *snap, MakePod("t", "p").gpus(1));
  EXPECT_GT(raw[1], raw[0]);  // whole GPU: a used node before an idle one
  EXPECT_GT(raw[2], raw[0]);
}

TEST(ClusteringScorer, SameRequestTogether) {
  // a: idle; b: only 1-GPU pods; c: a 1-GPU pod and a 0.5 pod; d: only 0.5 pods.
  auto snap = testing::snapshotOf(
      {MakeNode("a").gpus(4), MakeNode("b").gpus(4), MakeNode("c").gpus(4), MakeNode("d").gpus(4)},
      {MakePod("t", "b1").gpus(1).on("b"), MakePod("t", "c1").gpus(1).on("c"),
       MakePod("t", "c2").share(0.5).on("c"), MakePod("t", "d1").share(0.5).on("d")});
  auto raw = rawScores(*makeClusteringScorer(), *snap, MakePod("t", "p").gpus(1));
  // Bands of 25 plus 25 · used / 4 GPUs: b 75 + 6, c 50 + 9, a 25 + 0, d 0 + 3.
  EXPECT_EQ(raw, (std::vector<double>{25, 81, 59, 3}));
  // Every GPU-sharing pod is one class, whatever its share: a 0.25 pod joins d's 0.5 pods.
  raw = rawScores(*makeClusteringScorer(), *snap, MakePod("t", "q").share(0.25));
  EXPECT_EQ(raw, (std::vector<double>{25, 6, 59, 78}));
  // A GPU-less pod has no class: every node alike.
  raw = rawScores(*makeClusteringScorer(), *snap, MakePod("t", "cpu").cpu(2));
  EXPECT_EQ(raw, (std::vector<double>{0, 0, 0, 0}));
}

TEST(FgdScorer, LeastFragmentationGrowthWinsAndChoosesTheGpu) {
  // Workload: whole GPUs only. a: free [500, 1000]; b: free [1000, 1000].
  auto w = std::make_shared<const Workload>(
      std::vector<WeightedShape>{{PodShape::of(MakePod("t", "w").gpus(1)), 1.0}});
  auto snap =
      testing::snapshotOf({MakeNode("a").gpus(2), MakeNode("b").gpus(2)},
                          {MakePod("t", "a1").share(0.5).on("a")}, {}, SnapshotOptions{{}, w, 0});
  auto fgd = makeScorer("fgd");
  const Pod half = MakePod("t", "p").share(0.5);
  auto raw = rawScores(*fgd, *snap, half);
  // a: GPU 0 500 -> 0, F 500 -> 0 (delta -500); b: F 0 -> 500 (delta +500). The paper's score
  // floor(100 * sigmoid(-delta / 1000)): 100 / (1 + e^-0.5) = 62.2, 100 / (1 + e^0.5) = 37.8.
  EXPECT_DOUBLE_EQ(raw[0], 62.0);
  EXPECT_DOUBLE_EQ(raw[1], 37.0);
  EXPECT_EQ(fgd->chooseGpu(*snap, half, *snap->findNode("a")), 0);
  // The workload given at construction wins over the snapshot's.
  auto halves = std::make_shared<const Workload>(
      std::vector<WeightedShape>{{PodShape::of(MakePod("t", "h").share(0.5)), 1.0}});
  ScorerOptions options;
  options.workload = halves;
  raw = rawScores(*makeScorer("fgd", options), *snap, half);
  // Against 0.5 tasks: a: [500,1000] -> [0,1000]: 0 -> 0; b: [1000,1000] -> [500,1000]: 0 -> 0.
  // No growth scores 100 * sigmoid(0) = 50 on both.
  EXPECT_DOUBLE_EQ(raw[0], 50.0);
  EXPECT_DOUBLE_EQ(raw[1], 50.0);
}

TEST(FgdScorer, WithoutAWorkloadThePodStandsForIt) {
  auto snap = testing::snapshotOf({MakeNode("a").gpus(2), MakeNode("b").gpus(2)},
                                  {MakePod("t", "a1").share(0.5).on("a")});
  auto raw = rawScores(*makeScorer("fgd"), *snap, MakePod("t", "p").share(0.5));
  // Against itself (0.5): both nodes keep every GPU usable: equal.
  EXPECT_DOUBLE_EQ(raw[0], raw[1]);
}

TEST(FgdPlusScorer, KeepsIdleNodesWholeWhenFragmentationTies) {
  // Workload: 1-GPU tasks. A 1-GPU pod grows F on neither node (all free GPUs stay whole), so fgd
  // ties; fgdplus keeps the idle node a and fills b.
  auto w = std::make_shared<const Workload>(
      std::vector<WeightedShape>{{PodShape::of(MakePod("t", "w").gpus(1)), 1.0}});
  auto snap =
      testing::snapshotOf({MakeNode("a").gpus(4), MakeNode("b").gpus(4)},
                          {MakePod("t", "b1").gpus(1).on("b")}, {}, SnapshotOptions{{}, w, 0});
  const Pod pod = MakePod("t", "p").gpus(1);
  auto fgd = rawScores(*makeScorer("fgd"), *snap, pod);
  EXPECT_DOUBLE_EQ(fgd[0], fgd[1]);
  auto plus = rawScores(*makeScorer("fgdplus"), *snap, pod);
  EXPECT_GT(plus[1], plus[0]);
  auto halves = std::make_shared<const Workload>(
      std::vector<WeightedShape>{{PodShape::of(MakePod("t", "w").gpus(4)), 1.0}});
  ScorerOptions options;
  options.workload = halves;
  // Against 4-GPU tasks: a 1-GPU pod on a (idle) makes its 3 free GPUs useless (+3000); on b the
  // 3 free GPUs were useless already (delta -1000): b wins by far.
  plus = rawScores(*makeScorer("fgdplus", options), *snap, pod);
  EXPECT_GT(plus[1], plus[0] + 1000);
}

TEST(DefaultChooseGpu, BestFit) {
  auto snap = sharing();
  auto spread = makeScorer("spread");
  EXPECT_EQ(spread->chooseGpu(*snap, MakePod("t", "p").share(0.5), *snap->findNode("b")), 0);
  EXPECT_EQ(spread->chooseGpu(*snap, MakePod("t", "p").share(0.6), *snap->findNode("b")), 1);
  EXPECT_EQ(spread->chooseGpu(*snap, MakePod("t", "p").gpus(1), *snap->findNode("b")), -1);
}

TEST(ScorerRegistry, AllPaperBaselinesAndFgd) {
  for (const char* name :
       {"bestfit", "dotprod", "random", "packing", "clustering", "fgd", "fgdplus"}) {
    ScorerPtr s = makeScorer(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->name(), name);
  }
  EXPECT_EQ(makeScorer("default")->name(), kDefaultScorer);
}

}  // namespace
}  // namespace gpufair::policy
