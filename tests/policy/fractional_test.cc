// Fractional GPUs, GPU models, CPU and memory in node fit, per-GPU accounting and quota.
#include <gtest/gtest.h>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/filter.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

PodPtr ptr(Pod p) {
  return std::make_shared<const Pod>(std::move(p));
}

TEST(NodeStateGpus, PlacesKnownIndexesThenWholeThenUnknownFractions) {
  NodeState node(
      MakeNode("n").gpus(4),
      {ptr(MakePod("a", "a-quarter").share(0.25).on("n")),  // unknown: best fit, last
       ptr(MakePod("a", "b-half").share(0.5).gpuIndex(2).on("n")),
       ptr(MakePod("a", "c-two").gpus(2).on("n")),
       ptr(MakePod("a", "d-done").share(0.5).gpuIndex(3).on("n").phase(PodPhase::kSucceeded))},
      1);
  // b-half on GPU 2; c-two on the emptiest GPUs 0 and 1; a-quarter best fit: GPU 2 (500 free).
  EXPECT_EQ(node.gpuUsed(0), 1000);
  EXPECT_EQ(node.gpuUsed(1), 1000);
  EXPECT_EQ(node.gpuUsed(2), 750);
  EXPECT_EQ(node.gpuUsed(3), 0);
  EXPECT_EQ(node.used(), 2750);
  EXPECT_EQ(node.free(), 1250);
  EXPECT_EQ(node.fullyFreeGpus(), 1);
  EXPECT_EQ(node.largestGpuFree(), 1000);
  EXPECT_EQ(node.bestFitGpu(250), 2);
  EXPECT_EQ(node.bestFitGpu(300), 3);
  EXPECT_EQ(node.bestFitGpu(1001), -1);
}

TEST(NodeStateGpus, IndexOutOfRangeIsTreatedAsUnknown) {
  NodeState node(MakeNode("n").gpus(2), {ptr(MakePod("a", "p").share(0.5).gpuIndex(7).on("n"))}, 1);
  EXPECT_EQ(node.gpuUsed(0), 500);
  EXPECT_EQ(node.gpuUsed(1), 0);
}

TEST(FractionalFit, ShareFitsOnAPartlyUsedGpu) {
  NodeState node(
      MakeNode("n").gpus(2),
      {ptr(MakePod("a", "x").share(0.5).on("n")), ptr(MakePod("a", "y").gpus(1).on("n"))}, 1);
  // GPU 0: whole pod (1000); GPU 1: the half (500). 0.5 free in all, on one GPU.
  EXPECT_TRUE(fitsNode(node, MakePod("a", "p").share(0.5)).isOk());
  Status s = fitsNode(node, MakePod("a", "p").share(0.6));
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(), "fewer than 0.6 GPUs free");
}

TEST(FractionalFit, ShareNeedsRoomOnOneGpu) {
  NodeState node(MakeNode("n").gpus(2),
                 {ptr(MakePod("a", "x").share(0.5).gpuIndex(0).on("n")),
                  ptr(MakePod("a", "y").share(0.5).gpuIndex(1).on("n"))},
                 1);
  // 1 GPU free in all, but only 0.5 on each.
  Status s = fitsNode(node, MakePod("a", "p").share(0.75));
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(),
            "node n has no GPU with 0.75 free (at most 0.5 on one GPU); pod needs 0.75 of one GPU");
}

TEST(FractionalFit, WholeGpuPodNeedsFullyFreeGpus) {
  NodeState node(MakeNode("n").gpus(2), {ptr(MakePod("a", "x").share(0.25).on("n"))}, 1);
  EXPECT_TRUE(fitsNode(node, MakePod("a", "p").gpus(1)).isOk());
  Status s = fitsNode(node, MakePod("a", "p").gpus(2));
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(), "fewer than 2 GPUs free");
  NodeState shared(MakeNode("n").gpus(3),
                   {ptr(MakePod("a", "x").share(0.25).gpuIndex(0).on("n")),
                    ptr(MakePod("a", "y").share(0.25).gpuIndex(1).on("n"))},
                   1);
  s = fitsNode(shared, MakePod("a", "p").gpus(2));  // 2.5 free, but 1 whole
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(),
            "node n has 2.5 of 3 GPUs free but only 1 whole (others are shared); pod needs 2 "
            "whole GPUs");
}

TEST(ModelFit, PodAllowsOnlyListedModels) {
  NodeState v100(MakeNode("v").gpus(8).model("V100M32"), {}, 1);
  NodeState unlabelled(MakeNode("u").gpus(8), {}, 1);
  const Pod pod = MakePod("a", "p").gpus(1).models({"V100M16", "V100M32"});
  EXPECT_TRUE(fitsNode(v100, pod).isOk());
  Status s = fitsNode(unlabelled, pod);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reason(),
            "node u has no GPU model label (nvidia.com/gpu.product); pod allows V100M16|V100M32");
  NodeState g3(MakeNode("g").gpus(8).model("G3"), {}, 1);
  EXPECT_EQ(fitsNode(g3, pod).reason(), "node g has GPU model G3; pod allows V100M16|V100M32");
  EXPECT_TRUE(fitsNode(unlabelled, MakePod("a", "any").gpus(1)).isOk());
}

