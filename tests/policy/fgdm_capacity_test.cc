// fgdm's placeable-capacity term (fgdm_scorer.h, 4.) on nodes computed by hand: copies of a shape
// = min(free CPU / its CPU, free GPUs / its GPUs) (CPU only where the measure counts it; whole
// GPUs counted on fully free GPUs, shares per GPU), the loss = sum over the shapes of
// weight x milli-GPUs x (copies before - copies after).
#include <memory>

#include <gtest/gtest.h>

#include "gpufair/policy/fgdm_scorer.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::rawScores;

PodShape whole(int n, double cores = 0, std::vector<std::string> models = {}) {
  PodShape s;
  s.gpuCount = n;
  s.cpuMilli = static_cast<std::int64_t>(cores * 1000);
  s.gpuModels = std::move(models);
  return s;
}
WorkloadPtr workloadOf(std::vector<WeightedShape> shapes) {
  return std::make_shared<const Workload>(std::move(shapes));
}
SnapshotOptions cpuChecked() {
  SnapshotOptions o;
  o.fit.checkCpuMemory = true;
  return o;
}

TEST(FgdmCapacity, WholeGpuPodLosesTheCopiesItsGpusAndCpuHeld) {
  // 8 free GPUs, 8 cores; the workload: 2-GPU pods (no CPU) and 1-GPU pods of 4 cores, half
  // each (weight x milli-GPUs: 1000 and 500). A 1-GPU pod without CPU: 4 -> 3 copies of the
  // first (1000); the second stays at min(8000 / 4000, 8) = 2 (0). Were CPU not measured, the
  // second would go 8 -> 7 (+500). Counting only the top shape (the 2-GPU one): 1000.
  auto snap = testing::snapshotOf({MakeNode("a").gpus(8).cpu(8)}, {}, {}, cpuChecked());
  const Workload w({{whole(2), 0.5}, {whole(1, 4), 0.5}});
  const NodeState& a = *snap->nodes()[0];
  const Pod noCpu = MakePod("t", "p").gpus(1);
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(a, noCpu, w, snap->fitOptions()), 1000);
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(a, noCpu, w, FitOptions{}), 1500);
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(a, noCpu, w, snap->fitOptions(), 1), 1000);
  // 1 GPU and 1 core: 7 cores left hold one 4-core copy (2 -> 1, +500).
  EXPECT_DOUBLE_EQ(
      placeableCapacityLoss(a, MakePod("t", "q").gpus(1).cpu(1), w, snap->fitOptions()), 1500);
}

TEST(FgdmCapacity, FractionalPodOnItsBestFitGpu) {
  // Halves; GPUs free {1000, 300}: 2 + 0 = 2 copies. 0.3 takes GPU 1 (best fit): {1000, 0},
  // still 2 (loss 0); 0.6 takes GPU 0: {400, 300}, 0 copies: 2 x 500.
  auto snap = testing::snapshotOf({MakeNode("b").gpus(2)},
                                  {MakePod("t", "x").share(0.7).gpuIndex(1).on("b")});
  PodShape half;
  half.gpuShare = 500;
  const Workload w({{half, 1.0}});
  const NodeState& b = *snap->nodes()[0];
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(b, MakePod("t", "p").share(0.3), w, {}), 0);
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(b, MakePod("t", "q").share(0.6), w, {}), 1000);
}

TEST(FgdmCapacity, ModelRestrictedShapesCountOnlyOnTheirModels) {
  // Half of the 1-GPU pods may run only on V100. On a T4 node a 1-GPU pod takes one copy of the
  // unrestricted half (500); on a V100 node one of each (1000).
  auto snap = testing::snapshotOf(
      {MakeNode("t").gpus(4).model("T4"), MakeNode("v").gpus(4).model("V100")}, {});
  const Workload w({{whole(1, 0, {"V100"}), 0.5}, {whole(1), 0.5}});
  const Pod pod = MakePod("a", "p").gpus(1);
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(*snap->nodes()[0], pod, w, {}), 500);
  EXPECT_DOUBLE_EQ(placeableCapacityLoss(*snap->nodes()[1], pod, w, {}), 1000);
}

// a: 8 GPUs, 8 cores; b: 8 GPUs, 40 cores; c: 8 GPUs, 8 cores, running a 1-GPU pod of
// `cCores`. The workload: 1-GPU pods of 4 cores (r = 4 milli-CPU per milli-GPU).
SnapshotPtr cpuPoorRichBusy(double cCores) {
  return testing::snapshotOf(
      {MakeNode("a").gpus(8).cpu(8), MakeNode("b").gpus(8).cpu(40), MakeNode("c").gpus(8).cpu(8)},
      {MakePod("t", "x").gpus(1).cpu(cCores).on("c")}, {}, cpuChecked());
}

