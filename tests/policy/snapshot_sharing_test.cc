// ClusterSnapshot built from the previous one and the changed nodes: the same snapshot as a full
// build, sharing what did not change, and never touching the previous one (snapshot.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/policy/snapshot.h"

#include "testing/builders.h"

namespace gpufair::policy {
namespace {

using testing::gpus;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

// gpuNodeUse() as a walk over the nodes computes it.
GpuNodeUse walkGpuNodeUse(const ClusterSnapshot& s) {
  GpuNodeUse use;
  for (const NodeState* n : s.nodes()) {
    if (!n->node().takesNewPods() || n->allocatable() <= 0) continue;
    use.cpu += n->node().cpuMilli;
    use.cpuUsed += std::min(n->cpuUsed(), n->node().cpuMilli);
    use.gpu += n->allocatable();
    use.gpuUsed += std::min(n->used(), n->allocatable());
  }
  return use;
}

// modelGpus() as a walk over the nodes computes it.
std::string walkModelGpus(const ClusterSnapshot& s) {
  std::map<std::string, ModelGpus> byModel;
  for (const NodeState* n : s.nodes()) {
    if (!n->node().takesNewPods() || n->allocatable() <= 0) continue;
    ModelGpus& m = byModel[n->node().gpuModel];
    m.nodes += 1;
    m.free += n->free();
    m.allocatable += n->allocatable();
  }
  std::ostringstream out;
  for (const auto& entry : byModel) {
    const ModelGpus& m = entry.second;
    out << entry.first << ' ' << m.nodes << ' ' << m.free << '/' << m.allocatable << '\n';
  }
  return out.str();
}

std::string keptModelGpus(const ClusterSnapshot& s) {
  std::ostringstream out;
  for (const ModelGpus& m : s.modelGpus()) {
    out << m.model << ' ' << m.nodes << ' ' << m.free << '/' << m.allocatable << '\n';
  }
  return out.str();
}

// Everything a reader can see of a snapshot, as text: two snapshots that print the same answer
// every question the same.
std::string describe(const ClusterSnapshot& s) {
  std::ostringstream out;
  for (const ModelGpus& m : s.modelGpus()) {
    out << "model " << m.model << ' ' << m.nodes << ' ' << m.free << '/' << m.allocatable << '\n';
  }
  const GpuNodeUse& use = s.gpuNodeUse();
  out << "use=" << use.cpu << '/' << use.cpuUsed << '/' << use.gpu << '/' << use.gpuUsed << '\n';
  out << "cap=" << s.capacity() << " alloc=" << s.allocated() << " free=" << s.free()
      << " block=" << s.largestFreeBlock() << " max=" << s.maxNodeGpus() << '/' << s.maxNodeCpu()
      << '/' << s.maxNodeMemory() << " pending=" << s.pending().size() << '\n';
  for (int g = 0; g <= 9; ++g) out << s.nodesWithFree(gpus(g)) << ' ';
  // Every free amount a node has, and just above it (fractional amounts too).
  std::vector<MilliGpu> frees;
  for (const NodeState* n : s.nodes()) frees.push_back(n->free());
  std::sort(frees.begin(), frees.end());
  for (MilliGpu f : frees)
    out << f << ':' << s.nodesWithFree(f) << '/' << s.nodesWithFree(f + 1) << ' ';
  out << '\n';
  for (std::size_t i = 0; i < s.nodes().size(); ++i) {
    const NodeState& n = *s.nodes()[i];
    out << n.name() << " used=" << n.used() << " at=" << s.nodeIndex(n.name())
        << " found=" << (s.findNode(n.name()) == &n) << '\n';
  }
  out << "missing=" << s.nodeIndex("missing") << '\n';
  for (const auto& q : s.queues()) {
    out << q.quota.name << ' ' << q.allocated << ' ' << q.overQuota << ' ' << q.pending << ' '
        << q.pendingPods << ' ' << q.runningPods << ' ' << q.reservedAhead << ' ' << q.fairShare
        << ' ' << q.parentIndex << '\n';
  }
  for (const auto& r : s.reservations()) out << r.node << ' ' << r.holder << ' ' << r.gpus << '\n';
  for (const auto& g : s.gangs()) {
    out << g.key << ' ' << g.size << ' ' << g.placed << ' ' << g.placedGpus << ' ' << g.reserved;
    for (const auto& p : g.pending) out << ' ' << p->uid;
    out << '\n';
  }
  return out.str();
}

// A small cluster changed step by step at random, kept as the state layer keeps it: node states
// rebuilt only for the nodes a step changes, the pending list replaced only when it changes.
class Cluster {
 public:
  Cluster() {
    quota_.queues = {MakeQueue("team-a").deserved(8), MakeQueue("team-b").deserved(4)};
    quota_.queues[1].parent = "team-a";
    for (int i = 0; i < 10; ++i) {
      // (One node without GPUs: it counts in no GPU-node sum.)
      nodes_.push_back(MakeNode("n" + std::to_string(i))
                           .gpus(i == 7       ? 0
                                 : i % 3 == 0 ? 4
                                              : 8)
                           .cpu(32)
                           .model(i % 2 ? "T4" : "V100"));
    }
    // Enough pending pods for several chunks, so a change shares the chunks it does not touch.
    PendingPods waiting;
    for (int i = 0; i < 200; ++i) {
      waiting.insert(waiting.positionOf(waiting.size()),
                     resolve(MakePod("team-a", "q" + std::to_string(i)).gpus(1 + i % 2)));
    }
    pending_ = std::make_shared<const PendingPods>(std::move(waiting));
    for (std::size_t i = 0; i < nodes_.size(); ++i) states_.push_back(stateOf(i));
  }

