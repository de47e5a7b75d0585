#include "gpufair/policy/filter.h"

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

std::vector<std::string_view> names(std::initializer_list<std::string_view> n) {
  return n;
}

policy::SnapshotPtr cluster() {
  return testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(8), MakeNode("n3").gpus(4).unschedulable()},
      {MakePod("team-a", "a").gpus(6).on("n1")},
      {MakeQueue("team-a").deserved(8).limit(8), MakeQueue("team-b").deserved(8)});
}

TEST(Filter, SplitsFeasibleFailedAndUnresolvable) {
  auto snap = cluster();
  auto candidates = names({"n1", "n2", "n3", "ghost"});
  FilterResult r =
      filter(*snap, testing::resolved(*snap, MakePod("team-b", "p").gpus(4)), candidates);
  EXPECT_EQ(r.feasible, names({"n2"}));
  ASSERT_EQ(r.failed.size(), 2u);
  EXPECT_EQ(r.failed[0].node, "n1");
  EXPECT_EQ(r.failed[0].reason, "fewer than 4 GPUs free");
  EXPECT_EQ(r.failed[1].node, "ghost");
  EXPECT_EQ(r.failed[1].reason, "node ghost is not in gpufair's cluster view yet");
  ASSERT_EQ(r.unresolvable.size(), 1u);
  EXPECT_EQ(r.unresolvable[0].node, "n3");
  EXPECT_TRUE(r.admission.status.isOk());
}

TEST(Filter, PodWithoutGpusPassesUntouched) {
  auto snap = cluster();
  auto candidates = names({"n3", "ghost", "n1"});
  FilterResult r = filter(*snap, testing::resolved(*snap, MakePod("team-a", "web")), candidates);
  EXPECT_EQ(r.feasible, candidates);
  EXPECT_TRUE(r.failed.empty());
  EXPECT_TRUE(r.unresolvable.empty());
}

TEST(Filter, QueueRejectionFailsEveryNodeWithTheReason) {
  auto snap = cluster();
  auto candidates = names({"n1", "n2"});
  FilterResult r =
      filter(*snap, testing::resolved(*snap, MakePod("team-a", "p").gpus(4)), candidates);
  EXPECT_TRUE(r.feasible.empty());
  ASSERT_EQ(r.unresolvable.size(), 2u);
  for (const auto& v : r.unresolvable) {
    EXPECT_EQ(v.reason, "queue team-a at 6/8 GPUs (limit); pod needs 4 GPUs");
  }
}

TEST(Prioritize, ScoresFittingNodesZeroElsewhere) {
  auto snap = cluster();
  auto candidates = names({"n1", "n2", "n3", "ghost"});
  auto scorer = makeScorer("blockfit");  // the default before fgdm, whose ranking is checked
  auto scores = prioritize(*snap, testing::resolved(*snap, MakePod("team-b", "p").gpus(2)),
                           candidates, *scorer);
  ASSERT_EQ(scores.size(), 4u);
  // n1 (2 free, exact fit) beats n2 (the only 8-block); n3 is cordoned; ghost is unknown.
  EXPECT_EQ(scores[0].node, "n1");
  EXPECT_EQ(scores[0].score, 10);
  EXPECT_EQ(scores[1].score, 0);
  EXPECT_EQ(scores[2].score, 0);
  EXPECT_EQ(scores[3].score, 0);
}

TEST(Prioritize, PodWithoutGpusGetsNeutralScores) {
  auto snap = cluster();
  auto candidates = names({"n1", "n2"});
  auto scorer = makeScorer("binpack");
  for (const auto& s : prioritize(*snap, MakePod("team-b", "web"), candidates, *scorer)) {
    EXPECT_EQ(s.score, 0);
  }
}

// best and top-N take the first few of rankCandidates: a limit gives exactly that prefix (ties in
// the caller's order, reserved nodes first, unfit nodes last), whatever the limit.
TEST(RankCandidates, ALimitGivesThePrefixOfTheFullOrder) {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  for (int i = 0; i < 12; ++i) {
    const std::string name = "n" + std::to_string(i);
    nodes.push_back(MakeNode(name).gpus(8));
    pods.push_back(MakePod("team-a", "a" + std::to_string(i)).gpus(i % 4 * 2).on(name));
  }
  Reservation held{"n7", testing::gpus(2), "uid-team-b-p", "team-b", "reclaim", ""};
  auto snap = testing::snapshotOf(nodes, pods, {MakeQueue("team-a").deserved(64)}, {}, {held});
  std::vector<std::string_view> candidates = {"n3", "n0", "ghost", "n7", "n4", "n1", "n11",
                                              "n8", "n2", "n5",    "n6", "n9", "n10"};
  for (const char* strategy : {"fgdm", "binpack", "spread"}) {
    SCOPED_TRACE(strategy);
    auto scorer = makeScorer(strategy);
    for (const Pod& pod : {testing::resolved(*snap, MakePod("team-b", "p").gpus(2)),
                           testing::resolved(*snap, MakePod("team-a", "q").gpus(3))}) {
      const auto full = rankCandidates(*snap, pod, candidates, *scorer);
      ASSERT_EQ(full.size(), candidates.size());
      for (std::size_t limit = 0; limit <= candidates.size() + 1; ++limit) {
        const auto prefix = rankCandidates(*snap, pod, candidates, *scorer, limit);
        const std::size_t n = std::min(limit, full.size());
        EXPECT_EQ(prefix, std::vector<std::size_t>(full.begin(), full.begin() + n)) << limit;
      }
    }
  }
}

}  // namespace
}  // namespace gpufair::policy
