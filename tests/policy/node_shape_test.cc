// Node shapes (node_shape.h): the interner gives equal ids exactly to nodes sameNodeShape cannot
// tell apart; filter and rankFeasible over a snapshot with shapes answer exactly as without them
// (random clusters where many nodes look alike); and shapes that no longer describe the nodes
// (a changed node, nodes in another order) are not used.
#include "gpufair/policy/node_shape.h"

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/candidate_positions.h"
#include "gpufair/policy/filter.h"

#include "testing/builders.h"
#include "testing/cluster.h"
#include "testing/filter_equivalence.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

// The snapshot's nodes as shared owners, each keeping the snapshot (and so its node) alive.
// (nodes() are plain pointers the snapshot owns: a shared_ptr of their own would free them twice.)
std::vector<NodeStatePtr> nodeStatesOf(const SnapshotPtr& snapshot) {
  std::vector<NodeStatePtr> out;
  for (const NodeState* n : snapshot->nodes()) out.emplace_back(snapshot, n);
  return out;
}

// `snapshot` again, with the shapes a NodeShapeInterner gives its nodes.
SnapshotPtr withShapes(const SnapshotPtr& snapshot) {
  NodeShapeInterner interner;
  auto shapes = std::make_shared<NodeShapes>();
  for (const auto& node : snapshot->nodes()) shapes->of.push_back(interner.shapeOf(*node));
  shapes->count = interner.count();
  SnapshotOptions options = snapshot->options();
  options.shapes = std::move(shapes);
  return std::make_shared<const ClusterSnapshot>(
      nodeStatesOf(snapshot),
      std::vector<PodPtr>(snapshot->pending().begin(), snapshot->pending().end()),
      snapshot->quotaConfig(), snapshot->generation(), std::move(options));
}

// Many nodes alike: few node kinds and few pod kinds, so most shapes are shared.
SnapshotPtr lookAlikeCluster(std::mt19937& rng, bool checkCpuMemory, bool scoreCpuMemory,
                             std::vector<std::string>& names) {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<Reservation> reservations;
  for (int i = 0; i < 80; ++i) {
    const std::string name = "n" + std::to_string(i);
    MakeNode node = MakeNode(name).gpus(rng() % 4 == 0 ? 4 : 8).cpu(rng() % 5 == 0 ? 16 : 32);
    node.memGi(128);
    if (rng() % 15 == 0) node.unschedulable();
    if (rng() % 4 == 0) node.model("A100");
    nodes.push_back(node);
    for (int p = static_cast<int>(rng() % 4); p > 0; --p) {
      MakePod pod = MakePod("team-a", name + "-" + std::to_string(p)).cpu(4);
      if (rng() % 6 == 0) {
        pod.share(0.5).gpuIndex(static_cast<int>(rng() % 2));
      } else {
        pod.gpus(static_cast<double>(1 + rng() % 2));
      }
      pods.push_back(pod.on(name));
    }
    if (rng() % 12 == 0) {
      const std::string holder = rng() % 2 ? "uid-team-b-p" : "uid-team-b-other";
      reservations.push_back({name, testing::gpus(2), holder, "team-b", "reclaim", ""});
    }
    names.push_back(name);
  }
  names.push_back("ghost");
  std::shuffle(names.begin(), names.end(), rng);
  SnapshotOptions options;
  options.fit.checkCpuMemory = checkCpuMemory;
  options.fit.scoreCpuMemory = scoreCpuMemory;
  return testing::snapshotOf(nodes, std::move(pods),
                             {MakeQueue("team-a").deserved(800), MakeQueue("team-b").deserved(800)},
                             std::move(options), reservations);
}

// A candidate list from the cluster's names: most of them, some twice, in random order;
// `shortList`: only the first 1 to 6 of those.
std::vector<std::string> candidateList(std::mt19937& rng, const std::vector<std::string>& names,
                                       bool shortList) {
  std::vector<std::string> picked;
  for (const std::string& name : names) {
    if (rng() % 5 == 0) continue;
    picked.push_back(name);
    if (rng() % 12 == 0) picked.push_back(name);
  }
  if (shortList) picked.resize(std::min<std::size_t>(picked.size(), 1 + rng() % 6));
  std::shuffle(picked.begin(), picked.end(), rng);
  return picked;
}

// The pods of the equivalence tests below: the filter equivalence pods, a whole node, and one
// whose CPU decides on some shapes.
std::vector<Pod> shapeCasePods() {
  std::vector<Pod> pods = testing::filterEquivalencePods();
  pods.push_back(MakePod("team-b", "p").gpus(8).cpu(30));
  pods.push_back(MakePod("team-b", "p").gpus(1).cpu(20));
  return pods;
}

