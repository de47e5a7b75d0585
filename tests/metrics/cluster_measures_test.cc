#include "gpufair/metrics/cluster_measures.h"

#include <cmath>

#include <gtest/gtest.h>

#include "gpufair/policy/fragmentation.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::metrics {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

TEST(JainIndex, Table) {
  struct Case {
    const char* name;
    std::vector<double> values;
    double want;
  };
  const Case cases[] = {
      {"empty list is fair", {}, 1.0},
      {"all zeros is fair", {0, 0, 0}, 1.0},
      {"equal values", {0.5, 0.5, 0.5, 0.5}, 1.0},
      {"one has everything", {1, 0, 0, 0}, 0.25},
      {"two of four", {1, 1, 0, 0}, 0.5},
      {"uneven", {1, 2, 3}, 36.0 / (3 * 14)},
  };
  for (const auto& c : cases) {
    EXPECT_NEAR(jainIndex(c.values), c.want, 1e-12) << c.name;
  }
}

TEST(FairnessIndex, OnlyQueuesWithDemandAndEntitlement) {
  auto queue = [](const char* name, double allocated, double pending, double fairShare) {
    QueueMeasure q;
    q.name = name;
    q.allocated = allocated;
    q.pending = pending;
    q.fairShare = fairShare;
    return q;
  };
  const std::vector<QueueMeasure> queues = {
      queue("at-share", 4, 0, 4),  // x = 1
      queue("starved", 0, 8, 4),   // x = 0
      queue("idle", 0, 0, 10),     // no demand: left out
      queue("no-share", 3, 1, 0),  // entitled to nothing: left out
  };
  EXPECT_NEAR(fairnessIndex(queues), 0.5, 1e-12);
  EXPECT_NEAR(fairnessIndex(std::span(queues).first(1)), 1.0, 1e-12);
}

TEST(SchedulableJobs, CountsWholeFreeGpusOnNodesTakingPods) {
  // n1: 8 GPUs, 3 used -> 5 whole free; n2: 4 GPUs, half of one used -> 3 whole free;
  // n3: 8 free but cordoned.
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(4), MakeNode("n3").gpus(8).unschedulable()},
      {MakePod("a", "p1").gpus(3).on("n1"), MakePod("a", "p2").share(0.5).gpuIndex(0).on("n2")});
  struct Case {
    int gpus;
    std::int64_t want;
  };
  for (const auto& c : std::vector<Case>{{1, 8}, {2, 3}, {4, 1}, {8, 0}, {0, 0}, {-1, 0}}) {
    EXPECT_EQ(schedulableJobs(*snap, c.gpus), c.want) << c.gpus << "-GPU jobs";
  }
}

