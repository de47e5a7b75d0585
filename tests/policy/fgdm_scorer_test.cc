// fgdm on small clusters whose fragmentation, pressure and scores are computed by hand (see
// include/gpufair/policy/fgdm_scorer.h): score = floor(100 / (1 + e^(dF / 1000))) * 1e4, where
// dF is fgd's growth plus the scarcity term; for a GPU pod, minus 100 x the growth (in GPUs) of
// the node's CPU-stranded GPUs; where ties are broken by best fit (bestFitTies, a pod without
// GPUs, or a GPU pod while CPU binds), minus (free milli-GPUs left / (allocatable + 1)).
#include "gpufair/policy/fgdm_scorer.h"

#include <memory>

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::rawScores;

PodShape whole(int n, std::vector<std::string> models = {}) {
  PodShape s;
  s.gpuCount = n;
  s.gpuModels = std::move(models);
  return s;
}
PodShape share(MilliGpu m) {
  PodShape s;
  s.gpuShare = m;
  return s;
}
PodShape withCores(PodShape s, double cores) {
  s.cpuMilli = static_cast<std::int64_t>(cores * 1000);
  return s;
}
WorkloadPtr workloadOf(std::vector<WeightedShape> shapes) {
  return std::make_shared<const Workload>(std::move(shapes));
}

constexpr FgdmTuning kBestFit{1.0, true, true, true, 0.95};
FgdmTuning cpuBoundBestFit() {
  FgdmTuning t;
  t.cpuBoundRatio = 0.95;
  return t;
}

TEST(FgdmScorer, WholeGpusTiesGoToTheTighterNode) {
  // n1: 8 of 8 free; n2: 3 of 8; n3: 4 of 8. Against 2-GPU pods, 2 GPUs on n2 strand its last
  // GPU (dF = +1000, floor(100 / (1 + e)) = 26); on n1 and n3 nothing is stranded (dF = 0, 50):
  // a tie that best fit breaks for n3 (2 GPUs left) over n1 (6 left).
  auto snap =
      testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8), MakeNode("n3").gpus(8)},
                          {MakePod("a", "x").gpus(5).on("n2"), MakePod("a", "y").gpus(4).on("n3")});
  auto scorer = makeFgdmScorer(workloadOf({{whole(2), 1.0}}), kBestFit);
  auto raw = rawScores(*scorer, *snap, MakePod("a", "p").gpus(2));
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 6000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 26e4 - 1000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[2], 50e4 - 2000.0 / 8001);
}

TEST(FgdmScorer, ByDefaultTiesAreLeftToTheCaller) {
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(4)}, {});
  auto scorer = makeFgdmScorer(workloadOf({{whole(2), 1.0}}));
  auto raw = rawScores(*scorer, *snap, MakePod("a", "p").gpus(2));
  EXPECT_DOUBLE_EQ(raw[0], 50e4);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
}

TEST(FgdmScorer, PodWithoutGpusGoesToTheNodeWithFewestFreeGpus) {
  // a: 8 GPUs, 2 used; b: 8 GPUs, none used; c: 4 GPUs, all used. Against 1-GPU pods a CPU-only
  // pod strands nothing anywhere (dF = 0, score 50): the tie goes to c (0 free), then a (6000 of
  // 8001), then b (8000 of 8001), so its CPU is taken where the fewest GPUs need it.
  auto snap =
      testing::snapshotOf({MakeNode("a").gpus(8), MakeNode("b").gpus(8), MakeNode("c").gpus(4)},
                          {MakePod("t", "x").gpus(2).on("a"), MakePod("t", "y").gpus(4).on("c")});
  auto raw =
      rawScores(*makeFgdmScorer(workloadOf({{whole(1), 1.0}})), *snap, MakePod("t", "p").cpu(4));
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 6000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 8000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[2], 50e4);
  FgdmTuning off;
  off.gpuLessBestFitTies = false;
  raw = rawScores(*makeFgdmScorer(workloadOf({{whole(1), 1.0}}), off), *snap,
                  MakePod("t", "p").cpu(4));
  EXPECT_DOUBLE_EQ(raw[0], 50e4);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
}

