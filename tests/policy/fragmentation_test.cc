#include "gpufair/policy/fragmentation.h"

#include <cmath>

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;

PodShape whole(int n) {
  PodShape s;
  s.gpuCount = n;
  return s;
}
PodShape share(MilliGpu m) {
  PodShape s;
  s.gpuShare = m;
  return s;
}

// A 4-GPU node whose GPUs have used [1000, 500, 0, 0]: free [0, 500, 1000, 1000], 2500 in all.
NodeState fourGpusHalfUsed() {
  return NodeState(MakeNode("n").gpus(4),
                   {std::make_shared<const Pod>(MakePod("a", "whole").gpus(1).on("n")),
                    std::make_shared<const Pod>(MakePod("a", "half").share(0.5).on("n"))},
                   1);
}

TEST(Fragmentation, HandComputedWholeAndFractional) {
  NodeState node = fourGpusHalfUsed();
  ASSERT_EQ(node.gpuUsed(0), 1000);  // the whole-GPU pod takes the emptiest GPU first (index 0)
  ASSERT_EQ(node.gpuUsed(1), 500);   // then the half goes best fit: GPU 1 (all equal, lowest)
  ASSERT_EQ(node.gpuUsed(2), 0);
  ASSERT_EQ(node.gpuUsed(3), 0);
  // Workload {1 GPU: 0.5, 0.5 of a GPU: 0.5}.
  //   1 GPU: fits (GPUs 2 and 3 are whole); GPUs with < 1000 free: 0 + 500 -> F(1 GPU) = 500.
  //   0.5:   fits (GPUs 1, 2, 3 have >= 500); GPUs with < 500 free: GPU 0 (0) -> F(0.5) = 0.
  //   F_n = 0.5 * 500 + 0.5 * 0 = 250.
  Workload w({{whole(1), 1.0}, {share(500), 1.0}});  // weights normalize to 0.5 each
  EXPECT_DOUBLE_EQ(nodeFragmentation(node, w), 250.0);
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), whole(1)), 500.0);
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), share(500)), 0.0);
  // 3 GPUs cannot run here at all: all 2500 free milli are fragmented for them.
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), whole(3)), 2500.0);
  // 0.6 of a GPU: only GPUs 2 and 3 have room; GPU 1's 500 is lost.
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), share(600)), 500.0);
  // A task without GPUs cannot use any GPU.
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), PodShape{}), 2500.0);
}

TEST(Fragmentation, ModelCpuAndMemoryMakeATaskUnableToRun) {
  NodeState node(MakeNode("n").gpus(2).model("V100").cpu(8).memGi(32), {}, 1);
  PodShape a100 = whole(1);
  a100.gpuModels = {"A100"};
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), a100), 2000.0);
  PodShape v100 = whole(1);
  v100.gpuModels = {"A100", "V100"};
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), v100), 0.0);

  PodShape hungry = whole(1);
  hungry.cpuMilli = 16000;
  // CPU counts only when asked (offline simulation).
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), hungry), 0.0);
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), hungry,
                                      {.checkCpuMemory = true, .scoreCpuMemory = false}),
                   2000.0);
  PodShape big = whole(1);
  big.memoryBytes = testing::MakePod("a", "x").memGi(64).obj().memoryBytes;
  EXPECT_DOUBLE_EQ(shapeFragmentation(FreeResources::of(node), big,
                                      {.checkCpuMemory = true, .scoreCpuMemory = false}),
                   2000.0);
}

TEST(Fragmentation, EmptyOrFullNodesAreNotFragmented) {
  NodeState empty(MakeNode("n").gpus(8), {}, 1);
  Workload w({{whole(1), 0.3}, {whole(8), 0.7}});
  EXPECT_DOUBLE_EQ(nodeFragmentation(empty, w), 0.0);
  NodeState full(MakeNode("n").gpus(2),
                 {std::make_shared<const Pod>(MakePod("a", "p").gpus(2).on("n"))}, 1);
  EXPECT_DOUBLE_EQ(nodeFragmentation(full, w), 0.0);
  // 7 free GPUs: the 8-GPU task (0.7) cannot run -> 0.7 * 7000.
  NodeState seven(MakeNode("n").gpus(8),
                  {std::make_shared<const Pod>(MakePod("a", "p").gpus(1).on("n"))}, 1);
  EXPECT_NEAR(nodeFragmentation(seven, w), 4900.0, 1e-9);
}

