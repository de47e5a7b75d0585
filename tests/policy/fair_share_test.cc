#include "gpufair/policy/fair_share.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>

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

// A queue for the table: amounts in GPUs (fractions allowed).
struct Q {
  Q(std::string n, double d, double want, double w = 1, std::optional<double> l = std::nullopt)
      : name(std::move(n)), deserved(d), demand(want), weight(w), limit(l) {}
  std::string name;
  double deserved;
  double demand;
  double weight;
  std::optional<double> limit;
};

struct FairShareCase {
  std::string name;
  std::vector<Q> queues;
  double capacity;
  std::vector<double> want;  // shares in GPUs, in queue order
  MilliGpu granularity = 0;  // 0: fairShareGranularity decides
};

void PrintTo(const FairShareCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<FairShareInput> inputsOf(const std::vector<Q>& queues) {
  std::vector<FairShareInput> inputs;
  for (const Q& q : queues) {
    FairShareInput in;
    in.name = q.name;
    in.deserved = gpus(q.deserved);
    in.demand = gpus(q.demand);
    in.overQuotaWeight = q.weight;
    if (q.limit) in.limit = gpus(*q.limit);
    inputs.push_back(in);
  }
  return inputs;
}

class FairShareTest : public ::testing::TestWithParam<FairShareCase> {};

TEST_P(FairShareTest, Shares) {
  const FairShareCase& c = GetParam();
  const auto inputs = inputsOf(c.queues);
  const MilliGpu capacity = gpus(c.capacity);
  const MilliGpu granularity =
      c.granularity > 0 ? c.granularity : fairShareGranularity(inputs, capacity);
  const std::vector<MilliGpu> got = computeFairShares(inputs, capacity, granularity);
  std::vector<MilliGpu> want;
  for (double w : c.want) want.push_back(gpus(w));
  EXPECT_EQ(got, want);
  EXPECT_LE(std::accumulate(got.begin(), got.end(), MilliGpu{0}), capacity);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FairShareTest,
    ::testing::Values(
        FairShareCase{"Weights1To2To3SplitIdleGpus",
                      {{"a", 0, 100, 1}, {"b", 0, 100, 2}, {"c", 0, 100, 3}},
                      60,
                      {10, 20, 30}},
        FairShareCase{
            "DeservedFirstThenIdleByWeight", {{"a", 10, 40, 1}, {"b", 10, 40, 3}}, 40, {15, 25}},
        FairShareCase{"QueueWithNoDemandGetsNothingAndItsDeservedFlows",
                      {{"a", 20, 0, 1}, {"b", 20, 40, 1}},
                      40,
                      {0, 40}},
        FairShareCase{
            "DemandBelowDeservedIsTheShare", {{"a", 20, 8, 1}, {"b", 20, 50, 1}}, 40, {8, 32}},
        FairShareCase{"LimitCapsAndTheRestFlowsToOthers",
                      {{"a", 0, 100, 1, 10}, {"b", 0, 100, 1}, {"c", 0, 100, 1}},
                      60,
                      {10, 25, 25}},
        FairShareCase{
            "LimitBelowDeservedCaps", {{"a", 10, 20, 1, 5}, {"b", 0, 20, 1}}, 20, {5, 15}},
        FairShareCase{"WhatSmallDemandLeavesFlowsOnByWeight",
                      {{"a", 0, 5, 1}, {"b", 0, 100, 1}, {"c", 0, 100, 3}},
                      45,
                      {5, 10, 30}},
        FairShareCase{"CascadeOfCapsFlowsRoundAfterRound",
                      {{"a", 0, 2, 1}, {"b", 0, 6, 1}, {"c", 0, 100, 1}, {"d", 0, 100, 1}},
                      40,
                      {2, 6, 16, 16}},
        FairShareCase{"LeftoverWholeGpusByLargestRemainderThenName",
                      {{"b", 0, 100, 1}, {"a", 0, 100, 1}, {"c", 0, 100, 1}},
                      10,
                      {3, 4, 3}},
        FairShareCase{
            "LargestRemainderBeatsName", {{"a", 0, 100, 1}, {"b", 0, 100, 2}}, 10, {3, 7}},
        FairShareCase{"EveryoneSatisfiedLeavesIdle", {{"a", 5, 3, 1}, {"b", 0, 4, 1}}, 40, {3, 4}},
        FairShareCase{"ZeroWeightKeepsDeservedButBorrowsNothing",
                      {{"a", 5, 20, 0}, {"b", 0, 20, 1}},
                      20,
                      {5, 15}},
        FairShareCase{"ZeroCapacity", {{"a", 10, 10, 1}, {"b", 0, 10, 1}}, 0, {0, 0}},
        FairShareCase{"NoDemandAnywhere", {{"a", 10, 0, 1}, {"b", 0, 0, 2}}, 40, {0, 0}},
        FairShareCase{"OversubscribedDeservedSplitByDeserved",
                      {{"a", 10, 100, 1}, {"b", 30, 100, 1}},
                      20,
                      {5, 15}},
        FairShareCase{"OversubscribedDeservedRespectsSmallDemand",
                      {{"a", 10, 2, 1}, {"b", 30, 100, 1}},
                      20,
                      {2, 18}},
        FairShareCase{"FractionsInMilliGpus", {{"a", 0.5, 3, 1}, {"b", 0, 3, 1}}, 2.7, {1.6, 1.1}},
        FairShareCase{"MilliLeftoverByName",
                      {{"c", 0, 1, 1}, {"a", 0, 1, 1}, {"b", 0, 1, 1}},
                      1,
                      {0.333, 0.334, 0.333},
                      1},
        FairShareCase{"FractionalDemandMakesMilliShares",
                      {{"a", 0, 0.25, 1}, {"b", 0, 4, 1}},
                      2,
                      {0.25, 1.75}},
        FairShareCase{"GranularityRoundsCapsDown",
                      {{"a", 0, 1.5, 1}, {"b", 0, 10, 1}},
                      4,
                      {1, 3},
                      kMilliPerGpu}),
    [](const auto& info) { return info.param.name; });

TEST(FairShareGranularity, WholeOnlyWhenEverythingIsWhole) {
  EXPECT_EQ(fairShareGranularity(inputsOf({{"a", 2, 3, 1, 4}}), gpus(8)), kMilliPerGpu);
  EXPECT_EQ(fairShareGranularity(inputsOf({{"a", 2, 3.5, 1}}), gpus(8)), 1);
  EXPECT_EQ(fairShareGranularity(inputsOf({{"a", 2.5, 3, 1}}), gpus(8)), 1);
  EXPECT_EQ(fairShareGranularity(inputsOf({{"a", 2, 3, 1, 4.5}}), gpus(8)), 1);
  EXPECT_EQ(fairShareGranularity(inputsOf({{"a", 2, 3, 1}}), gpus(7.5)), 1);
  EXPECT_EQ(fairShareGranularity({}, 0), kMilliPerGpu);
}

TEST(FairShare, OddInputsAreSafe) {
  std::vector<FairShareInput> inputs(3);
  inputs[0] = {"a", -5, MilliGpu{-1}, 1, 4000};
  inputs[1] = {"b", 2000, std::nullopt, std::numeric_limits<double>::quiet_NaN(), 9000};
  inputs[2] = {"c", 0, std::nullopt, -3, -7000};
  const auto shares = computeFairShares(inputs, gpus(10), 0);
  EXPECT_EQ(shares, (std::vector<MilliGpu>{0, 2000, 0}));
  EXPECT_TRUE(computeFairShares({}, gpus(10), kMilliPerGpu).empty());
  EXPECT_EQ(computeFairShares(inputsOf({{"a", 1, 5, 1}}), -gpus(3), kMilliPerGpu),
            (std::vector<MilliGpu>{0}));
}

// Invariants over many random clusters: never above capacity, demand or limit; deserved first;
// work-conserving (GPUs stay unshared only when every borrower is capped); deterministic and
// independent of input order.
TEST(FairShare, InvariantsOnRandomQueues) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 500; ++round) {
    const bool fractions = round % 2 == 1;
    const int n = 1 + static_cast<int>(rng() % 12);
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.push_back("q" + std::to_string(rng() % 1000));
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    auto amount = [&](int maxGpus) {
      const MilliGpu whole = static_cast<MilliGpu>(rng() % (maxGpus + 1)) * kMilliPerGpu;
      return fractions ? whole + static_cast<MilliGpu>(rng() % kMilliPerGpu) : whole;
    };
    std::vector<FairShareInput> inputs;
    for (const auto& name : names) {
      FairShareInput in;
      in.name = name;
      in.deserved = amount(20);
      in.demand = amount(40);
      in.overQuotaWeight = static_cast<double>(rng() % 4);  // 0..3
      if (rng() % 3 == 0) in.limit = amount(30);
      inputs.push_back(in);
    }
    const MilliGpu capacity = amount(120);
    const MilliGpu g = fairShareGranularity(inputs, capacity);
    EXPECT_EQ(g, fractions ? 1 : kMilliPerGpu);
    const auto shares = computeFairShares(inputs, capacity, g);
    ASSERT_EQ(shares.size(), inputs.size());
    MilliGpu sum = 0;
    MilliGpu baseSum = 0;
    bool borrowerUncapped = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      const MilliGpu cap = in.limit ? std::min(in.demand, *in.limit) : in.demand;
      EXPECT_GE(shares[i], 0);
      EXPECT_LE(shares[i], cap) << "round " << round << " queue " << in.name;
      EXPECT_EQ(shares[i] % g, 0);
      sum += shares[i];
      baseSum += std::min(in.deserved, cap);
      if (in.overQuotaWeight > 0 && shares[i] < cap) borrowerUncapped = true;
    }
    EXPECT_LE(sum, capacity) << "round " << round;
    if (baseSum <= capacity) {
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& in = inputs[i];
        const MilliGpu cap = in.limit ? std::min(in.demand, *in.limit) : in.demand;
        EXPECT_GE(shares[i], std::min(in.deserved, cap)) << "round " << round;
      }
    }
    if (borrowerUncapped) {
      EXPECT_GT(sum + g, capacity) << "idle GPUs left unshared";
    }

    EXPECT_EQ(computeFairShares(inputs, capacity, g), shares);
    std::vector<std::size_t> order(inputs.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<FairShareInput> shuffled;
    for (std::size_t i : order) shuffled.push_back(inputs[i]);
    const auto again = computeFairShares(shuffled, capacity, g);
    for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(again[k], shares[order[k]]);
  }
}