// n1 and n2: 8 GPUs and 10 cores each; n1 runs a 1-GPU pod asking `cores`.
SnapshotPtr oneBusyNode(double cores) {
  return testing::snapshotOf({MakeNode("n1").gpus(8).cpu(10), MakeNode("n2").gpus(8).cpu(10)},
                             {MakePod("t", "x").gpus(1).cpu(cores).on("n1")});
}

TEST(FgdmScorer, GpuPodTiesGoToTheTighterNodeWhileCpuBindsIfAsked) {
  // 8 of 20 cores (0.4) and 1 of 16 GPUs (0.0625) allocated: 0.4 >= 0.95 x 0.0625, CPU binds.
  // Against 2-GPU pods nothing strands (dF = 0; the workload asks no CPU, so no GPU is
  // CPU-stranded), but CPU binds, so the capacity term counts: each node loses one copy of the
  // 2-GPU shape (7 -> 5 and 8 -> 6 free GPUs: 3 -> 2, 4 -> 3), 2000 x 0.5 = +1000 growth, 26.
  // Then best fit, n1 (5000 left) over n2 (6000). Off by default (cpuBoundRatio 0).
  auto raw = rawScores(*makeFgdmScorer(workloadOf({{whole(2), 1.0}}), cpuBoundBestFit()),
                       *oneBusyNode(8), MakePod("t", "p").gpus(2));
  EXPECT_DOUBLE_EQ(raw[0], 26e4 - 5000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 26e4 - 6000.0 / 8001);
  raw = rawScores(*makeFgdmScorer(workloadOf({{whole(2), 1.0}})), *oneBusyNode(8),
                  MakePod("t", "p").gpus(2));
  EXPECT_DOUBLE_EQ(raw[0], 26e4);
  EXPECT_DOUBLE_EQ(raw[1], 26e4);
}

TEST(FgdmScorer, GpuPodTiesAreLeftToTheCallerWhileGpusBind) {
  // 0.5 of 20 cores (0.025) against 1 of 16 GPUs (0.0625): GPUs bind, the tie stays a tie; with
  // cpuBoundRatio 0.3 (0.025 >= 0.3 x 0.0625) it is broken as above.
  auto snap = oneBusyNode(0.5);
  auto raw = rawScores(*makeFgdmScorer(workloadOf({{whole(2), 1.0}}), cpuBoundBestFit()), *snap,
                       MakePod("t", "p").gpus(2));
  EXPECT_DOUBLE_EQ(raw[0], 50e4);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
  FgdmTuning low;
  low.cpuBoundRatio = 0.3;
  raw = rawScores(*makeFgdmScorer(workloadOf({{whole(2), 1.0}}), low), *snap,
                  MakePod("t", "p").gpus(2));
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 5000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 6000.0 / 8001);
}

TEST(FgdmScorer, CpuPerGpuIsTheGpuShapesCpuOverTheirGpus) {
  // 1 GPU with 8 cores (weight 0.25), 2 GPUs with 8 cores (0.25), a CPU-only shape (0.5, left
  // out): (0.25 x 8000 + 0.25 x 8000) / (0.25 x 1000 + 0.25 x 2000) = 4000 / 750.
  auto w = workloadOf({{withCores(whole(1), 8), 0.25},
                       {withCores(whole(2), 8), 0.25},
                       {withCores(whole(0), 32), 0.5}});
  EXPECT_DOUBLE_EQ(cpuPerGpu(*w), 4000.0 / 750.0);
  EXPECT_DOUBLE_EQ(cpuPerGpu(*workloadOf({{withCores(whole(0), 4), 1.0}})), 0.0);
  // A node with 4 free GPUs and 16 free cores feeds 16000 / 8 = 2000 milli-GPUs at 8 per
  // milli-GPU: 2000 stranded; at 4 per milli-GPU none; at 0 (no ratio known) none.
  auto snap = testing::snapshotOf({MakeNode("a").gpus(4).cpu(16)}, {});
  EXPECT_DOUBLE_EQ(cpuStrandedGpus(*snap->nodes()[0], 8.0), 2000.0);
  EXPECT_DOUBLE_EQ(cpuStrandedGpus(*snap->nodes()[0], 4.0), 0.0);
  EXPECT_DOUBLE_EQ(cpuStrandedGpus(*snap->nodes()[0], 0.0), 0.0);
}

