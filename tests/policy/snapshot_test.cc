#include "gpufair/policy/snapshot.h"

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

TEST(NodeState, CountsOnlyPodsThatHoldGpus) {
  NodeState node(
      MakeNode("n1").gpus(8),
      {std::make_shared<const Pod>(MakePod("a", "running").gpus(2).on("n1")),
       std::make_shared<const Pod>(
           MakePod("a", "done").gpus(4).on("n1").phase(PodPhase::kSucceeded)),
       std::make_shared<const Pod>(
           MakePod("a", "failed").gpus(4).on("n1").phase(PodPhase::kFailed)),
       std::make_shared<const Pod>(MakePod("a", "stopping").gpus(1).on("n1").terminating()),
       std::make_shared<const Pod>(
           MakePod("a", "bound-pending").gpus(1).on("n1").phase(PodPhase::kPending))},
      7);
  // Running, terminating and bound-but-not-started pods hold GPUs; finished ones do not.
  EXPECT_EQ(node.used(), testing::gpus(4));
  EXPECT_EQ(node.free(), testing::gpus(4));
  EXPECT_EQ(node.generation(), 7u);
}

TEST(NodeState, FreeNeverNegativeWhenNodeShrank) {
  NodeState node(MakeNode("n1").gpus(2),
                 {std::make_shared<const Pod>(MakePod("a", "p").gpus(4).on("n1"))}, 1);
  EXPECT_EQ(node.used(), testing::gpus(4));
  EXPECT_EQ(node.free(), 0);
}

TEST(ClusterSnapshot, TotalsQueuesAndFreeBlocks) {
  auto snap = testing::snapshotOf(
      {MakeNode("n2").gpus(8), MakeNode("n1").gpus(8),
       MakeNode("cordoned").gpus(8).unschedulable()},
      {MakePod("team-a", "a1").gpus(3).on("n1"),
       MakePod("team-a", "a2").gpus(1).on("n2").overQuota(),
       MakePod("team-b", "b1").gpus(2).on("cordoned"), MakePod("team-b", "wait").gpus(4)},
      {MakeQueue("team-a").deserved(2), MakeQueue("team-b").deserved(6)});
  EXPECT_EQ(snap->capacity(), testing::gpus(16));  // cordoned node takes no new pods
  EXPECT_EQ(snap->allocated(), testing::gpus(6));  // but its pods still count as allocated
  EXPECT_EQ(snap->free(), testing::gpus(12));
  EXPECT_EQ(snap->largestFreeBlock(), testing::gpus(7));
  EXPECT_EQ(snap->nodesWithFree(testing::gpus(5)), 2);
  EXPECT_EQ(snap->nodesWithFree(testing::gpus(6)), 1);
  EXPECT_EQ(snap->nodesWithFree(testing::gpus(8)), 0);
  ASSERT_EQ(snap->nodes().size(), 3u);
  EXPECT_EQ(snap->nodes()[0]->name(), "cordoned");  // sorted by name
  EXPECT_EQ(snap->findNode("n2")->used(), testing::gpus(1));
  EXPECT_EQ(snap->findNode("missing"), nullptr);

  const QueueState* a = snap->findQueue("team-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->allocated, testing::gpus(4));
  EXPECT_EQ(a->overQuota, testing::gpus(1));
  EXPECT_EQ(a->runningPods, 2);
  const QueueState* b = snap->findQueue("team-b");
  EXPECT_EQ(b->allocated, testing::gpus(2));
  EXPECT_EQ(b->pending, testing::gpus(4));
  EXPECT_EQ(b->pendingPods, 1);
  EXPECT_EQ(b->unmetDeserved(), testing::gpus(4));  // min(6, 2+4) - 2
  EXPECT_NE(snap->findQueue(kDefaultQueueName), nullptr);
}

TEST(ResolveQueue, LabelThenNamespaceThenDefault) {
  QuotaConfig config;
  config.queues = {MakeQueue("team-a").namespaces({"ml", "ml-dev"}), MakeQueue("team-b")};
  EXPECT_EQ(resolveQueue(config, "ml-dev", {}), "team-a");
  EXPECT_EQ(resolveQueue(config, "team-b", {}), "team-b");
  EXPECT_EQ(resolveQueue(config, "elsewhere", {}), kDefaultQueueName);
  EXPECT_EQ(resolveQueue(config, "ml", {{kQueueLabel, "team-b"}}), "team-b");
  EXPECT_EQ(resolveQueue(config, "ml", {{kQueueLabel, "no-such-queue"}}), "");
  EXPECT_EQ(resolveQueue(config, "ml", {{kQueueLabel, kDefaultQueueName}}), kDefaultQueueName);
}

}  // namespace
}  // namespace gpufair::policy