  SnapshotPtr full() const {
    return std::make_shared<const ClusterSnapshot>(
        states_, std::vector<PodPtr>(pending_->begin(), pending_->end()), quota_, generation_);
  }
  SnapshotPtr next(const ClusterSnapshot& previous, const std::vector<std::size_t>& changed) {
    return std::make_shared<const ClusterSnapshot>(&previous, states_, changed, pending_, quota_,
                                                   generation_, SnapshotOptions{});
  }

  // One random change; returns the nodes it rebuilt (and says whether pending changed).
  std::vector<std::size_t> step(std::mt19937& rng, bool& pendingChanged) {
    ++generation_;
    pendingChanged = false;
    const std::size_t n = rng() % nodes_.size();
    std::vector<std::size_t> changed = {n};
    switch (rng() % 7) {
      case 0: {  // a pod bound (some borrowed, some gang members)
        auto pod = MakePod(rng() % 2 ? "team-a" : "team-b", "p" + std::to_string(seq_++))
                       .gpus(1 + rng() % 2)
                       .cpu(static_cast<double>(rng() % 24))  // sometimes more than the node has
                       .on(nodes_[n].name);
        if (rng() % 3 == 0) pod.overQuota();
        if (rng() % 3 == 0) pod.gang("g" + std::to_string(rng() % 2), 3);
        if (rng() % 4 == 0) pod.share(rng() % 2 ? 0.5 : 0.25);  // fractional free amounts
        pods_[n].push_back(resolve(pod));
        break;
      }
      case 1:  // a pod gone
        if (!pods_[n].empty()) pods_[n].erase(pods_[n].begin() + rng() % pods_[n].size());
        break;
      case 2:
      case 3: {  // a pending pod arrives, or one leaves; no node changes
        changed.clear();
        PendingPods list = *pending_;  // the pod cache's way: edit a copy, publish it
        if (rng() % 2 == 0 || list.empty()) {
          auto pod = MakePod("team-b", "w" + std::to_string(seq_++)).gpus(1);
          if (rng() % 2 == 0) pod.gang("g" + std::to_string(rng() % 2), 3);
          list.insert(list.positionOf(rng() % (list.size() + 1)), resolve(pod));
        } else {
          list.erase(list.positionOf(rng() % list.size()));
        }
        pending_ = std::make_shared<const PendingPods>(std::move(list));
        pendingChanged = true;
        break;
      }
      case 4:  // a reservation made or dropped
        if (held_[n].empty()) {
          const std::string holder = rng() % 2 ? "gang:team-b/g0" : "uid-x";
          held_[n].push_back({nodes_[n].name, gpus(1), holder, "team-b", "test", ""});
        } else {
          held_[n].clear();
        }
        break;
      case 5:  // resized or cordoned
        if (rng() % 2) {
          nodes_[n] = MakeNode(nodes_[n].name).gpus(rng() % 2 ? 4 : 16).cpu(8 + rng() % 64);
        } else {
          nodes_[n].unschedulable = !nodes_[n].unschedulable;
        }
        break;
      default:  // nothing
        changed.clear();
    }
    for (std::size_t i : changed) states_[i] = stateOf(i);
    return changed;
  }

