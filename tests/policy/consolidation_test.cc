// planConsolidation: the seed's fragmentation (team-a's six 3-GPU pods 2,2,1,1 on four 10-GPU
// nodes, team-b's 8-GPU pod waiting) and the rules: what may move, gangs, PDB refusals,
// reclaimMinRuntime, GPU models, the preference among plans, and the reasons given.
#include "gpufair/policy/consolidation.h"

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;
using testing::resolved;
using testing::snapshotOf;

const Timestamp kNow = Timestamp{std::chrono::hours{500'000}};

Pod ran(MakePod pod, int minutes) {
  Pod p = pod.obj();
  p.started = kNow - std::chrono::minutes{minutes};
  return p;
}

std::vector<Node> fourNodes(const std::string& model12 = "", const std::string& model34 = "") {
  return {MakeNode("node-1").gpus(10).model(model12), MakeNode("node-2").gpus(10).model(model12),
          MakeNode("node-3").gpus(10).model(model34), MakeNode("node-4").gpus(10).model(model34)};
}

// team-a's job: six movable 3-GPU pods, 2,2,1,1 (free 4,4,7,7); a6 on node-4 is the youngest.
MakePod aPod(const std::string& name, const std::string& node) {
  return MakePod("team-a", name).gpus(3).on(node).controller("job-a").label("job-name", "a");
}
std::vector<Pod> seed(bool movable = true) {
  auto m = [movable](MakePod p) { return movable ? p.movable() : p; };
  return {ran(m(aPod("a1", "node-1")), 500), ran(m(aPod("a2", "node-1")), 400),
          ran(m(aPod("a3", "node-2")), 300), ran(m(aPod("a4", "node-2")), 250),
          ran(m(aPod("a5", "node-3")), 100), ran(m(aPod("a6", "node-4")), 50)};
}
std::vector<QueueQuota> queues() {
  return {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)};
}

struct Case {
  SnapshotPtr snap;
  Pod big;
  ConsolidationOutcome plan(ConsolidationOptions options = {}) const {
    options.now = kNow;
    return planConsolidation(*snap, big, options);
  }
};

Case seedCase(std::vector<Pod> pods = seed(), std::vector<Node> nodes = fourNodes(),
              MakePod big = MakePod("team-b", "big").gpus(8),
              std::vector<QueueQuota> qs = queues()) {
  Case c;
  c.snap = snapshotOf(nodes, std::move(pods), qs);
  c.big = resolved(*c.snap, big);
  return c;
}

std::vector<std::string> moved(const ConsolidationPlan& plan) {
  std::vector<std::string> out;
  for (const auto& m : plan.moves) out.push_back(m.pod->name + " " + m.from + "->" + m.to);
  return out;
}

TEST(ConsolidationTest, SeedLayoutNeedsOneMoveOfTheYoungestPod) {
  const ConsolidationOutcome out = seedCase().plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_TRUE(out.fragmented());
  const ConsolidationPlan& plan = *out.plan;
  EXPECT_EQ(plan.node, "node-4");
  // a6 is younger than a5 (the other one-move plan); best fit sends it to node-1 (4 free).
  EXPECT_EQ(moved(plan), std::vector<std::string>{"a6 node-4->node-1"});
  EXPECT_EQ(plan.movedGpus, 3000);
  EXPECT_EQ(plan.waiting, "team-b/big");
  EXPECT_EQ(plan.queue, "team-b");
  EXPECT_NE(plan.moves[0].reason.find("moved to make room for team-b/big (8 GPUs)"),
            std::string::npos)
      << plan.moves[0].reason;
  EXPECT_NE(plan.reason.find("team-a/a6 (3 GPUs) to node-1"), std::string::npos) << plan.reason;
}

TEST(ConsolidationTest, NothingMovableMeansNoPlanAndSaysWhy) {
  const ConsolidationOutcome out = seedCase(seed(false)).plan();
  EXPECT_EQ(out.kind, ConsolidationOutcome::Kind::kNoPlan);
  EXPECT_TRUE(out.fragmented());
  EXPECT_FALSE(out.plan.has_value());
  EXPECT_NE(out.reason.find("22 GPUs free in total but at most 7 GPUs on one node"),
            std::string::npos)
      << out.reason;
  EXPECT_NE(out.reason.find("no movable pods"), std::string::npos) << out.reason;
}

TEST(ConsolidationTest, MovablePodsWithoutAControllerStay) {
  std::vector<Pod> pods = seed();
  for (Pod& p : pods) p.controller.clear();
  const ConsolidationOutcome out = seedCase(pods).plan();
  EXPECT_EQ(out.kind, ConsolidationOutcome::Kind::kNoPlan);
  EXPECT_NE(out.reason.find("6 movable pods have no controller"), std::string::npos) << out.reason;
}

TEST(ConsolidationTest, BorrowedPodsAreMovableWithoutTheLabel) {
  std::vector<Pod> pods = seed(false);
  pods[4].overQuota = true;  // a5 on node-3
  const ConsolidationOutcome out = seedCase(pods).plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_EQ(out.plan->node, "node-3");
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a5 node-3->node-1"});
}

TEST(ConsolidationTest, OutcomesWhenConsolidationCannotOrNeedNotHelp) {
  // It fits now: a 7-GPU pod.
  EXPECT_EQ(seedCase(seed(), fourNodes(), MakePod("team-b", "b7").gpus(7)).plan().kind,
            ConsolidationOutcome::Kind::kNotNeeded);
  // Larger than any node (11 > 10), though 22 are free in total: moving cannot help.
  const ConsolidationOutcome tooBig =
      seedCase(seed(), fourNodes(), MakePod("team-b", "b11").gpus(11)).plan();
  EXPECT_EQ(tooBig.kind, ConsolidationOutcome::Kind::kNotFragmented);
  EXPECT_FALSE(tooBig.fragmented());
  EXPECT_NE(tooBig.reason.find("no node it may use has 11 GPUs"), std::string::npos)
      << tooBig.reason;
  // Not enough free in total (2 + 2 < 5): moving cannot help.
  const ConsolidationOutcome short5 =
      seedCase({ran(aPod("a1", "node-1").gpus(8).movable(), 500),
                ran(aPod("a2", "node-2").gpus(8).movable(), 500)},
               {MakeNode("node-1").gpus(10), MakeNode("node-2").gpus(10)},
               MakePod("team-b", "b5").gpus(5))
          .plan();
  EXPECT_EQ(short5.kind, ConsolidationOutcome::Kind::kNotFragmented);
  EXPECT_NE(short5.reason.find("only 4 GPUs free"), std::string::npos) << short5.reason;
  // The queue does not admit it (limit 4): not the planner's to serve.
  const ConsolidationOutcome limited =
      seedCase(seed(), fourNodes(), MakePod("team-b", "big").gpus(8),
               {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(4).limit(4)})
          .plan();
  EXPECT_EQ(limited.kind, ConsolidationOutcome::Kind::kNotEligible);
  EXPECT_NE(limited.reason.find("does not admit"), std::string::npos) << limited.reason;
  // A share of one GPU is planned too (consolidation_waiting_test.cc); here it fits now. Gang
  // members are not planned one by one (planGangConsolidation plans the gang).
  EXPECT_EQ(seedCase(seed(), fourNodes(), MakePod("team-b", "half").share(0.5)).plan().kind,
            ConsolidationOutcome::Kind::kNotNeeded);
  EXPECT_EQ(seedCase(seed(), fourNodes(), MakePod("team-b", "g0").gpus(8).gang("g", 2)).plan().kind,
            ConsolidationOutcome::Kind::kNotEligible);
}

TEST(ConsolidationTest, AGangMovesWholeOrNotAtAll) {
  // node-3 and node-4 each run one member of gang g (3 GPUs each), the only movable pods:
  // freeing either node moves both.
  std::vector<Pod> pods = seed(false);
  pods[4] = ran(aPod("g0", "node-3").movable().gang("g", 2), 100);
  pods[5] = ran(aPod("g1", "node-4").movable().gang("g", 2), 100);
  const ConsolidationOutcome out = seedCase(pods).plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  ASSERT_EQ(out.plan->moves.size(), 2U);
  EXPECT_EQ(out.plan->moves[0].pod->name, "g0");
  EXPECT_EQ(out.plan->moves[1].pod->name, "g1");
  EXPECT_NE(out.plan->moves[0].to, out.plan->node);
  EXPECT_NE(out.plan->moves[1].to, out.plan->node);
  // A member that may not move (no label, not borrowed) keeps the whole gang in place.
  pods[5] = ran(aPod("g1", "node-4").gang("g", 2), 100);
  const ConsolidationOutcome stuck = seedCase(pods).plan();
  EXPECT_EQ(stuck.kind, ConsolidationOutcome::Kind::kNoPlan) << stuck.reason;
  // Within maxMoves 1, a gang of two cannot move.
  pods[5] = ran(aPod("g1", "node-4").movable().gang("g", 2), 100);
  ConsolidationOptions one;
  one.maxMoves = 1;
  EXPECT_EQ(seedCase(pods).plan(one).kind, ConsolidationOutcome::Kind::kNoPlan);
}

TEST(ConsolidationTest, APodWhoseEvictionWasRefusedIsSpared) {
  const Case c = seedCase();
  ConsolidationOptions options;
  options.spared = {"uid-team-a-a6"};  // a PodDisruptionBudget refused a6
  const ConsolidationOutcome out = c.plan(options);
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a5 node-3->node-1"});
  options.spared.insert("uid-team-a-a5");
  const ConsolidationOutcome none = c.plan(options);
  // node-1 and node-2 would need two moves each (3 + 3 to free 4 more): still a plan, of two.
  ASSERT_EQ(none.kind, ConsolidationOutcome::Kind::kPlanned) << none.reason;
  EXPECT_EQ(none.plan->moves.size(), 2U);
  options.maxMoves = 1;
  const ConsolidationOutcome refused = c.plan(options);
  EXPECT_EQ(refused.kind, ConsolidationOutcome::Kind::kNoPlan);
  EXPECT_NE(refused.reason.find("2 refused eviction (PodDisruptionBudget)"), std::string::npos)
      << refused.reason;
}

TEST(ConsolidationTest, PodsYoungerThanReclaimMinRuntimeStay) {
  std::vector<QueueQuota> qs = queues();
  qs[0].reclaimMinRuntime = std::chrono::minutes{60};  // a6 ran 50 minutes, a5 100
  const ConsolidationOutcome out =
      seedCase(seed(), fourNodes(), MakePod("team-b", "big").gpus(8), qs).plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a5 node-3->node-1"});
  qs[0].reclaimMinRuntime = std::chrono::hours{10};
  ConsolidationOptions one;
  one.maxMoves = 1;
  const ConsolidationOutcome young =
      seedCase(seed(), fourNodes(), MakePod("team-b", "big").gpus(8), qs).plan(one);
  EXPECT_EQ(young.kind, ConsolidationOutcome::Kind::kNoPlan);
  EXPECT_NE(young.reason.find("too young to move"), std::string::npos) << young.reason;
}

TEST(ConsolidationTest, GpuModelsHoldForTheWaitingPodAndTheMovers) {
  // node-1, node-2 are V100, node-3, node-4 A100; big asks for A100; a6 runs on A100 only.
  std::vector<Pod> pods = seed();
  pods[5].gpuModels = {"A100"};
  const ConsolidationOutcome out =
      seedCase(pods, fourNodes("V100", "A100"), MakePod("team-b", "big").gpus(8).models({"A100"}))
          .plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  // Moving a6 (younger) would need another A100 node: node-3 has 7 free, so a6 goes there.
  EXPECT_EQ(out.plan->node, "node-4");
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a6 node-4->node-3"});
  // A model no node has: nothing is free for it, moving cannot help.
  EXPECT_EQ(
      seedCase(pods, fourNodes("V100", "A100"), MakePod("team-b", "big").gpus(8).models({"H100"}))
          .plan()
          .kind,
      ConsolidationOutcome::Kind::kNotFragmented);
}

TEST(ConsolidationTest, HeldAndReleasingStateIsRespected) {
  const Case c = seedCase();
  ConsolidationOptions options;
  options.excludedNodes = {"node-4", "node-1"};  // held for other plans
  const ConsolidationOutcome out = c.plan(options);
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a5 node-3->node-2"});
  // a6 is being moved already: node-4 has 10 free for big, nothing more to do.
  ConsolidationOptions releasing;
  for (const auto& p : c.snap->findNode("node-4")->pods()) releasing.releasing.push_back(p);
  EXPECT_EQ(c.plan(releasing).kind, ConsolidationOutcome::Kind::kNotNeeded);
}

TEST(ConsolidationTest, FewestMovesThenFewestGpus) {
  // node-1: one movable 6-GPU pod (free 4); node-2: two movable 2-GPU pods and a fixed 2-GPU pod
  // (free 4). Freeing 4 more GPUs: one move on node-1 (6 GPUs) beats two on node-2 (4 GPUs).
  std::vector<Pod> pods = {
      ran(aPod("big6", "node-1").gpus(6).movable(), 10),
      ran(aPod("s1", "node-2").gpus(2).movable(), 10),
      ran(aPod("s2", "node-2").gpus(2).movable(), 10),
      ran(aPod("fixed", "node-2").gpus(2), 10),
      ran(aPod("f3", "node-3").gpus(8), 10),
  };
  const std::vector<Node> nodes = {MakeNode("node-1").gpus(10), MakeNode("node-2").gpus(10),
                                   MakeNode("node-3").gpus(10)};
  const ConsolidationOutcome out = seedCase(pods, nodes).plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  // big6 cannot fit elsewhere (node-3 has 2, node-2 4): the two small pods move instead.
  EXPECT_EQ(out.plan->node, "node-2");
  EXPECT_EQ(out.plan->moves.size(), 2U);
  // With a node that takes the 6-GPU pod, one move wins.
  std::vector<Node> more = nodes;
  more.push_back(MakeNode("node-4").gpus(6));
  pods.push_back(ran(aPod("filler", "node-4").gpus(0), 10));
  const ConsolidationOutcome one = seedCase(pods, more).plan();
  ASSERT_EQ(one.kind, ConsolidationOutcome::Kind::kPlanned) << one.reason;
  EXPECT_EQ(moved(*one.plan), std::vector<std::string>{"big6 node-1->node-4"});
}

// Serve leaves CPU and memory to kube-scheduler (fit options off), yet a mover's replacement
// steered to a node without its memory would wait there: where the nodes' allocatable memory is
// known, movers go only where it fits. node-1 (4 GPUs free, best fit for a6) has a 0-GPU pod
// holding 230Gi of its 256Gi: a6 (16Gi) goes to node-2.
TEST(ConsolidationTest, MoversGoOnlyWhereTheirMemoryFitsWhereTheNodesSayHowMuch) {
  std::vector<Pod> pods = seed();
  for (Pod& p : pods) p.memoryBytes = std::int64_t{16} << 30;
  pods.push_back(MakePod("team-c", "etl").gpus(0).memGi(230).on("node-1").obj());
  std::vector<Node> nodes = fourNodes();
  for (Node& n : nodes) n.memoryBytes = std::int64_t{256} << 30;
  const ConsolidationOutcome out = seedCase(pods, nodes).plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a6 node-4->node-2"});
  // Nodes that do not say (allocatable 0, unknown): memory is not checked, best fit as before.
  const ConsolidationOutcome unknown = seedCase(pods).plan();
  ASSERT_EQ(unknown.kind, ConsolidationOutcome::Kind::kPlanned) << unknown.reason;
  EXPECT_EQ(moved(*unknown.plan), std::vector<std::string>{"a6 node-4->node-1"});
}

// The waiting pod must fit by CPU on its target after the moves: node-4 (a6, the youngest) has a
// 0-GPU pod holding 40 of its 64 CPUs, too many for big's 32, so a5 leaves node-3 instead. When
// every freed node would lack its CPU, no plan, and the reason says so.
TEST(ConsolidationTest, TheWaitingPodFitsByCpuOnItsTarget) {
  std::vector<Pod> pods = seed();
  pods.push_back(MakePod("team-c", "etl").gpus(0).cpu(40).on("node-4").obj());
  std::vector<Node> nodes = fourNodes();
  for (Node& n : nodes) n.cpuMilli = 64'000;
  const ConsolidationOutcome out =
      seedCase(pods, nodes, MakePod("team-b", "big").gpus(8).cpu(32)).plan();
  ASSERT_EQ(out.kind, ConsolidationOutcome::Kind::kPlanned) << out.reason;
  EXPECT_EQ(out.plan->node, "node-3");
  EXPECT_EQ(moved(*out.plan), std::vector<std::string>{"a5 node-3->node-1"});
  const ConsolidationOutcome none =
      seedCase(pods, nodes, MakePod("team-b", "big").gpus(8).cpu(65)).plan();
  EXPECT_EQ(none.kind, ConsolidationOutcome::Kind::kNoPlan);
  EXPECT_NE(none.reason.find("the freed node would lack the pod's CPU or memory"),
            std::string::npos)
      << none.reason;
}

// A pod whose GPUs are free on a node short of its CPU does not wait on GPU fragmentation: moving
// GPU pods is not planned for it (it fitted "now" before CPU was looked at).
TEST(ConsolidationTest, FreeGpusShortOfCpuAreNotFragmentation) {
  // node-1: 7 GPUs and 4 CPUs free; node-2 is too small for the pod (2 GPUs).
  std::vector<Node> nodes = {MakeNode("node-1").gpus(10).cpu(64), MakeNode("node-2").gpus(2)};
  std::vector<Pod> pods = {ran(aPod("a1", "node-1").cpu(60).movable(), 500)};
  const ConsolidationOutcome out =
      seedCase(pods, nodes, MakePod("team-b", "big").gpus(4).cpu(8)).plan();
  EXPECT_EQ(out.kind, ConsolidationOutcome::Kind::kNotFragmented) << out.reason;
  EXPECT_FALSE(out.fragmented());
  EXPECT_NE(out.reason.find("its GPUs are free on node node-1 but not the CPU or memory"),
            std::string::npos)
      << out.reason;
}

}  // namespace
}  // namespace gpufair::policy
