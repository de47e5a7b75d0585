// SnapshotBuilder: only dirty nodes are rebuilt, clean ones are shared with the previous snapshot,
// generations move only when something changed (see snapshot_builder.h).
#include "gpufair/state/snapshot_builder.h"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::gpus;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

class SnapshotBuilderTest : public ::testing::Test {
 public:  // the cases below change it through a reference
  SnapshotBuilderTest() {
    quota_.queues = {MakeQueue("team-a").deserved(8)};
    for (const char* n : {"n1", "n2", "n3"}) builder_.upsertNode(MakeNode(n).gpus(4));
  }
  policy::SnapshotPtr build() { return builder_.build(cache_, book_, quota_); }
  void bind(const std::string& name, const std::string& node, double gpuCount) {
    cache_.upsert(MakePod("team-a", name).gpus(gpuCount).on(node), now_, quota_);
  }

  QuotaConfig quota_;
  SnapshotBuilder builder_{SnapshotBuilderOptions{{}, 7, {}, kWorkloadRepublishDistance}};
  PodCache cache_{builder_.dirty()};
  ReservationBook book_{builder_.dirty()};
  Timestamp now_ = testing::ManualClock().now();
};

TEST_F(SnapshotBuilderTest, NothingChangedIsTheSameSnapshot) {
  const auto first = build();
  EXPECT_EQ(first->nodes().size(), 3u);
  EXPECT_EQ(first->seed(), 7u);
  EXPECT_TRUE(builder_.isCurrent(first));
  EXPECT_EQ(build(), first);
  EXPECT_EQ(builder_.generation(), first->generation());
  bind("p", "n1", 1);
  EXPECT_FALSE(builder_.isCurrent(first));  // dirty now
  const auto second = build();
  EXPECT_FALSE(builder_.isCurrent(first));  // no longer the last built
  EXPECT_TRUE(builder_.isCurrent(second));
  EXPECT_FALSE(builder_.isCurrent(nullptr));
}