TEST(Fragmentation, CachedPerWorkloadAndClusterTotals) {
  auto w1 = std::make_shared<const Workload>(std::vector<WeightedShape>{{whole(1), 1.0}});
  auto w2 = std::make_shared<const Workload>(std::vector<WeightedShape>{{whole(4), 1.0}});
  auto snap = testing::snapshotOf(
      {MakeNode("a").gpus(4), MakeNode("b").gpus(4), MakeNode("c").gpus(4).unschedulable()},
      {MakePod("t", "x").share(0.5).on("a"), MakePod("t", "y").gpus(1).on("b")}, {},
      SnapshotOptions{{}, w2, 0});
  const NodeState& a = *snap->findNode("a");
  // w1 (1 GPU): node a has [500, 1000, 1000, 1000] free -> 500 lost; node b [0,1000x3] -> 0.
  EXPECT_DOUBLE_EQ(nodeFragmentation(a, w1), 500.0);
  EXPECT_DOUBLE_EQ(nodeFragmentation(a, w1), 500.0);  // cached
  // w2 (4 GPUs): neither a (3.5 free) nor b (3 free) can run it: all free is fragmented.
  EXPECT_DOUBLE_EQ(nodeFragmentation(a, w2), 3500.0);
  ClusterFragmentation c = clusterFragmentation(*snap);  // the snapshot's workload: w2
  EXPECT_EQ(c.free, 6500);                               // the cordoned node is left out
  EXPECT_DOUBLE_EQ(c.fragmented, 6500.0);
  EXPECT_DOUBLE_EQ(c.ratio(), 1.0);
  c = clusterFragmentation(*snap, *w1);
  EXPECT_DOUBLE_EQ(c.fragmented, 500.0);
  EXPECT_NEAR(c.ratio(), 500.0 / 6500.0, 1e-12);
}

TEST(Fragmentation, DeltaOfPlacingAPod) {
  NodeState node = fourGpusHalfUsed();  // free [0, 500, 1000, 1000]
  auto w = std::make_shared<const Workload>(
      std::vector<WeightedShape>{{whole(1), 1.0}, {share(500), 1.0}});
  // A 0.5 pod on GPU 1 (500 -> 0): 1-GPU frag 500 -> 0; 0.5 frag stays 0. F 250 -> 0: -250.
  // On GPU 2 (1000 -> 500): 1-GPU frag 500 -> 1000 (F 500). Best: GPU 1.
  int chosen = -2;
  const Pod half = MakePod("a", "p").share(0.5);
  EXPECT_DOUBLE_EQ(fragmentationDelta(node, half, w, {}, -1, &chosen), -250.0);
  EXPECT_EQ(chosen, 1);
  EXPECT_DOUBLE_EQ(fragmentationDelta(node, half, w, {}, 2), 250.0);
  // A whole GPU: free [0, 500, 0, 1000]: 1-GPU frag 500 (unchanged): delta 0.
  EXPECT_DOUBLE_EQ(fragmentationDelta(node, MakePod("a", "w").gpus(1), w, {}), 0.0);
}

TEST(Workload, GroupsNormalizesAndIndexesNeeds) {
  Workload w({{whole(2), 2.0}, {share(250), 1.0}, {whole(2), 1.0}, {share(250), 0.0}});
  ASSERT_EQ(w.shapes().size(), 2u);
  double sum = 0;
  for (const auto& s : w.shapes()) sum += s.weight;
  EXPECT_DOUBLE_EQ(sum, 1.0);
  EXPECT_EQ(std::vector<MilliGpu>(w.perGpuNeeds().begin(), w.perGpuNeeds().end()),
            (std::vector<MilliGpu>{250, 1000}));
  std::vector<Pod> pods{MakePod("a", "x").gpus(1), MakePod("a", "y").gpus(1),
                        MakePod("a", "cpu-only"), MakePod("a", "z").share(0.5)};
  Workload fromPods = Workload::fromPods(pods);
  ASSERT_EQ(fromPods.shapes().size(), 2u);
  EXPECT_NEAR(fromPods.shapes()[0].weight + fromPods.shapes()[1].weight, 1.0, 1e-12);
}