// gpufair_queue_over_quota_gpus is what reclaim can take: whole borrowed pods, youngest first,
// while the queue keeps its deserved quota.
TEST(MeasureCluster, OverQuotaIsWhatReclaimCanTake) {
  using std::chrono::hours;
  const Timestamp t0{std::chrono::seconds{1'800'000'000}};
  auto pod = [&](const char* name, double gpus, int ageHours, bool borrowed) {
    auto p = MakePod("team-a", name).gpus(gpus).on("n1");
    if (borrowed) p.overQuota();
    policy::Pod obj = p;
    obj.created = t0 - hours(ageHours);
    return obj;
  };
  struct Case {
    std::string name;
    std::vector<policy::Pod> pods;
    double deserved;
    double want;
  };
  const std::vector<Case> cases = {
      // The report from a real cluster: 13.5 allocated, deserved 8, one borrowed pod of 8.
      {"one big borrowed pod above a small excess",
       {pod("own", 5.5, 3, false), pod("borrow", 8, 1, true)},
       8,
       0},
      {"excess covers the borrowed pod",
       {pod("own", 8, 3, false), pod("borrow", 4, 1, true)},
       8,
       4},
      {"youngest first, then what still fits",
       {pod("own", 4, 9, false), pod("old", 2, 5, true), pod("mid", 4, 3, true),
        pod("young", 3, 1, true)},
       7,
       5},  // 13 allocated, excess 6: young 3, mid 4 would make 7 (skipped), old 2: 5
      {"nothing borrowed", {pod("own", 10, 1, false)}, 4, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<policy::Pod> pods = c.pods;
    auto snap = testing::snapshotOf({MakeNode("n1").gpus(16)}, pods,
                                    {MakeQueue("team-a").deserved(c.deserved)});
    EXPECT_EQ(measureCluster(*snap).queues[0].overQuota, c.want);
  }
}

TEST(MeasureCluster, ReportsTheSnapshot) {
  auto snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(4), MakeNode("n3").gpus(8).unschedulable()},
      {MakePod("team-a", "run").gpus(6).on("n1"),
       MakePod("team-b", "borrow").gpus(2).on("n3").overQuota(), MakePod("team-b", "wait").gpus(4)},
      {MakeQueue("team-a").deserved(6).limit(10), MakeQueue("team-b").deserved(1)});
  const ClusterMeasures m = measureCluster(*snap);
  EXPECT_EQ(m.totalGpus, 20);
  EXPECT_EQ(m.allocatedGpus, 8);
  EXPECT_EQ(m.freeGpus, 6);  // n1 2 + n2 4; cordoned n3 does not count
  EXPECT_EQ(m.largestFreeBlock, 4);
  EXPECT_EQ(m.schedulableJobs, (std::vector<std::int64_t>{6, 3, 1, 0}));
  EXPECT_EQ(m.pendingPods, 1);
  EXPECT_EQ(m.fragmentationRatio, 0);  // no workload known

  ASSERT_GE(m.queues.size(), 2u);
  EXPECT_EQ(m.queues[0].name, "team-a");
  EXPECT_EQ(m.queues[0].deserved, 6);
  EXPECT_EQ(m.queues[0].limit, 10);
  EXPECT_EQ(m.queues[0].allocated, 6);
  EXPECT_EQ(m.queues[0].overQuota, 0);
  EXPECT_EQ(m.queues[1].name, "team-b");
  EXPECT_FALSE(m.queues[1].limit.has_value());
  EXPECT_EQ(m.queues[1].allocated, 2);
  // team-b's borrowed pod holds 2 GPUs but only 1 is above its deserved 1: reclaiming the pod
  // would take team-b below deserved, so reclaim can take nothing from it.
  EXPECT_EQ(m.queues[1].overQuota, 0);
  EXPECT_EQ(m.queues[1].pending, 4);
  EXPECT_EQ(m.queues[1].pendingPods, 1);

  ASSERT_EQ(m.nodes.size(), 3u);
  EXPECT_EQ(m.nodes[0].name, "n1");
  EXPECT_EQ(m.nodes[0].free, 2);
  EXPECT_EQ(m.nodes[0].used, 6);
  EXPECT_FALSE(m.nodes[2].schedulable);
}

TEST(MeasureCluster, FragmentationAgainstTheSnapshotsWorkload) {
  // Only 4-GPU tasks: n1's 2 free GPUs are fragmented, n2's 4 are not.
  policy::SnapshotOptions options;
  policy::PodShape four;
  four.gpuCount = 4;
  options.workload =
      std::make_shared<const policy::Workload>(std::vector<policy::WeightedShape>{{four, 1.0}});
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(4)},
                                  {MakePod("a", "run").gpus(6).on("n1")}, {}, options);
  const ClusterMeasures m = measureCluster(*snap);
  EXPECT_NEAR(m.fragmentedGpus, 2, 1e-9);
  EXPECT_NEAR(m.fragmentationRatio, 2.0 / 6.0, 1e-9);
  EXPECT_NEAR(m.fragmentationRatio, policy::clusterFragmentation(*snap).ratio(), 1e-12);
}

}  // namespace
}  // namespace gpufair::metrics