 private:
  PodPtr resolve(Pod pod) {
    pod.queue = resolveQueue(quota_, pod.ns, pod.labels);
    return std::make_shared<const Pod>(std::move(pod));
  }
  NodeStatePtr stateOf(std::size_t i) {
    return std::make_shared<const NodeState>(nodes_[i], pods_[i], generation_, held_[i]);
  }

  QuotaConfig quota_;
  std::vector<Node> nodes_;
  std::map<std::size_t, std::vector<PodPtr>> pods_;
  std::map<std::size_t, std::vector<Reservation>> held_;
  std::shared_ptr<const PendingPods> pending_;
  std::vector<NodeStatePtr> states_;
  std::uint64_t generation_ = 1;
  int seq_ = 0;
};

TEST(SnapshotSharing, TheNextSnapshotEqualsAFullBuildAndLeavesThePreviousUnchanged) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    Cluster cluster;
    SnapshotPtr current = cluster.full();
    const SnapshotPtr first = current;
    const std::string firstSeen = describe(*first);
    for (int i = 0; i < 300; ++i) {
      bool pendingChanged = false;
      const std::vector<std::size_t> changed = cluster.step(rng, pendingChanged);
      SnapshotPtr next = cluster.next(*current, changed);
      ASSERT_EQ(describe(*next), describe(*cluster.full())) << "step " << i;
      const GpuNodeUse walked = walkGpuNodeUse(*next);
      const GpuNodeUse& kept = next->gpuNodeUse();
      ASSERT_EQ(std::tie(kept.cpu, kept.cpuUsed, kept.gpu, kept.gpuUsed),
                std::tie(walked.cpu, walked.cpuUsed, walked.gpu, walked.gpuUsed))
          << "step " << i;
      ASSERT_EQ(keptModelGpus(*next), walkModelGpus(*next)) << "step " << i;
      EXPECT_TRUE(next->sharesNodeIndexWith(*current));
      // No node changed (a pending pod came or went, or nothing): the node table is previous's.
      EXPECT_EQ(next->sharesNodeTableWith(*current), changed.empty()) << "step " << i;
      if (!pendingChanged) {
        // (The first snapshot is a full build with a list of its own.)
        if (i > 0) {
          EXPECT_TRUE(next->sharesPendingWith(*current)) << "pending shared";
        }
        EXPECT_EQ(next->findQueue("team-b")->pendingPods,
                  current->findQueue("team-b")->pendingPods);
      }
      if (changed.empty() && !current->reservations().empty()) {
        EXPECT_EQ(next->reservations().data(), current->reservations().data());
      }
      current = std::move(next);
    }
    EXPECT_EQ(describe(*first), firstSeen) << "a reader's snapshot never changes";
  }
}

TEST(SnapshotSharing, NodesThatDoNotMatchThePreviousSnapshotAreBuiltInFull) {
  const auto a = std::make_shared<const NodeState>(MakeNode("a").gpus(8), std::vector<PodPtr>{}, 1);
  const auto b = std::make_shared<const NodeState>(MakeNode("b").gpus(4), std::vector<PodPtr>{}, 1);
  const ClusterSnapshot previous({a}, {}, QuotaConfig{}, 1);
  const std::vector<std::size_t> changed = {0};
  // Another node count, then another name at a changed index, then an index out of range.
  const ClusterSnapshot more(&previous, std::vector<NodeStatePtr>{a, b}, changed, nullptr,
                             QuotaConfig{}, 2, {});
  EXPECT_FALSE(more.sharesNodeIndexWith(previous));
  EXPECT_EQ(more.capacity(), gpus(12));
  EXPECT_EQ(more.nodeIndex("b"), 1);
  const ClusterSnapshot renamed(&previous, std::vector<NodeStatePtr>{b}, changed, nullptr,
                                QuotaConfig{}, 2, {});
  EXPECT_FALSE(renamed.sharesNodeIndexWith(previous));
  EXPECT_EQ(renamed.nodeIndex("a"), -1);
  EXPECT_EQ(renamed.capacity(), gpus(4));
  const std::vector<std::size_t> outOfRange = {3};
  const ClusterSnapshot wrong(&previous, std::vector<NodeStatePtr>{a}, outOfRange, nullptr,
                              QuotaConfig{}, 2, {});
  EXPECT_FALSE(wrong.sharesNodeIndexWith(previous));
  EXPECT_EQ(wrong.capacity(), gpus(8));
  EXPECT_TRUE(wrong.pending().empty());
}