TEST(FairShareInSnapshot, EveryQueueIncludingDefaultGetsItsShare) {
  // 40 GPUs. team-a runs 30 (deserved 20), team-b waits for 8 (deserved 20); research (default
  // queue, deserved 0) waits for 10.
  std::vector<Pod> pods;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(MakePod("team-a", "a" + std::to_string(i)).gpus(10).on("n" + std::to_string(i)));
  }
  pods.push_back(MakePod("team-b", "b").gpus(8));
  pods.push_back(MakePod("research", "r").gpus(10));
  auto snap = testing::snapshotOf(
      {MakeNode("n0").gpus(10), MakeNode("n1").gpus(10), MakeNode("n2").gpus(10),
       MakeNode("n3").gpus(10)},
      pods, {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)});
  // Deserved: a 20, b 8; idle 12 split 1:1 between a (wants 10 more) and research (wants 10).
  EXPECT_EQ(snap->findQueue("team-a")->fairShare, gpus(26));
  EXPECT_EQ(snap->findQueue("team-b")->fairShare, gpus(8));
  EXPECT_EQ(snap->findQueue(kDefaultQueueName)->fairShare, gpus(6));
}

TEST(FairShareInSnapshot, GPUsReservedForAGangAreItsQueuesDemand) {
  // 40 GPUs; team-a (deserved 20) runs 2 and its 4 × 4-GPU gang has 16 GPUs reserved, one member
  // pending (already offered); team-b (deserved 20) wants nothing. team-a's demand is 2 + 16 (the
  // pending member is within its gang's reservation, not counted twice) + 4 for a new pod.
  const Reservation gang[] = {{"n1", gpus(8), "gang:team-a/train", "team-a", "gang", ""},
                              {"n2", gpus(8), "gang:team-a/train", "team-a", "gang", ""}};
  auto snap = testing::snapshotOf(
      {MakeNode("n0").gpus(10), MakeNode("n1").gpus(10), MakeNode("n2").gpus(10),
       MakeNode("n3").gpus(10)},
      {MakePod("team-a", "run").gpus(2).on("n0"),
       MakePod("team-a", "train-0").gpus(4).gang("train", 4), MakePod("team-a", "job").gpus(4)},
      {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)}, {},
      {std::begin(gang), std::end(gang)});
  EXPECT_EQ(snap->findQueue("team-a")->reservedAhead, gpus(12));
  EXPECT_EQ(snap->findQueue("team-a")->fairShare, gpus(22));
  EXPECT_EQ(snap->findQueue("team-b")->fairShare, 0);
}