// a: 4 GPUs and 16 cores (CPU-poor); b: 4 GPUs and 64 cores. The workload: 1-GPU pods of 8 cores
// (r = 8 milli-CPU per milli-GPU). a strands 4000 - 16000 / 8 = 2000 milli-GPUs, b none.
SnapshotPtr cpuPoorAndRich() {
  return testing::snapshotOf({MakeNode("a").gpus(4).cpu(16), MakeNode("b").gpus(4).cpu(64)}, {});
}

TEST(FgdmScorer, GpuPodAskingLittleCpuGoesWhereCpuIsShort) {
  // 1 GPU, 2 cores: fgd ties (dF = 0, 50; CPU is not in the measure). On a, stranded becomes
  // 3000 - 14000 / 8 = 1250: -750, +75; on b it stays 0. The pod takes a's GPU that a's CPU
  // could not feed anyway, and b's CPU stays for the pods that need it.
  auto raw = rawScores(*makeFgdmScorer(workloadOf({{withCores(whole(1), 8), 1.0}})),
                       *cpuPoorAndRich(), MakePod("t", "p").gpus(1).cpu(2));
  EXPECT_DOUBLE_EQ(raw[0], 50e4 + 75);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
}

TEST(FgdmScorer, CpuHungryGpuPodGoesWhereCpuIsPlentiful) {
  // 1 GPU, 16 cores: on a, stranded becomes 3000 - 0 = 3000: +1000, -100; on b 3000 - 48000 / 8
  // < 0: 0. Without the term (cpuStrandTies off) the two tie.
  auto w = workloadOf({{withCores(whole(1), 8), 1.0}});
  const Pod pod = MakePod("t", "p").gpus(1).cpu(16);
  auto raw = rawScores(*makeFgdmScorer(w), *cpuPoorAndRich(), pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 100);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
  FgdmTuning off;
  off.cpuStrandTies = false;
  raw = rawScores(*makeFgdmScorer(w, off), *cpuPoorAndRich(), pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
}

TEST(FgdmScorer, FractionalPodCountsItsShareAgainstCpuStranding) {
  // Halves of 4 cores (r = 4000 / 500 = 8); a: 2 GPUs, 4 cores (stranded 2000 - 500 = 1500);
  // b: 2 GPUs, 32 cores (none). Half a GPU and 1 core: dF = 0 on both (50); on a stranded
  // becomes 1500 - 3000 / 8 = 1125: -375, +37.5; b stays 0.
  auto snap =
      testing::snapshotOf({MakeNode("a").gpus(2).cpu(4), MakeNode("b").gpus(2).cpu(32)}, {});
  auto raw = rawScores(*makeFgdmScorer(workloadOf({{withCores(share(500), 4), 1.0}})), *snap,
                       MakePod("t", "p").share(0.5).cpu(1));
  EXPECT_DOUBLE_EQ(raw[0], 50e4 + 37.5);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
}

TEST(FgdmScorer, PodWithoutGpusIsNotMovedByCpuStranding) {
  // A CPU-only pod on the nodes above: best fit on free GPUs only (both 4000 of 4001 free), the
  // stranding term is for GPU pods.
  auto raw = rawScores(*makeFgdmScorer(workloadOf({{withCores(whole(1), 8), 1.0}})),
                       *cpuPoorAndRich(), MakePod("t", "p").cpu(8));
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 4000.0 / 4001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 4000.0 / 4001);
}

