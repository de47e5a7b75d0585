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

}  // namespace
}  // namespace gpufair::policy