TEST(CpuMemoryFit, CheckedOnlyWhenAsked) {
  NodeState node(MakeNode("n").gpus(2).cpu(8).memGi(32),
                 {ptr(MakePod("a", "x").gpus(1).cpu(6).memGi(8).on("n"))}, 1);
  const Pod cpuHeavy = MakePod("a", "p").gpus(1).cpu(4);
  EXPECT_TRUE(fitsNode(node, cpuHeavy).isOk());
  Status s = fitsNode(node, cpuHeavy, {true});
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(), "node n has 2 of 8 CPUs free; pod needs 4 CPUs");
  s = fitsNode(node, MakePod("a", "p").cpu(16), {true});
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reason(), "node n has 8 CPUs; pod needs 16 CPUs");
  s = fitsNode(node, MakePod("a", "p").gpus(1).cpu(1).memGi(30), {true});
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.reason(), "node n has 24Gi memory free of 32Gi memory; pod needs 30Gi memory");
  EXPECT_TRUE(fitsNode(node, MakePod("a", "p").gpus(1).cpu(2).memGi(24), {true}).isOk());
  EXPECT_EQ(node.cpuUsed(), 6000);
  EXPECT_EQ(node.cpuFree(), 2000);
}

TEST(CpuMemoryFit, FilterChecksCpuOnlyPodsOffline) {
  auto options = SnapshotOptions{{true}, nullptr, 0};
  auto snap = testing::snapshotOf({MakeNode("a").gpus(1).cpu(4), MakeNode("b").gpus(1).cpu(16)}, {},
                                  {}, options);
  std::vector<std::string_view> all{"a", "b"};
  FilterResult r = filter(*snap, MakePod("default", "cpu").cpu(8), all);
  EXPECT_EQ(r.feasible, (std::vector<std::string_view>{"b"}));
  ASSERT_EQ(r.unresolvable.size(), 1u);
  // Online (no CPU check) such a pod passes everywhere untouched, as before.
  auto online = testing::snapshotOf({MakeNode("a").gpus(1).cpu(4)}, {});
  std::vector<std::string_view> one{"a"};
  EXPECT_EQ(filter(*online, MakePod("default", "cpu").cpu(8), one).feasible.size(), 1u);
}

TEST(FractionalQuota, QueueIsChargedFractionsExactly) {
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(4), MakeNode("n2").gpus(4)},
      {MakePod("team-a", "a").gpus(2).on("n1"), MakePod("team-a", "b").share(0.25).on("n1"),
       MakePod("team-a", "c").share(0.25).on("n2"), MakePod("team-a", "wait").share(0.5)},
      {MakeQueue("team-a").deserved(3).limit(3)});
  const QueueState* q = snap->findQueue("team-a");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->allocated, 2500);  // 2.5 GPUs
  EXPECT_EQ(q->pending, 500);
  EXPECT_EQ(snap->free(), 5500);
  EXPECT_TRUE(
      admit(*snap, testing::resolved(*snap, MakePod("team-a", "p").share(0.5))).status.isOk());
  Admission a = admit(*snap, testing::resolved(*snap, MakePod("team-a", "p").share(0.75)));
  EXPECT_EQ(a.status.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(a.status.reason(), "queue team-a at 2.5/3 GPUs (limit); pod needs 0.75 GPUs");
}

}  // namespace
}  // namespace gpufair::policy

namespace gpufair::policy {
namespace {

TEST(NodeFits, AgreesWithFitsNode) {
  std::vector<NodeState> nodes;
  nodes.emplace_back(MakeNode("a").gpus(4).model("V100").cpu(8).memGi(16),
                     std::vector<PodPtr>{ptr(MakePod("t", "x").share(0.5).gpuIndex(0).on("a")),
                                         ptr(MakePod("t", "y").gpus(2).cpu(6).on("a"))},
                     1);
  nodes.emplace_back(MakeNode("b").gpus(2).unschedulable(), std::vector<PodPtr>{}, 1);
  nodes.emplace_back(MakeNode("c"), std::vector<PodPtr>{}, 1);
  const std::vector<Pod> pods{
      MakePod("t", "1").gpus(1),          MakePod("t", "2").gpus(2),
      MakePod("t", "3").share(0.5),       MakePod("t", "4").share(0.75).cpu(1),
      MakePod("t", "5").gpus(1).cpu(4),   MakePod("t", "6").gpus(1).models({"A100"}),
      MakePod("t", "7").cpu(1).memGi(20), MakePod("t", "8")};
  for (const auto& node : nodes) {
    for (const auto& pod : pods) {
      for (bool check : {false, true}) {
        EXPECT_EQ(nodeFits(node, pod, {check}), fitsNode(node, pod, {check}).isOk())
            << node.name() << " " << pod.name << " " << check;
      }
    }
  }
}

}  // namespace
}  // namespace gpufair::policy