TEST(FgdmScorer, FractionalPodGoesWhereItFillsAStrandedGpu) {
  // Against 1-GPU pods, a: GPUs free {1000, 1000}; b: {600, 1000} (0.4 used on GPU 0).
  // 0.3 on a strands 700 (dF = +700 -> 33); on b's GPU 0 it shrinks the stranded 600 to 300
  // (dF = -300 -> 57), and that is the GPU fgdm gives it.
  auto snap = testing::snapshotOf({MakeNode("a").gpus(2), MakeNode("b").gpus(2)},
                                  {MakePod("t", "x").share(0.4).gpuIndex(0).on("b")});
  auto scorer = makeFgdmScorer(workloadOf({{whole(1), 1.0}}), kBestFit);
  const Pod pod = MakePod("t", "p").share(0.3);
  auto raw = rawScores(*scorer, *snap, pod);
  EXPECT_DOUBLE_EQ(raw[0], 33e4 - 1700.0 / 2001);
  EXPECT_DOUBLE_EQ(raw[1], 57e4 - 1300.0 / 2001);
  EXPECT_EQ(scorer->chooseGpu(*snap, pod, *snap->nodes()[1]), 0);
}

TEST(FgdmScorer, HalvesShareAGpuAndKeepTheOtherWhole) {
  // Against halves, a: {500, 1000} free; b: {1000, 1000}. Nothing strands anywhere (dF = 0,
  // score 50), so best fit decides: a (1000 left) over b (1500 left), on a's half-used GPU 0.
  auto snap = testing::snapshotOf({MakeNode("a").gpus(2), MakeNode("b").gpus(2)},
                                  {MakePod("t", "x").share(0.5).gpuIndex(0).on("a")});
  auto scorer = makeFgdmScorer(workloadOf({{share(500), 1.0}}), kBestFit);
  const Pod pod = MakePod("t", "p").share(0.5);
  auto raw = rawScores(*scorer, *snap, pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 1000.0 / 2001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 1500.0 / 2001);
  EXPECT_EQ(scorer->chooseGpu(*snap, pod, *snap->nodes()[0]), 0);
}

// t1: T4 with 2 GPUs; v1, v2: V100 with 4 each. Workload of 1-GPU pods: 10 % T4 only, 20 % V100
// only, 70 % any model.
SnapshotPtr twoModels() {
  return testing::snapshotOf(
      {MakeNode("t1").gpus(2).model("T4"), MakeNode("v1").gpus(4).model("V100"),
       MakeNode("v2").gpus(4).model("V100")},
      {});
}
WorkloadPtr twoModelWorkload() {
  return workloadOf({{whole(1, {"T4"}), 0.1}, {whole(1, {"V100"}), 0.2}, {whole(1), 0.7}});
}

TEST(FgdmScorer, PressurePerModelIsRestrictedDemandOverSupply) {
  // Demand per GPU of supply: 1000 / 10000 = 0.1. T4: 0.1 * 1000 / 2000 = 0.05 -> 0.5;
  // V100: 0.2 * 1000 / 8000 = 0.025 -> 0.25.
  const ModelPressure p = modelPressure(*twoModels(), *twoModelWorkload());
  EXPECT_EQ(p.models, (std::vector<std::string>{"T4", "V100"}));
  EXPECT_DOUBLE_EQ(p.of("T4"), 0.5);
  EXPECT_DOUBLE_EQ(p.of("V100"), 0.25);
  EXPECT_DOUBLE_EQ(p.of("A100"), 0.0);
}

TEST(FgdmScorer, PressureRisesAsAModelFillsUp) {
  // One T4 GPU taken: 9000 milli-GPUs free, demand per free GPU 1000 / 9000. T4: 0.1 * 1000 /
  // 1000 = 0.1 -> 0.9; V100: 0.025 -> 0.225. Counted over allocatable GPUs, nothing changes.
  auto snap =
      testing::snapshotOf({MakeNode("t1").gpus(2).model("T4"), MakeNode("v1").gpus(4).model("V100"),
                           MakeNode("v2").gpus(4).model("V100")},
                          {MakePod("a", "x").gpus(1).on("t1")});
  const ModelPressure p = modelPressure(*snap, *twoModelWorkload());
  EXPECT_DOUBLE_EQ(p.of("T4"), 0.9);
  EXPECT_DOUBLE_EQ(p.of("V100"), 0.225);
  const ModelPressure q = modelPressure(*snap, *twoModelWorkload(), false);
  EXPECT_DOUBLE_EQ(q.of("T4"), 0.5);
  EXPECT_DOUBLE_EQ(q.of("V100"), 0.25);
}