// serve leaves CPU and memory to kube-scheduler's fit but may measure them (scoreCpuMemory): GPUs
// free on a node whose CPU is exhausted are lost to every shape that needs CPU.
TEST(Fragmentation, ScoringCpuMemoryCountsGpusStrandedByCpu) {
  // 4 GPUs, 8 cores; a CPU-only pod holds 6 cores: 4000 milli-GPUs free, 2 cores free.
  NodeState node(MakeNode("n").gpus(4).cpu(8).memGi(64),
                 {std::make_shared<const Pod>(MakePod("a", "cpu-only").cpu(6).on("n"))}, 1);
  PodShape oneGpu = whole(1);
  oneGpu.cpuMilli = 4000;
  const Workload w({{oneGpu, 1.0}});
  const FitOptions fitOnly{.checkCpuMemory = false, .scoreCpuMemory = false};
  const FitOptions scored{.checkCpuMemory = false, .scoreCpuMemory = true};
  EXPECT_FALSE(fitOnly.measuresCpuMemory());
  EXPECT_TRUE(scored.measuresCpuMemory());
  // Not measured: every GPU is whole and free, nothing is lost.
  EXPECT_DOUBLE_EQ(nodeFragmentation(node, w, fitOnly), 0.0);
  // Measured: 2 cores < 4, so all 4000 free milli-GPUs are lost.
  EXPECT_DOUBLE_EQ(nodeFragmentation(node, w, scored), 4000.0);
  auto workload = std::make_shared<const Workload>(w);
  EXPECT_DOUBLE_EQ(nodeFragmentation(node, workload, fitOnly), 0.0);  // cached per option set
  EXPECT_DOUBLE_EQ(nodeFragmentation(node, workload, scored), 4000.0);

  // Placing a 1-GPU, 1-core pod on an 8-core node with 4 GPUs free: 7 cores left, the 3 GPUs
  // left still fit the shape (dF = 0). A 1-GPU pod taking 5 cores leaves 3 < 4: the 3 GPUs left
  // are lost (dF = 3000 - 0).
  NodeState empty(MakeNode("e").gpus(4).cpu(8).memGi(64), {}, 1);
  const Pod light = MakePod("a", "light").gpus(1).cpu(1);
  const Pod heavy = MakePod("a", "heavy").gpus(1).cpu(5);
  EXPECT_DOUBLE_EQ(fragmentationDelta(empty, light, workload, scored), 0.0);
  EXPECT_DOUBLE_EQ(fragmentationDelta(empty, heavy, workload, scored), 3000.0);
  EXPECT_DOUBLE_EQ(fragmentationDelta(empty, heavy, workload, fitOnly), 0.0);

  // A node whose allocatable CPU and memory are unknown (0) is not limited by them when only
  // scored; checked in fit, 0 means none.
  NodeState unknown(MakeNode("u").gpus(4), {}, 1);
  EXPECT_DOUBLE_EQ(nodeFragmentation(unknown, w, scored), 0.0);
  EXPECT_DOUBLE_EQ(nodeFragmentation(unknown, w, {.checkCpuMemory = true, .scoreCpuMemory = false}),
                   4000.0);
}

TEST(WorkloadModel, DecaysOlderObservations) {
  WorkloadModel m(0.5);
  m.observe(whole(1));    // weight 1
  m.observe(share(500));  // whole(1): 0.5, share: 1
  m.observe(share(500));  // whole(1): 0.25, share: 1.5
  EXPECT_DOUBLE_EQ(m.totalWeight(), 1.75);
  Workload w = m.distribution();
  ASSERT_EQ(w.shapes().size(), 2u);
  for (const auto& s : w.shapes()) {
    const double want = s.shape == whole(1) ? 0.25 / 1.75 : 1.5 / 1.75;
    EXPECT_NEAR(s.weight, want, 1e-12);
  }
  // A step of 10 (e.g. a long pause) nearly forgets the past; below the threshold it is dropped.
  m.observe(whole(8), 10);
  EXPECT_EQ(m.size(), 2u);  // whole(1): 0.25/1024 < 1e-3 is forgotten, share: 1.5/1024 kept
  EXPECT_TRUE(WorkloadModel().distribution().empty());
}

TEST(WorkloadModel, DistributionKeepsThePopularShapesCoveringAShare) {
  WorkloadModel m(1.0);  // no decay: plain counts
  for (int i = 0; i < 6; ++i) m.observe(whole(1));
  for (int i = 0; i < 3; ++i) m.observe(share(500));
  m.observe(whole(8));  // counts 6, 3, 1 of 10
  EXPECT_EQ(m.distribution().shapes().size(), 3u);
  EXPECT_EQ(m.distribution(1.0).shapes().size(), 3u);
  // 80 %: whole(1) covers 6, then share(500) 9 >= 8: whole(8) is left out; weights renormalized.
  const Workload w = m.distribution(0.8);
  ASSERT_EQ(w.shapes().size(), 2u);
  for (const auto& s : w.shapes()) {
    EXPECT_NEAR(s.weight, s.shape == whole(1) ? 6.0 / 9 : 3.0 / 9, 1e-12);
  }
  // 50 %: the most popular alone; any coverage keeps at least one shape.
  EXPECT_EQ(m.distribution(0.5).shapes().size(), 1u);
  EXPECT_EQ(m.distribution(0.0).shapes().size(), 1u);
}

}  // namespace
}  // namespace gpufair::policy