TEST(FairShareInSnapshot, CordonedNodesAreNotShared) {
  auto snap =
      testing::snapshotOf({MakeNode("n0").gpus(8), MakeNode("n1").gpus(8).unschedulable()},
                          {MakePod("team-a", "w").gpus(16)}, {MakeQueue("team-a").deserved(4)});
  EXPECT_EQ(snap->capacity(), gpus(8));
  EXPECT_EQ(snap->findQueue("team-a")->fairShare, gpus(8));
}

TEST(FairShareCounting, CountsAPodTheSnapshotDoesNotListAsPending) {
  auto snap = testing::snapshotOf(
      {MakeNode("n0").gpus(10), MakeNode("n1").gpus(10)},
      {MakePod("team-a", "a").gpus(10).on("n0"), MakePod("team-b", "b").gpus(4)},
      {MakeQueue("team-a").deserved(5), MakeQueue("team-b").deserved(5)});
  EXPECT_EQ(snap->findQueue("team-a")->fairShare, gpus(10));
  // A new pod of team-a: its demand grows to 14, all of which fits beside b's 4.
  const Pod fresh = testing::resolved(*snap, MakePod("team-a", "new").gpus(4));
  EXPECT_EQ(fairShareCounting(*snap, fresh), gpus(14));
  // b's pod is already counted: its share stands.
  const Pod listed = testing::resolved(*snap, MakePod("team-b", "b").gpus(4));
  EXPECT_EQ(fairShareCounting(*snap, listed), snap->findQueue("team-b")->fairShare);
  EXPECT_EQ(fairShareCounting(*snap, testing::resolved(*snap, MakePod("x", "p").queue("nope"))), 0);
}

}  // namespace
}  // namespace gpufair::policy