// The cases of the equivalence tests below: for each seed and fit option (0 plain, 1 CPU and
// memory checked, 2 scored) a look-alike cluster without and with shapes, then `lists` candidate
// lists from its names (the last one short), each resolved against both.
struct ShapeCase {
  std::uint32_t seed = 0;
  int fit = 0;
  int list = 0;
  SnapshotPtr plain;
  SnapshotPtr shaped;
  std::span<const std::string_view> candidates;
  std::span<const std::ptrdiff_t> at;        // positions in plain
  std::span<const std::ptrdiff_t> shapedAt;  // positions in shaped
};

template <class Check>
void forEachShapeCase(std::uint32_t seeds, int lists, Check check) {
  for (std::uint32_t seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    for (int fit = 0; fit < 3; ++fit) {
      std::vector<std::string> names;
      ShapeCase c{
          .seed = seed, .fit = fit, .plain = lookAlikeCluster(rng, fit == 1, fit == 2, names)};
      c.shaped = withShapes(c.plain);
      for (c.list = 0; c.list < lists; ++c.list) {
        const std::vector<std::string> picked = candidateList(rng, names, c.list == lists - 1);
        const std::vector<std::string_view> candidates(picked.begin(), picked.end());
        CandidatePositions plainAt;
        CandidatePositions shapedAt;
        c.candidates = candidates;
        c.at = plainAt.resolve(c.plain, candidates);
        c.shapedAt = shapedAt.resolve(c.shaped, candidates);
        check(c);
      }
    }
  }
}

