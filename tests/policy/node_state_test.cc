// NodeState's per-GPU layout and the snapshot's indexes (gangs, reservations, node lookup): the
// accounting every verb and the undo log read.
#include <gtest/gtest.h>

#include "gpufair/policy/snapshot.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::gpus;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

PodPtr ptr(const Pod& p) {
  return std::make_shared<const Pod>(p);
}

std::vector<MilliGpu> layoutOf(const NodeState& n) {
  return {n.gpuUsedList().begin(), n.gpuUsedList().end()};
}

TEST(NodeStateLayout, KnownSharesFirstThenWholePodsOnTheEmptiestThenBestFit) {
  // uid order: a-whole, b-known, c-unknown. The known share takes GPU 0 before the whole pod is
  // placed, so the whole pod goes to GPU 1; the unknown share then fits best on GPU 0.
  NodeState node(MakeNode("n").gpus(3),
                 {ptr(MakePod("t", "c").uid("c-unknown").share(0.25).on("n")),
                  ptr(MakePod("t", "b").uid("b-known").share(0.5).gpuIndex(0).on("n")),
                  ptr(MakePod("t", "a").uid("a-whole").gpus(1).on("n"))},
                 1);
  EXPECT_EQ(layoutOf(node), (std::vector<MilliGpu>{750, 1000, 0}));
  EXPECT_EQ(node.fullyFreeGpus(), 1);
  EXPECT_EQ(node.largestGpuFree(), 1000);
  EXPECT_EQ(node.largestPartialFree(), 250);
  EXPECT_EQ(node.bestFitGpu(250), 0);
  EXPECT_EQ(node.bestFitGpu(300), 2);
  EXPECT_EQ(node.used(), gpus(1.75));
}

TEST(NodeStateLayout, AnIndexOutOfRangeIsPlacedByBestFit) {
  NodeState node(MakeNode("n").gpus(2), {ptr(MakePod("t", "f").share(0.5).gpuIndex(7).on("n"))}, 1);
  EXPECT_EQ(layoutOf(node), (std::vector<MilliGpu>{500, 0}));
}

TEST(NodeStateLayout, AnOvercommittedGpuGoesToTheLeastUsed) {
  NodeState node(
      MakeNode("n").gpus(1),
      {ptr(MakePod("t", "w").gpus(1).on("n")), ptr(MakePod("t", "x").share(0.5).on("n"))}, 1);
  EXPECT_EQ(layoutOf(node), (std::vector<MilliGpu>{1500}));
  EXPECT_EQ(node.gpuFree(0), 0);
  EXPECT_EQ(node.free(), 0);
}

TEST(NodeStateLayout, ANodeWithoutWholeGpusHasNoLayout) {
  NodeState node(MakeNode("n").gpus(0.5), {ptr(MakePod("t", "w").gpus(1).on("n"))}, 1);
  EXPECT_EQ(node.gpuCount(), 0);
  EXPECT_EQ(node.fullyFreeGpus(), 0);
  EXPECT_EQ(node.used(), gpus(1));
}

TEST(NodeState, CountsQueuesGangsCpuAndMemory) {
  Pod a = MakePod("team-a", "a").gpus(2).cpu(4).memGi(8).on("n").overQuota().gang("g", 2);
  a.queue = "team-a";
  Pod b = MakePod("team-a", "b").gpus(1).cpu(2).on("n").gang("g", 2);
  b.queue = "team-a";
  Pod cpu = MakePod("team-b", "cpu-only").cpu(1).on("n");
  cpu.queue = "team-b";
  Pod stopping = MakePod("team-a", "stopping").gpus(1).on("n").gang("g", 2).terminating();
  stopping.queue = "team-a";
  NodeState node(MakeNode("n").gpus(8).cpu(16).memGi(64), {ptr(a), ptr(b), ptr(cpu), ptr(stopping)},
                 3);
  ASSERT_EQ(node.byQueue().size(), 1u);  // a pod without GPUs is in no queue's use
  EXPECT_EQ(node.byQueue()[0].allocated, gpus(4));
  EXPECT_EQ(node.byQueue()[0].overQuota, gpus(2));
  EXPECT_EQ(node.byQueue()[0].pods, 3);
  ASSERT_EQ(node.gangs().size(), 1u);  // a terminating member no longer counts
  EXPECT_EQ(node.gangs()[0].key, "gang:team-a/g");
  EXPECT_EQ(node.gangs()[0].pods, 2);
  EXPECT_EQ(node.cpuUsed(), 7000);
  EXPECT_EQ(node.cpuFree(), 9000);
  EXPECT_EQ(node.memoryFree(), std::int64_t{56} * 1024 * 1024 * 1024);
}

TEST(NodeState, ACopyHasTheSameAccounting) {
  NodeState node(MakeNode("n").gpus(4), {ptr(MakePod("t", "f").share(0.5).on("n"))}, 2,
                 {{"n", gpus(2), "uid-x", "t", "reclaim", ""}});
  const NodeState copy(node);
  NodeState assigned(MakeNode("other").gpus(1), {}, 1);
  assigned = node;
  for (const NodeState* n : {&copy, static_cast<const NodeState*>(&assigned)}) {
    EXPECT_EQ(layoutOf(*n), layoutOf(node));
    EXPECT_EQ(n->reserved(), gpus(2));
    EXPECT_EQ(n->generation(), 2u);
    EXPECT_EQ(n->name(), "n");
  }
}