// The snapshot owns its nodes (in chunks shared with the snapshot before it): they outlive the
// caller's list and the previous snapshot, and a change replaces nodes only in the new snapshot.
TEST(SnapshotSharing, ASnapshotOwnsItsNodesWhenTheListAndThePreviousSnapshotAreGone) {
  auto node = [](int i, double gpuCount, std::uint64_t generation) {
    char name[8];
    std::snprintf(name, sizeof name, "n%03d", i);
    return std::make_shared<const NodeState>(MakeNode(name).gpus(gpuCount), std::vector<PodPtr>{},
                                             generation);
  };
  std::vector<NodeStatePtr> states;
  for (int i = 0; i < 150; ++i) states.push_back(node(i, 8, 1));
  SnapshotPtr first =
      std::make_shared<const ClusterSnapshot>(states, std::vector<PodPtr>{}, QuotaConfig{}, 1);
  states[3] = node(3, 4, 2);
  states[130] = node(130, 2, 2);
  const std::vector<std::size_t> changed = {130, 3};  // in two chunks, in any order
  const SnapshotPtr second = std::make_shared<const ClusterSnapshot>(
      first.get(), states, changed, nullptr, QuotaConfig{}, 2, SnapshotOptions{});
  states.clear();
  ASSERT_TRUE(second->sharesNodeIndexWith(*first));
  EXPECT_EQ(first->nodes()[3]->allocatable(), gpus(8));
  EXPECT_EQ(first->nodes()[130]->allocatable(), gpus(8));
  EXPECT_EQ(first->capacity(), gpus(150 * 8));
  first.reset();
  ASSERT_EQ(second->nodes().size(), 150u);
  MilliGpu sum = 0;
  for (std::size_t i = 0; i < second->nodes().size(); ++i) {
    const NodeState& n = *second->nodes()[i];
    EXPECT_EQ(second->nodeIndex(n.name()), static_cast<std::ptrdiff_t>(i));
    EXPECT_EQ(n.generation(), i == 3 || i == 130 ? 2u : 1u) << n.name();
    sum += n.allocatable();
  }
  EXPECT_EQ(second->nodes()[3]->allocatable(), gpus(4));
  EXPECT_EQ(second->nodes()[130]->allocatable(), gpus(2));
  EXPECT_EQ(sum, gpus(148 * 8 + 6));
  EXPECT_EQ(second->capacity(), sum);
}

// The fair shares are taken from the previous snapshot only while their inputs are the same: a
// quota change under the same queue names computes them again, as a full build does.
TEST(SnapshotSharing, FairSharesFollowTheQuotaUnderTheSameQueueNames) {
  const std::vector<NodeStatePtr> nodes = {
      std::make_shared<const NodeState>(MakeNode("a").gpus(8), std::vector<PodPtr>{}, 1),
      std::make_shared<const NodeState>(MakeNode("b").gpus(8), std::vector<PodPtr>{}, 1)};
  std::vector<PodPtr> pending;
  for (const char* queue : {"team-a", "team-b"}) {
    Pod pod = MakePod(queue, std::string("p-") + queue).gpus(16);
    pod.queue = queue;
    pending.push_back(std::make_shared<const Pod>(std::move(pod)));
  }
  QuotaConfig before;
  before.queues = {MakeQueue("team-a").deserved(8), MakeQueue("team-b").deserved(0)};
  QuotaConfig after;
  after.queues = {MakeQueue("team-a").deserved(2), MakeQueue("team-b").deserved(10)};
  auto shares = [](const ClusterSnapshot& s) {
    std::vector<MilliGpu> out;
    for (const auto& q : s.queues()) out.push_back(q.fairShare);
    return out;
  };
  const ClusterSnapshot first(nodes, pending, before, 1);
  const auto list = std::make_shared<const PendingPods>(std::span<const PodPtr>(pending));
  const std::vector<std::size_t> none;
  const ClusterSnapshot same(&first, nodes, none, list, before, 2, {});
  const ClusterSnapshot changed(&first, nodes, none, list, after, 2, {});
  EXPECT_EQ(shares(same), shares(first));
  EXPECT_EQ(shares(changed), shares(ClusterSnapshot(nodes, pending, after, 2)));
  EXPECT_NE(shares(changed), shares(first));  // the case tells the two apart
  EXPECT_EQ(shares(first)[0], gpus(12));      // 8 deserved + half of the 8 idle
  EXPECT_EQ(shares(changed)[1], gpus(12));
}

}  // namespace
}  // namespace gpufair::policy
