// Scoring once per node shape (src/policy/score_memo.h): the fgd family scores a list of nodes
// exactly as it scores each node alone, on random clusters full of look-alike nodes, and
// scoreDistinct really computes one score per shape.
#include "score_memo.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/fgdm_scorer.h"
#include "gpufair/policy/scorer.h"

#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::policy {
namespace {

using testing::MakeNode;
using testing::MakePod;

PodShape shapeOf(int gpus, MilliGpu share, std::vector<std::string> models = {},
                 std::int64_t cpuMilli = 0) {
  PodShape s;
  s.cpuMilli = cpuMilli;
  s.gpuCount = gpus;
  s.gpuShare = share;
  s.gpuModels = std::move(models);
  return s;
}

// A cluster of few kinds of nodes (8 or 4 GPUs, two models, CPU known or not) with random pods on
// them (whole GPUs, shares on a given GPU, CPU and memory), so many nodes look alike and some
// differ in one detail only.
SnapshotPtr randomCluster(std::mt19937& rng, FitOptions fit) {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  const int count = 60;
  for (int i = 0; i < count; ++i) {
    const std::string name = "n" + std::to_string(i);
    MakeNode node = MakeNode(name).gpus(rng() % 3 == 0 ? 4 : 8).model(rng() % 2 ? "A100" : "V100");
    if (rng() % 4 != 0) node.cpu(64).memGi(256);
    nodes.push_back(node);
    const int placed = static_cast<int>(rng() % 4);
    for (int p = 0; p < placed; ++p) {
      MakePod pod = MakePod("team", name + "-p" + std::to_string(p));
      switch (rng() % 4) {
        case 0:
          pod.gpus(1);
          break;
        case 1:
          pod.gpus(2);
          break;
        case 2:
          pod.share(0.5).gpuIndex(static_cast<int>(rng() % 4));
          break;
        default:
          pod.gpus(0);
          break;
      }
      if (rng() % 3 == 0) pod.cpu(8).memGi(32);
      pods.push_back(pod.on(name));
    }
  }
  SnapshotOptions options;
  options.fit = fit;
  options.workload =
      // The GPU shapes ask CPU, so fgdm's CPU-stranding ties (which read each node's free CPU,
      // measured or not) are on and must tell nodes apart by it.
      std::make_shared<const Workload>(std::vector<WeightedShape>{{shapeOf(1, 0, {}, 8000), 0.5},
                                                                  {shapeOf(2, 0, {}, 4000), 0.2},
                                                                  {shapeOf(0, 500), 0.2},
                                                                  {shapeOf(4, 0, {"A100"}), 0.1}});
  return testing::snapshotOf(nodes, std::move(pods), {}, std::move(options));
}

SnapshotOptions measuring(FitOptions fit) {
  SnapshotOptions options;
  options.fit = fit;
  return options;
}

std::vector<const NodeState*> fitting(const ClusterSnapshot& snap, const Pod& pod) {
  std::vector<const NodeState*> out;
  for (const auto& n : snap.nodes()) {
    if (nodeFits(*n, pod, snap.fitOptions())) out.push_back(n);
  }
  return out;
}

TEST(ScoreMemo, TheFgdScorersScoreAListExactlyAsEachNodeAlone) {
  std::vector<std::pair<std::string, ScorerPtr>> scorers;
  for (const char* name : {"fgd", "fgdplus", "fgdm"}) scorers.emplace_back(name, makeScorer(name));
  FgdmTuning bestFitTies;
  bestFitTies.bestFitTies = true;
  scorers.emplace_back("fgdm best-fit ties", makeFgdmScorer(nullptr, bestFitTies));
  const std::vector<Pod> pods = {
      MakePod("team", "one").gpus(1),         MakePod("team", "two").gpus(2).cpu(4),
      MakePod("team", "half").share(0.5),     MakePod("team", "a100").gpus(1).models({"A100"}),
      MakePod("team", "cpu").gpus(0).cpu(16),
  };
  const FitOptions fits[] = {{}, {false, true}, {true, false}};
  int compared = 0;
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    for (const FitOptions& fit : fits) {
      const SnapshotPtr snap = randomCluster(rng, fit);
      for (const Pod& pod : pods) {
        const std::vector<const NodeState*> nodes = fitting(*snap, pod);
        for (const auto& [name, scorer] : scorers) {
          std::vector<double> together(nodes.size());
          scorer->score(*snap, pod, nodes, together);
          for (std::size_t i = 0; i < nodes.size(); ++i) {
            double alone = 0;
            scorer->score(*snap, pod, std::span(&nodes[i], 1), std::span(&alone, 1));
            ASSERT_EQ(together[i], alone) << name << ", seed " << seed << ", pod " << pod.name
                                          << ", node " << nodes[i]->name();
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

TEST(ScoreMemo, OneScorePerShapeAndLookAlikesShareIt) {
  // n1, n2, n4 alike (one whole GPU used); n3 has the same GPUs used but less CPU free; n5 a
  // share on GPU 0 instead of a whole GPU; n6 another model.
  const SnapshotPtr snap = testing::snapshotOf(
      {MakeNode("n1").gpus(8).cpu(64), MakeNode("n2").gpus(8).cpu(64),
       MakeNode("n3").gpus(8).cpu(64), MakeNode("n4").gpus(8).cpu(64),
       MakeNode("n5").gpus(8).cpu(64), MakeNode("n6").gpus(8).cpu(64).model("A100")},
      {MakePod("t", "a").gpus(1).on("n1"), MakePod("t", "b").gpus(1).on("n2"),
       MakePod("t", "c").gpus(1).cpu(2).on("n3"), MakePod("t", "d").gpus(1).on("n4"),
       MakePod("t", "e").share(0.5).gpuIndex(0).on("n5"), MakePod("t", "f").gpus(1).on("n6")},
      {}, measuring(FitOptions{false, true}));
  std::vector<const NodeState*> nodes;
  for (const auto& n : snap->nodes()) nodes.push_back(n);
  std::vector<std::string> scored;
  std::vector<double> out(nodes.size());
  detail::scoreDistinct(nodes, snap->fitOptions(), out, [&](const NodeState& n) {
    scored.push_back(n.name());
    return static_cast<double>(scored.size());
  });
  EXPECT_EQ(scored, (std::vector<std::string>{"n1", "n3", "n5", "n6"}));
  EXPECT_EQ(out, (std::vector<double>{1, 1, 2, 1, 3, 4}));
  // CPU is not part of the shape when the measure ignores it.
  scored.clear();
  detail::scoreDistinct(nodes, FitOptions{}, out, [&](const NodeState& n) {
    scored.push_back(n.name());
    return static_cast<double>(scored.size());
  });
  EXPECT_EQ(scored, (std::vector<std::string>{"n1", "n5", "n6"}));
}

TEST(ScoreMemo, ManyShapesGrowTheTable) {
  // 200 distinct shapes (CPU used differs on each node): every node scored once, in order.
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  for (int i = 0; i < 200; ++i) {
    const std::string name = "n" + std::to_string(1000 + i);
    nodes.push_back(MakeNode(name).gpus(8).cpu(512));
    pods.push_back(MakePod("t", "p" + std::to_string(i)).gpus(0).cpu(0.001 * (i + 1)).on(name));
  }
  const SnapshotPtr snap =
      testing::snapshotOf(nodes, std::move(pods), {}, measuring(FitOptions{false, true}));
  std::vector<const NodeState*> list;
  for (const auto& n : snap->nodes()) list.push_back(n);
  list.push_back(list.front());  // a repeat at the end finds its shape after the table grew
  std::vector<double> out(list.size());
  int calls = 0;
  detail::scoreDistinct(list, snap->fitOptions(), out,
                        [&](const NodeState&) { return static_cast<double>(++calls); });
  EXPECT_EQ(calls, 200);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], i + 1);
  EXPECT_EQ(out.back(), 1);
}

}  // namespace
}  // namespace gpufair::policy