TEST(NodeShapes, FilterAndRankAnswerAsWithoutShapes) {
  std::vector<Pod> pods = testing::filterEquivalencePods();
  pods.push_back(MakePod("team-b", "p").gpus(8).cpu(30));  // a whole node
  // 12 seeds: the 25 this had took 52 s under CI's -O0 ASan build on a loaded machine.
  constexpr std::uint32_t kSeeds = 12;
  int compared = 0;
  std::size_t sharedShapes = 0;
  for (std::uint32_t seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937 rng(seed);
    for (int fit = 0; fit < 3; ++fit) {
      std::vector<std::string> names;
      const SnapshotPtr plain = lookAlikeCluster(rng, fit == 1, fit == 2, names);
      const SnapshotPtr shaped = withShapes(plain);
      ASSERT_EQ(plain->nodeShapes(), nullptr);
      ASSERT_NE(shaped->nodeShapes(), nullptr);
      sharedShapes += shaped->nodes().size() - shaped->nodeShapes()->count;
      const std::vector<std::string_view> candidates(names.begin(), names.end());
      CandidatePositions plainAt;
      CandidatePositions shapedAt;
      const auto at = plainAt.resolve(plain, candidates);
      const auto shapedPositions = shapedAt.resolve(shaped, candidates);
      for (const char* strategy : {"fgdm", "fgd", "fgdplus", "blockfit", "spread"}) {
        const ScorerPtr scorer = makeScorer(strategy);
        for (const Pod& p : pods) {
          const Pod pod = testing::resolved(*plain, p);
          const FilterResult expected = filter(*plain, pod, candidates, at);
          const FilterResult result = filter(*shaped, pod, candidates, shapedPositions);
          ASSERT_EQ(testing::describeFilter(result), testing::describeFilter(expected))
              << "seed " << seed;
          for (std::size_t limit : {std::size_t{1}, std::size_t{3}, static_cast<std::size_t>(-1)}) {
            EXPECT_EQ(rankFeasible(*shaped, pod, candidates, shapedPositions, result.feasible,
                                   *scorer, limit),
                      rankFeasible(*plain, pod, candidates, at, expected.feasible, *scorer, limit))
                << "seed " << seed << ", fit " << fit << ", " << strategy << ", pod " << pod.name
                << " " << pod.gpus << ", limit " << limit;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, int{kSeeds} * 3 * 5 * 7 * 3);
  EXPECT_GT(sharedShapes, kSeeds * 3u * 20u);  // the clusters do share shapes
}

// filterRanked over a snapshot with shapes (fit once per shape, only the first `keep` fitting
// candidates of each shape ranked) answers exactly as over the same snapshot without them (every
// candidate ranked): the pick, every FailedNodes reason, admission. Lists with names twice,
// unknown names, random order and length.
TEST(NodeShapes, FilterRankedAnswersAsWithoutShapes) {
  const std::vector<Pod> pods = shapeCasePods();
  // 8 seeds: 9,216 answers compared, ~10 s under CI's -O0 ASan build (25 took 31 s of CPU there,
  // past ctest's 60 s timeout on a loaded machine).
  constexpr std::uint32_t kSeeds = 8;
  int compared = 0;
  int narrowed = 0;
  forEachShapeCase(kSeeds, 3, [&](const ShapeCase& c) {
    for (const char* strategy : {"fgdm", "fgd", "fgdplus", "blockfit"}) {
      const ScorerPtr scorer = makeScorer(strategy);
      for (const Pod& p : pods) {
        const Pod pod = testing::resolved(*c.plain, p);
        for (std::size_t keep : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}}) {
          const FilterResult expected =
              filterRanked(*c.plain, pod, c.candidates, c.at, *scorer, keep);
          const FilterResult result =
              filterRanked(*c.shaped, pod, c.candidates, c.shapedAt, *scorer, keep);
          ASSERT_EQ(testing::describeFilter(result), testing::describeFilter(expected))
              << "seed " << c.seed << ", fit " << c.fit << ", list " << c.list << ", " << strategy
              << ", pod " << pod.name << " " << pod.gpus << ", keep " << keep;
          ++compared;
          if (filter(*c.plain, pod, c.candidates, c.at).feasible.size() > keep) ++narrowed;
        }
      }
    }
  });
  EXPECT_EQ(compared, int{kSeeds} * 3 * 3 * 4 * 8 * 4);
  EXPECT_GT(narrowed, compared / 3);  // most answers were picks among several fitting nodes
}

// prioritize from the candidates' positions (fit checked and the scorer asked once per shape)
// scores exactly as prioritize by name over the same snapshot without shapes, and falls back to it
// without shapes. Lists with names twice, unknown names, random order and length.
TEST(NodeShapes, PrioritizeFromPositionsScoresAsByName) {
  const std::vector<Pod> pods = shapeCasePods();
  constexpr std::uint32_t kSeeds = 6;
  int compared = 0;
  int scoredApart = 0;  // answers where the fitting nodes did not all score alike
  forEachShapeCase(kSeeds, 2, [&](const ShapeCase& c) {
    for (const char* strategy : {"fgdm", "fgd", "fgdplus", "blockfit", "spread"}) {
      const ScorerPtr scorer = makeScorer(strategy);
      for (const Pod& p : pods) {
        const Pod pod = testing::resolved(*c.plain, p);
        const auto expected = prioritize(*c.plain, pod, c.candidates, *scorer);
        const auto result = prioritize(*c.shaped, pod, c.candidates, c.shapedAt, *scorer);
        const auto unshaped = prioritize(*c.plain, pod, c.candidates, c.at, *scorer);
        ASSERT_EQ(result.size(), expected.size());
        ASSERT_EQ(unshaped.size(), expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
          ASSERT_EQ(result[i].node, expected[i].node);
          ASSERT_EQ(result[i].score, expected[i].score)
              << "seed " << c.seed << ", fit " << c.fit << ", list " << c.list << ", " << strategy
              << ", pod " << pod.name << " " << pod.gpus << ", node " << expected[i].node;
          ASSERT_EQ(unshaped[i].score, expected[i].score);
        }
        ++compared;
        if (std::any_of(expected.begin(), expected.end(),
                        [&](const NodeScore& s) { return s.score != expected.front().score; })) {
          ++scoredApart;
        }
      }
    }
  });
  EXPECT_EQ(compared, int{kSeeds} * 3 * 2 * 5 * 8);
  EXPECT_GT(scoredApart, compared / 3);  // most answers told nodes apart
}

TEST(NodeShapes, EqualIdsExactlyForNodesThatLookAlike) {
  std::mt19937 rng(11);
  std::vector<std::string> names;
  const SnapshotPtr snapshot = withShapes(lookAlikeCluster(rng, false, false, names));
  const NodeShapes& shapes = *snapshot->nodeShapes();
  const auto nodes = snapshot->nodes();
  for (std::size_t a = 0; a < nodes.size(); ++a) {
    EXPECT_EQ(shapes.of[a] == kOwnShape, !nodes[a]->reservations().empty()) << nodes[a]->name();
    for (std::size_t b = 0; b < nodes.size(); ++b) {
      const bool sameId = shapes.of[a] != kOwnShape && shapes.of[a] == shapes.of[b];
      EXPECT_EQ(sameId, sameNodeShape(*nodes[a], *nodes[b]))
          << nodes[a]->name() << " " << nodes[b]->name();
    }
  }
}

TEST(NodeShapes, EachFieldTellsShapesApart) {
  const NodeState base(MakeNode("a").gpus(8).cpu(32).memGi(64), {}, 1);
  const std::vector<NodeState> others = {
      NodeState(MakeNode("b").gpus(4).cpu(32).memGi(64), {}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(16).memGi(64), {}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(32), {}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64).model("A100"), {}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64).unschedulable(), {}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64),
                {std::make_shared<const Pod>(MakePod("t", "x").gpus(1).on("b"))}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64),
                {std::make_shared<const Pod>(MakePod("t", "x").cpu(1).on("b"))}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64),
                {std::make_shared<const Pod>(MakePod("t", "x").memGi(1).on("b"))}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64),
                {std::make_shared<const Pod>(MakePod("t", "x").share(0.5).gpuIndex(0).on("b"))}, 1),
      NodeState(MakeNode("b").gpus(8).cpu(32).memGi(64),
                {std::make_shared<const Pod>(MakePod("t", "x").share(0.5).gpuIndex(3).on("b"))}, 1),
  };
  NodeShapeInterner interner;
  const std::uint32_t id = interner.shapeOf(base);
  EXPECT_EQ(interner.shapeOf(NodeState(MakeNode("c").gpus(8).cpu(32).memGi(64), {}, 9)), id);
  std::vector<std::uint32_t> seen = {id};
  for (const NodeState& other : others) {
    EXPECT_FALSE(sameNodeShape(base, other)) << seen.size();
    const std::uint32_t otherId = interner.shapeOf(other);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), otherId), 0) << seen.size();
    seen.push_back(otherId);
  }
  EXPECT_EQ(interner.count(), others.size() + 1);
  const NodeState reserved(MakeNode("r").gpus(8).cpu(32).memGi(64), {}, 1,
                           {{"r", testing::gpus(2), "uid-x", "team-b", "reclaim", ""}});
  EXPECT_EQ(interner.shapeOf(reserved), kOwnShape);
  EXPECT_FALSE(sameNodeShape(reserved, reserved));
  interner.clear();
  EXPECT_EQ(interner.count(), 0u);
  EXPECT_EQ(interner.shapeOf(others.front()), 0u);
}