TEST(FgdmScorer, PodThatRunsAnywhereKeepsOffTheScarceModel) {
  // fgd alone: on t1 the V100-only 20 % cannot use the GPU taken (dF = -200 -> 54), on a V100
  // the T4-only 10 % (dF = -100 -> 52): fgd picks the T4. fgdm adds pressure x 1000: t1
  // -200 + 500 = 300 (-> 42), v1 -100 + 250 = 150 (-> 46): a V100.
  auto snap = twoModels();
  const Pod pod = MakePod("a", "p").gpus(1);
  auto fgd = rawScores(*makeFgdScorer(twoModelWorkload()), *snap, pod);
  EXPECT_GT(fgd[0], fgd[1]);
  auto raw = rawScores(*makeFgdmScorer(twoModelWorkload()), *snap, pod);
  EXPECT_DOUBLE_EQ(raw[0], 42e4);
  EXPECT_DOUBLE_EQ(raw[1], 46e4);
  EXPECT_DOUBLE_EQ(raw[2], raw[1]);
}

TEST(FgdmScorer, RestrictedPodPaysTheSamePressureOnEveryNodeItMayUse) {
  // A V100-only pod: both V100 nodes cost the same (-100 + 250), so pressure changes nothing.
  auto snap = twoModels();
  const Pod pod = MakePod("a", "p").gpus(1).models({"V100"});
  std::vector<const NodeState*> nodes{snap->nodes()[1], snap->nodes()[2]};
  std::vector<double> raw(2);
  makeFgdmScorer(twoModelWorkload())->score(*snap, pod, nodes, raw);
  EXPECT_DOUBLE_EQ(raw[0], 46e4);
  EXPECT_DOUBLE_EQ(raw[0], raw[1]);
}

TEST(FgdmScorer, CpuStrandingBreaksTiesOnlyScarcityLeaves) {
  // twoModels with CPU: t1 has 2 cores (2 GPUs), the V100 nodes 64 each; the shapes ask 8 cores
  // per GPU. A 1-GPU, 1-core pod would shrink t1's stranded GPUs from 2000 - 250 = 1750 to
  // 1000 - 125 = 875 (+87.5), but the scarcity term keeps it a quantum below the V100s (42 vs
  // 46, as above): the stranding term only orders nodes of equal quantized score.
  auto snap = testing::snapshotOf(
      {MakeNode("t1").gpus(2).model("T4").cpu(2), MakeNode("v1").gpus(4).model("V100").cpu(64),
       MakeNode("v2").gpus(4).model("V100").cpu(64)},
      {});
  auto w = workloadOf({{withCores(whole(1, {"T4"}), 8), 0.1},
                       {withCores(whole(1, {"V100"}), 8), 0.2},
                       {withCores(whole(1), 8), 0.7}});
  auto raw = rawScores(*makeFgdmScorer(w), *snap, MakePod("a", "p").gpus(1).cpu(1));
  EXPECT_DOUBLE_EQ(raw[0], 42e4 + 87.5);
  EXPECT_DOUBLE_EQ(raw[1], 46e4);
  EXPECT_DOUBLE_EQ(raw[2], 46e4);
}

TEST(FgdmScorer, WithoutAWorkloadThePodStandsForIt) {
  // No workload anywhere: the 3-GPU pod itself. n1 (4 free) would strand 1 GPU; n2 (10 free)
  // keeps 7 whole, enough for two more.
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(4), MakeNode("n2").gpus(10)}, {});
  auto raw = rawScores(*makeScorer("fgdm"), *snap, MakePod("a", "p").gpus(3));
  EXPECT_LT(raw[0], raw[1]);
}

}  // namespace
}  // namespace gpufair::policy