TEST(FgdmCapacity, WhileCpuBindsAGpuPodPaysForTheCopiesItTakes) {
  // c's pod takes all its 8 cores: 8 of 56 cores (0.14) >= 0.95 x 1 of 24 GPUs (0.04), CPU
  // binds. A 1-GPU pod without CPU: fgd's growth is 0 on a and b (50) and -1000 on c (its GPUs
  // were all lost to the 4-core shape: 73). Stranding (r = 4): a 8000 - 2000 -> 7000 - 2000
  // (+100), b none (0), c 7000 -> 6000 (+100). Capacity: a min(2, 8) -> min(2, 7) = 0; b
  // min(10, 8) -> min(10, 7): 1000, x 0.5 = +500 growth -> floor(100 / (1 + e^0.5)) = 37; c 0.
  const Pod pod = MakePod("t", "p").gpus(1);
  auto w = workloadOf({{whole(1, 4), 1.0}});
  auto raw = rawScores(*makeFgdmScorer(w), *cpuPoorRichBusy(8), pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4 + 100);
  EXPECT_DOUBLE_EQ(raw[1], 37e4);
  EXPECT_DOUBLE_EQ(raw[2], 73e4 + 100);
  FgdmTuning off;
  off.capacityWeight = 0;
  raw = rawScores(*makeFgdmScorer(w, off), *cpuPoorRichBusy(8), pod);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
}

TEST(FgdmCapacity, OffWhileGpusBind) {
  // c's pod asks no CPU: nothing allocated of the CPU, GPUs bind; b keeps fgd's 50, and c's
  // GPUs are no longer lost to the shape (growth 0, 50; stranding 5000 -> 4000, +100). With
  // capacityCpuBound 0 (always on) b pays as above.
  const Pod pod = MakePod("t", "p").gpus(1);
  auto w = workloadOf({{whole(1, 4), 1.0}});
  auto raw = rawScores(*makeFgdmScorer(w), *cpuPoorRichBusy(0), pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4 + 100);
  EXPECT_DOUBLE_EQ(raw[1], 50e4);
  EXPECT_DOUBLE_EQ(raw[2], 50e4 + 100);
  FgdmTuning always;
  always.capacityCpuBound = 0;
  raw = rawScores(*makeFgdmScorer(w, always), *cpuPoorRichBusy(0), pod);
  EXPECT_DOUBLE_EQ(raw[1], 37e4);
}

TEST(FgdmCapacity, WhileCpuBindsAPodWithoutGpusPaysForTheCpuItTakesIfAsked) {
  // CPU binds as above. A 4-core pod without GPUs: fgd's growth is 0 on a (8 -> 4 cores, still
  // one 4-core copy) and on b, so fgd leaves them tied at 50. With capacityGpuLess, capacity: a
  // min(2, 8) -> min(1, 8) = 1000, x 0.5 = +500 growth -> 37; b min(10, 8) -> min(9, 8): 0.
  // Best fit then subtracts 8000 / 8001 on both (8 free GPUs). So its CPU goes to b, where no
  // GPU shape needs it. By default (off) a and b tie.
  const Pod pod = MakePod("t", "p").cpu(4);
  auto w = workloadOf({{whole(1, 4), 1.0}});
  FgdmTuning gpuLess;
  gpuLess.capacityGpuLess = true;
  auto raw = rawScores(*makeFgdmScorer(w, gpuLess), *cpuPoorRichBusy(8), pod);
  EXPECT_DOUBLE_EQ(raw[0], 37e4 - 8000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 8000.0 / 8001);
  raw = rawScores(*makeFgdmScorer(w), *cpuPoorRichBusy(8), pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 8000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 8000.0 / 8001);
  // While GPUs bind (c's pod asks no CPU) the term is off for it too: a and b tie again.
  raw = rawScores(*makeFgdmScorer(w, gpuLess), *cpuPoorRichBusy(0), pod);
  EXPECT_DOUBLE_EQ(raw[0], 50e4 - 8000.0 / 8001);
  EXPECT_DOUBLE_EQ(raw[1], 50e4 - 8000.0 / 8001);
}

}  // namespace
}  // namespace gpufair::policy