TEST(NodeState, ReservationsAreSortedEmptyOnesDroppedAndHeldByTheirHolder) {
  NodeState node(MakeNode("n").gpus(8), {}, 1,
                 {{"elsewhere", gpus(2), "uid-z", "t", "reclaim", ""},
                  {"n", 0, "uid-empty", "t", "reclaim", ""},
                  {"n", gpus(3), "gang:t/g", "t", "gang of 1 × 3 GPUs", ""}});
  ASSERT_EQ(node.reservations().size(), 2u);
  EXPECT_EQ(node.reservations()[0].holder, "gang:t/g");
  EXPECT_EQ(node.reservations()[1].node, "n");  // every reservation is on this node
  const Pod member = MakePod("t", "m").gpus(3).gang("g", 1);
  const Pod other = MakePod("t", "o").gpus(3);
  EXPECT_EQ(node.reservedFor(member), gpus(3));
  EXPECT_EQ(node.reservedAgainst(member), gpus(2));
  EXPECT_EQ(node.wholeGpusFor(member), 6);
  EXPECT_EQ(node.wholeGpusFor(other), 3);
}

TEST(ClusterSnapshot, NodeIndexAndFindNodeAgree) {
  std::vector<Node> nodes;
  for (int i = 0; i < 50; ++i) nodes.push_back(MakeNode("node-" + std::to_string(i)).gpus(1));
  auto snap = testing::snapshotOf(nodes, {});
  for (std::size_t i = 0; i < snap->nodes().size(); ++i) {
    const std::string& name = snap->nodes()[i]->name();
    EXPECT_EQ(snap->nodeIndex(name), static_cast<std::ptrdiff_t>(i));
    EXPECT_EQ(snap->findNode(name), snap->nodes()[i]);
  }
  EXPECT_EQ(snap->nodeIndex("node-50"), -1);
  EXPECT_EQ(snap->findNode(""), nullptr);
}

TEST(ClusterSnapshot, IndexesGangsFromPlacedPendingAndReservedMembers) {
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)},
      {MakePod("t", "g-0").gpus(4).gang("g", 3).on("n1"), MakePod("t", "g-2").gpus(4).gang("g", 3),
       MakePod("t", "g-1").gpus(4).gang("g", 3), MakePod("t", "h-0").gpus(2).gang("h", 2)},
      {MakeQueue("t").deserved(16)}, {},
      {{"n2", gpus(8), "gang:t/g", "t", "gang of 2 × 4 GPUs", ""}});
  ASSERT_EQ(snap->gangs().size(), 2u);
  const GangState* g = snap->findGang("gang:t/g");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->size, 3);
  EXPECT_EQ(g->placed, 1);
  EXPECT_EQ(g->placedGpus, gpus(4));
  EXPECT_EQ(g->reserved, gpus(8));
  ASSERT_EQ(g->pending.size(), 2u);
  EXPECT_EQ(g->pending[0]->name, "g-1");  // by uid
  EXPECT_FALSE(g->complete());
  EXPECT_EQ(snap->findGang("gang:t/h")->placed, 0);
  EXPECT_EQ(snap->findGang("gang:t/none"), nullptr);
  // The gang's reservation is its queue's: charged to others of t, not to g's members.
  const Pod member = testing::resolved(*snap, MakePod("t", "g-1").gpus(4).gang("g", 3));
  const Pod other = testing::resolved(*snap, MakePod("t", "x").gpus(1));
  EXPECT_EQ(snap->reservedFor(member), gpus(8));
  EXPECT_EQ(snap->reservedInQueue("t", member), 0);
  EXPECT_EQ(snap->reservedInQueue("t", other), gpus(8));
  // Pending members ask for 8 of the 8 reserved: nothing is reserved ahead of them.
  EXPECT_EQ(snap->findQueue("t")->reservedAhead, 0);
}

TEST(ClusterSnapshot, CordonedNodesHoldGpusButOfferNone) {
  auto snap = testing::snapshotOf(
      {MakeNode("a").gpus(8), MakeNode("b").gpus(4).unschedulable(), MakeNode("c").gpus(2)},
      {MakePod("t", "p").gpus(2).on("b"), MakePod("t", "q").gpus(1).on("a")});
  EXPECT_EQ(snap->capacity(), gpus(10));
  EXPECT_EQ(snap->allocated(), gpus(3));
  EXPECT_EQ(snap->free(), gpus(9));
  EXPECT_EQ(snap->largestFreeBlock(), gpus(7));
  EXPECT_EQ(snap->nodesWithFree(gpus(2)), 2);
  EXPECT_EQ(snap->nodesWithFree(gpus(3)), 1);
  EXPECT_EQ(snap->maxNodeGpus(), gpus(8));
}

TEST(QueueState, UnmetDeservedIsCappedByDemand) {
  QueueState q;
  q.quota.gpu.deserved = gpus(10);
  q.allocated = gpus(4);
  q.pending = gpus(3);
  EXPECT_EQ(q.unmetDeserved(), gpus(3));
  q.pending = gpus(20);
  EXPECT_EQ(q.unmetDeserved(), gpus(6));
  q.allocated = gpus(12);
  EXPECT_EQ(q.unmetDeserved(), 0);
}

}  // namespace
}  // namespace gpufair::policy