TEST(NodeShapes, ShapesThatNoLongerDescribeTheNodesAreNotUsed) {
  std::mt19937 rng(5);
  std::vector<std::string> names;
  const SnapshotPtr shaped = withShapes(lookAlikeCluster(rng, false, false, names));
  ASSERT_NE(shaped->nodeShapes(), nullptr);
  // The next snapshot with one node changed, handed the same shapes: they are dropped.
  std::vector<NodeStatePtr> nodes = nodeStatesOf(shaped);
  nodes[3] = std::make_shared<const NodeState>(
      nodes[3]->node(),
      std::vector<PodPtr>{
          std::make_shared<const Pod>(MakePod("team-a", "new").gpus(1).on(nodes[3]->name()))},
      shaped->generation() + 1);
  const std::size_t changed[] = {3};
  const auto next = std::make_shared<const ClusterSnapshot>(
      shaped.get(), nodes, changed, nullptr, shaped->quotaConfig(), shaped->generation() + 1,
      shaped->options());
  EXPECT_EQ(next->nodeShapes(), nullptr);
  // Nothing changed: they still hold.
  const auto same = std::make_shared<const ClusterSnapshot>(
      shaped.get(), nodeStatesOf(shaped), std::span<const std::size_t>{}, nullptr,
      shaped->quotaConfig(), shaped->generation() + 1, shaped->options());
  EXPECT_NE(same->nodeShapes(), nullptr);
  // Nodes given out of order are sorted by name: shapes given in their order are dropped.
  std::vector<NodeStatePtr> reversed = nodeStatesOf(shaped);
  std::reverse(reversed.begin(), reversed.end());
  const auto resorted = std::make_shared<const ClusterSnapshot>(
      reversed, std::vector<PodPtr>{}, shaped->quotaConfig(), 1, shaped->options());
  EXPECT_EQ(resorted->nodeShapes(), nullptr);
  // Shapes of another node count are never used.
  SnapshotOptions fewer = shaped->options();
  auto shapes = std::make_shared<NodeShapes>(*shaped->nodeShapes());
  shapes->of.pop_back();
  fewer.shapes = shapes;
  const auto mismatched = std::make_shared<const ClusterSnapshot>(
      nodeStatesOf(shaped), std::vector<PodPtr>{}, shaped->quotaConfig(), 1, fewer);
  EXPECT_EQ(mismatched->nodeShapes(), nullptr);
}

}  // namespace
}  // namespace gpufair::policy