// Which NodeStates a change rebuilds; every other one is the previous snapshot's.
TEST_F(SnapshotBuilderTest, OnlyDirtyNodesAreRebuilt) {
  struct Case {
    const char* name;
    std::function<void(SnapshotBuilderTest&)> change;
    std::vector<std::string> rebuilt;
  };
  const std::vector<Case> cases = {
      {"a pod bound to n2", [](auto& t) { t.bind("a", "n2", 1); }, {"n2"}},
      {"a pod moved from n2 to n3", [](auto& t) { t.bind("a", "n3", 1); }, {"n2", "n3"}},
      {"a pending pod",
       [](auto& t) { t.cache_.notePending(MakePod("team-a", "w").gpus(1), t.now_, t.quota_); },
       {}},
      {"a reservation on n1",
       [](auto& t) {
         t.book_.reserve({"n1", gpus(1), "uid-x", "team-a", "reclaim", ""}, t.now_ + 60s);
       },
       {"n1"}},
      {"a node relabelled", [](auto& t) { t.builder_.upsertNode(MakeNode("n3").gpus(8)); }, {"n3"}},
      {"nodes replaced",
       [](auto& t) {
         t.builder_.replaceNodes(
             {MakeNode("n1").gpus(4), MakeNode("n2").gpus(4), MakeNode("n3").gpus(8)});
       },
       {"n1", "n2", "n3"}},
      {"the quota config", [](auto& t) { t.cache_.requeue(t.quota_); }, {"n1", "n2", "n3"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto before = build();
    c.change(*this);
    const auto after = build();
    EXPECT_GT(after->generation(), before->generation());
    for (const auto& node : before->nodes()) {
      const bool rebuilt =
          std::find(c.rebuilt.begin(), c.rebuilt.end(), node->name()) != c.rebuilt.end();
      const policy::NodeState* now = after->findNode(node->name());
      ASSERT_NE(now, nullptr);
      EXPECT_EQ(now != node, rebuilt) << node->name();
      EXPECT_EQ(now->generation(), rebuilt ? after->generation() : node->generation());
    }
  }
}

// Every snapshot carries its nodes' shapes (node_shape.h): equal ids exactly for nodes that look
// alike, after binds, removals, reservations, node changes and node additions in any order.
TEST_F(SnapshotBuilderTest, EverySnapshotNumbersItsNodesShapes) {
  std::mt19937 rng(3);
  int pods = 0;
  for (int step = 0; step < 300; ++step) {
    const std::string node = "n" + std::to_string(1 + rng() % 6);
    switch (rng() % 6) {
      case 0:
      case 1:
        bind("p" + std::to_string(pods++), node, static_cast<double>(1 + rng() % 2));
        break;
      case 2:
        if (pods > 0) cache_.remove("uid-team-a-p" + std::to_string(rng() % pods));
        break;
      case 3:
        book_.reserve({node, gpus(1), "uid-x" + std::to_string(step), "team-a", "reclaim", ""},
                      now_ + 60s);
        break;
      case 4:
        builder_.upsertNode(MakeNode(node).gpus(rng() % 2 ? 4 : 8));
        break;
      default:
        book_.release("uid-x" + std::to_string(rng() % (step + 1)));
    }
    const auto snapshot = build();
    const policy::NodeShapes* shapes = snapshot->nodeShapes();
    ASSERT_NE(shapes, nullptr) << step;
    const auto nodes = snapshot->nodes();
    for (std::size_t a = 0; a < nodes.size(); ++a) {
      EXPECT_TRUE(shapes->of[a] < shapes->count || shapes->of[a] == policy::kOwnShape);
      EXPECT_EQ(shapes->of[a] == policy::kOwnShape, !nodes[a]->reservations().empty());
      for (std::size_t b = 0; b < nodes.size(); ++b) {
        const bool sameId = shapes->of[a] != policy::kOwnShape && shapes->of[a] == shapes->of[b];
        EXPECT_EQ(sameId, policy::sameNodeShape(*nodes[a], *nodes[b]))
            << "step " << step << ": " << nodes[a]->name() << " " << nodes[b]->name();
      }
    }
  }
}

TEST_F(SnapshotBuilderTest, PendingPodsAndDeletedNodesShowInTheNextSnapshot) {
  cache_.notePending(MakePod("team-a", "w").gpus(2), now_, quota_);
  bind("p", "n1", 3);
  builder_.deleteNode("n2");
  builder_.deleteNode("ghost");  // unknown: no change
  const auto snap = build();
  ASSERT_EQ(snap->pending().size(), 1u);
  EXPECT_EQ(snap->findQueue("team-a")->pending, gpus(2));
  EXPECT_EQ(snap->findNode("n2"), nullptr);
  EXPECT_EQ(snap->findNode("n1")->used(), gpus(3));
  builder_.deleteNode("ghost");
  EXPECT_EQ(build(), snap);
}

TEST_F(SnapshotBuilderTest, AssumedPodsArePublishedAsProvisional) {
  cache_.notePending(MakePod("team-a", "p").gpus(1), now_, quota_);
  auto placed = std::make_shared<policy::Pod>(*cache_.findPod("uid-team-a-p"));
  placed->nodeName = "n1";
  cache_.assume(placed, now_);
  bind("q", "n2", 1);
  auto snap = build();
  EXPECT_TRUE(snap->isProvisional("uid-team-a-p"));
  EXPECT_FALSE(snap->isProvisional("uid-team-a-q"));
  EXPECT_EQ(snap->findNode("n1")->used(), gpus(1));  // provisional pods hold GPUs as any other
  const policy::NodeState* assumedOn = snap->findNode("n1");
  const auto assumed = snap;
  cache_.confirm("uid-team-a-p");
  snap = build();
  EXPECT_FALSE(snap->isProvisional("uid-team-a-p"));
  // Only the provisional list changed: the new snapshot takes the node table and the node shapes
  // of the last one whole, not a copy.
  EXPECT_NE(snap, assumed);
  EXPECT_TRUE(snap->sharesNodeTableWith(*assumed));
  ASSERT_NE(snap->nodeShapes(), nullptr);
  EXPECT_EQ(snap->nodeShapes(), assumed->nodeShapes());
  EXPECT_EQ(snap->findNode("n1")->used(), gpus(1));
  // A confirmed bind changes no node: the node state is the one built when the pod was assumed.
  EXPECT_EQ(snap->findNode("n1"), assumedOn);
  EXPECT_EQ(snap->findNode("n1")->pods().size(), 1u);
  // The watch showing the pod bound there after the confirm changes nothing either, as before.
  bind("p", "n1", 1);
  EXPECT_FALSE(build()->isProvisional("uid-team-a-p"));
}

TEST_F(SnapshotBuilderTest, TheWorkloadIsLearnedUnlessFixed) {
  const auto empty = build();
  ASSERT_NE(empty->workload(), nullptr);
  EXPECT_TRUE(empty->workload()->empty());
  builder_.observe(MakePod("team-a", "p").gpus(2));
  builder_.observe(MakePod("team-a", "cpu-only"));  // no GPUs: not a step
  const auto learned = build();
  EXPECT_NE(learned, empty);
  EXPECT_EQ(learned->nodes()[0], empty->nodes()[0]);  // only the workload changed
  ASSERT_EQ(learned->workload()->shapes().size(), 1u);

  auto fixed = std::make_shared<const policy::Workload>();
  builder_.setWorkload(fixed);
  EXPECT_EQ(build()->workload(), fixed);
  builder_.observe(MakePod("team-a", "r").gpus(1));
  EXPECT_EQ(build()->workload(), fixed);
  builder_.setWorkload(nullptr);
  EXPECT_EQ(build()->workload()->shapes().size(), 2u);  // learning went on meanwhile
}

// A build after a change shares with the last snapshot what the change left alone, and readers of
// an earlier snapshot never see a later change.
TEST_F(SnapshotBuilderTest, LaterBuildsShareUnchangedPartsAndNeverTouchEarlierSnapshots) {
  cache_.notePending(MakePod("team-a", "w").gpus(2), now_, quota_);
  bind("p", "n1", 1);
  const auto first = build();
  bind("q", "n2", 3);  // a node changes, pending does not
  const auto second = build();
  EXPECT_TRUE(second->sharesNodeIndexWith(*first));
  EXPECT_TRUE(second->sharesPendingWith(*first));
  EXPECT_EQ(second->findQueue("team-a")->allocated, gpus(4));
  cache_.notePending(MakePod("team-a", "v").gpus(1), now_, quota_);  // pending changes
  const auto third = build();
  EXPECT_TRUE(third->sharesNodeIndexWith(*second));
  EXPECT_FALSE(third->sharesPendingWith(*second));
  EXPECT_EQ(third->findQueue("team-a")->pending, gpus(3));
  builder_.upsertNode(MakeNode("n4").gpus(4));  // a new node: a new index
  const auto fourth = build();
  EXPECT_FALSE(fourth->sharesNodeIndexWith(*third));
  EXPECT_EQ(fourth->capacity(), gpus(16));
  // Every earlier snapshot still says what it said when built.
  EXPECT_EQ(first->pending().size(), 1u);
  EXPECT_EQ(first->findQueue("team-a")->allocated, gpus(1));
  EXPECT_EQ(first->findNode("n2")->used(), 0);
  EXPECT_EQ(second->pending().size(), 1u);
  EXPECT_EQ(second->findQueue("team-a")->pending, gpus(2));
  EXPECT_EQ(third->findNode("n4"), nullptr);
  EXPECT_EQ(third->capacity(), gpus(12));
}

// The learned workload is published again only once it moved more than workloadRepublishDistance
// (total variation) from the published one, so node fragmentation caches survive small moves.
TEST_F(SnapshotBuilderTest, TheLearnedWorkloadIsRepublishedOnlyWhenItMoved) {
  for (int i = 0; i < 100; ++i) builder_.observe(MakePod("team-a", "a").gpus(1));
  const auto first = build();
  ASSERT_EQ(first->workload()->shapes().size(), 1u);  // an empty one is always replaced
  builder_.observe(MakePod("team-a", "b").gpus(2));   // moves it by ~1/96 <= 0.02
  EXPECT_EQ(build(), first) << "nothing else changed: the same snapshot";
  bind("p", "n1", 1);
  const auto second = build();
  EXPECT_NE(second, first);
  EXPECT_EQ(second->workload(), first->workload());
  builder_.observe(MakePod("team-a", "b").gpus(2));  // now ~3/98 from the published one
  builder_.observe(MakePod("team-a", "b").gpus(2));
  const auto third = build();
  ASSERT_NE(third->workload(), first->workload());
  EXPECT_EQ(third->workload()->shapes().size(), 2u);

  // Distance 0: every new pod publishes (the behaviour before).
  SnapshotBuilder eager(SnapshotBuilderOptions{{}, 7, {}, 0.0});
  PodCache cache{eager.dirty()};
  ReservationBook book{eager.dirty()};
  for (int i = 0; i < 100; ++i) eager.observe(MakePod("team-a", "a").gpus(1));
  const auto before = eager.build(cache, book, quota_);
  eager.observe(MakePod("team-a", "b").gpus(2));
  EXPECT_NE(eager.build(cache, book, quota_)->workload(), before->workload());
}

// The learned workload after a known sequence of pods (decay 0.5 per pod counted), with CPU-only
// pods counted, memory left out of shapes and 80 % coverage published.
TEST(SnapshotBuilderLearning, HandComputedWorkloadAfterAKnownSequence) {
  WorkloadLearning learning;
  learning.decay = 0.5;
  learning.cpuOnlyPods = true;
  learning.ignoreMemory = true;
  learning.coverage = 0.8;
  SnapshotBuilder builder(SnapshotBuilderOptions{{}, 7, learning, kWorkloadRepublishDistance});
  QuotaConfig quota;
  PodCache cache(builder.dirty());
  ReservationBook book(builder.dirty());
  builder.observe(MakePod("a", "g1").gpus(1).cpu(4).memGi(16));  // G: 1
  builder.observe(MakePod("a", "c1").cpu(2));                    // G: 0.5, C: 1
  builder.observe(MakePod("a", "g2").gpus(1).cpu(4).memGi(32));  // same shape without memory
                                                                 // G: 1.25, C: 0.5
  builder.observe(MakePod("a", "s1").share(0.5).cpu(1));         // G: 0.625, C: 0.25, S: 1
  policy::Pod done = MakePod("a", "done").gpus(8).cpu(1);
  done.phase = policy::PodPhase::kSucceeded;
  builder.observe(done);  // finished: not counted, no decay step
  // Total 1.875; 80 % = 1.5: S (1) then G (1.625) cover it, C is left out.
  const auto workload = builder.build(cache, book, quota)->workload();
  ASSERT_NE(workload, nullptr);
  ASSERT_EQ(workload->shapes().size(), 2u);
  for (const auto& w : workload->shapes()) {
    EXPECT_EQ(w.shape.memoryBytes, 0);
    if (w.shape.isFractional()) {
      EXPECT_EQ(w.shape.gpuShare, 500);
      EXPECT_EQ(w.shape.cpuMilli, 1000);
      EXPECT_NEAR(w.weight, 1.0 / 1.625, 1e-12);
    } else {
      EXPECT_EQ(w.shape.gpuCount, 1);
      EXPECT_EQ(w.shape.cpuMilli, 4000);
      EXPECT_NEAR(w.weight, 0.625 / 1.625, 1e-12);
    }
  }
  // Coverage 1 publishes the CPU-only shape too: 0.25 of 1.875.
  learning.coverage = 1.0;
  SnapshotBuilder all(SnapshotBuilderOptions{{}, 7, learning, kWorkloadRepublishDistance});
  all.observe(MakePod("a", "g1").gpus(1).cpu(4).memGi(16));
  all.observe(MakePod("a", "c1").cpu(2));
  all.observe(MakePod("a", "g2").gpus(1).cpu(4).memGi(32));
  all.observe(MakePod("a", "s1").share(0.5).cpu(1));
  PodCache cache2(all.dirty());
  ReservationBook book2(all.dirty());
  const auto full = all.build(cache2, book2, quota)->workload();
  ASSERT_EQ(full->shapes().size(), 3u);
  for (const auto& w : full->shapes()) {
    if (w.shape.gpusUsed() == 0) {
      EXPECT_EQ(w.shape.cpuMilli, 2000);
      EXPECT_NEAR(w.weight, 0.25 / 1.875, 1e-12);
    }
  }
}

}  // namespace
}  // namespace gpufair::state
