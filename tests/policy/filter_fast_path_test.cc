// The /filter fast paths (candidate_positions.h) give the plain path's answers: CandidatePositions
// finds every name where the snapshot's index does, reusing the previous list's positions; filter
// with those positions answers as filter does; and rankFeasible ranks a filter answer from them
// in exactly rankCandidates' order over the feasible names. On random clusters and lists.
#include <algorithm>
#include <array>
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

struct RandomCluster {
  SnapshotPtr snapshot;
  std::vector<std::string> names;  // candidates: nodes in random order, some twice, some unknown
};

RandomCluster randomCluster(std::mt19937& rng, bool checkCpuMemory) {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<Reservation> reservations;
  RandomCluster out;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "n" + std::to_string(i);
    MakeNode node = MakeNode(name).gpus(rng() % 4 == 0 ? 4 : 8).cpu(32).memGi(128);
    if (rng() % 10 == 0) node.unschedulable();
    if (rng() % 3 == 0) node.model("A100");
    nodes.push_back(node);
    for (int p = static_cast<int>(rng() % 4); p > 0; --p) {
      MakePod pod =
          MakePod("team-a", name + "-" + std::to_string(p)).cpu(static_cast<double>(rng() % 12));
      if (rng() % 3 == 0) {
        pod.share(0.25 * static_cast<double>(1 + rng() % 3)).gpuIndex(static_cast<int>(rng() % 4));
      } else {
        pod.gpus(static_cast<double>(rng() % 3));
      }
      pods.push_back(pod.on(name));
    }
    if (rng() % 8 == 0) {
      const std::string holder = rng() % 2 ? "uid-team-b-p" : "uid-team-b-other";
      reservations.push_back({name, testing::gpus(2), holder, "team-b", "reclaim", ""});
    }
    out.names.push_back(name);
    if (rng() % 10 == 0) out.names.push_back(name);
  }
  out.names.push_back("ghost");
  std::shuffle(out.names.begin(), out.names.end(), rng);
  SnapshotOptions options;
  options.fit.checkCpuMemory = checkCpuMemory;
  out.snapshot =
      testing::snapshotOf(nodes, std::move(pods),
                          {MakeQueue("team-a").deserved(400), MakeQueue("team-b").deserved(400)},
                          std::move(options), reservations);
  return out;
}

TEST(RankFeasible, GivesRankCandidatesOrderOverTheFeasibleNames) {
  std::vector<Pod> pods = testing::filterEquivalencePods();
  pods.push_back(MakePod("team-b", "g").gpus(2).gang("train", 2));  // ranked by the plain path
  int ranked = 0;
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    for (bool checkCpuMemory : {false, true}) {
      const RandomCluster c = randomCluster(rng, checkCpuMemory);
      const std::vector<std::string_view> candidates(c.names.begin(), c.names.end());
      CandidatePositions resolver;
      const auto at = resolver.resolve(c.snapshot, candidates);
      for (const char* strategy : {"fgdm", "blockfit", "spread"}) {
        const ScorerPtr scorer = makeScorer(strategy);
        for (const Pod& p : pods) {
          const Pod pod = testing::resolved(*c.snapshot, p);
          const FilterResult result = filter(*c.snapshot, pod, candidates, at);
          ASSERT_EQ(testing::describeFilter(result),
                    testing::describeFilter(filter(*c.snapshot, pod, candidates)));
          for (std::size_t limit : {std::size_t{1}, std::size_t{3}, static_cast<std::size_t>(-1)}) {
            EXPECT_EQ(
                rankFeasible(*c.snapshot, pod, candidates, at, result.feasible, *scorer, limit),
                rankCandidates(*c.snapshot, pod, result.feasible, *scorer, limit))
                << "seed " << seed << ", " << strategy << ", pod " << pod.name << " " << pod.gpus
                << ", limit " << limit;
            ++ranked;
          }
        }
      }
    }
  }
  EXPECT_EQ(ranked, 30 * 2 * 3 * 7 * 3);
}

// A limit finds its first nodes in one pass (a few) or by a partial sort (many): either way the
// first `limit` of the whole order, reserved nodes, ties and the nodes that do not fit included.
TEST(RankCandidates, ALimitGivesTheFirstNodesOfTheWholeOrder) {
  std::vector<Pod> pods = testing::filterEquivalencePods();
  int compared = 0;
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const RandomCluster c = randomCluster(rng, seed % 2 == 0);
    const std::vector<std::string_view> candidates(c.names.begin(), c.names.end());
    for (const char* strategy : {"fgdm", "blockfit", "spread", "binpack"}) {
      const ScorerPtr scorer = makeScorer(strategy);
      for (const Pod& p : pods) {
        const Pod pod = testing::resolved(*c.snapshot, p);
        const std::vector<std::size_t> all = rankCandidates(*c.snapshot, pod, candidates, *scorer);
        ASSERT_EQ(all.size(), candidates.size());
        for (std::size_t limit = 1; limit <= candidates.size() + 1; ++limit) {
          const std::vector<std::size_t> first(
              all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(limit, all.size())));
          ASSERT_EQ(rankCandidates(*c.snapshot, pod, candidates, *scorer, limit), first)
              << "seed " << seed << ", " << strategy << ", pod " << pod.name << ", limit " << limit;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 20 * 4 * 6 * 40);
}

TEST(RankFeasible, NamesThatAreNotViewsOfTheCandidatesTakeThePlainPath) {
  auto snap = testing::snapshotOf({MakeNode("n1").gpus(8), MakeNode("n2").gpus(8)},
                                  {MakePod("team-a", "x").gpus(3).on("n2")},
                                  {MakeQueue("team-a").deserved(16)});
  const std::vector<std::string> names = {"n1", "n2"};
  const std::vector<std::string_view> candidates(names.begin(), names.end());
  CandidatePositions resolver;
  const auto at = resolver.resolve(snap, candidates);
  const std::vector<std::string> copies = {"n1", "n2"};
  const std::vector<std::string_view> feasible(copies.begin(), copies.end());
  const ScorerPtr scorer = makeScorer("fgdm");
  const Pod pod = testing::resolved(*snap, MakePod("team-a", "p").gpus(2));
  const auto plain = rankCandidates(*snap, pod, feasible, *scorer);
  EXPECT_EQ(rankFeasible(*snap, pod, candidates, at, feasible, *scorer), plain);
  EXPECT_EQ(rankFeasible(*snap, pod, candidates, at, candidates, *scorer), plain);
}

// The next list kube-scheduler might send: nodes dropped (they filled up), a few added back or
// new, one moved, an unknown name now and then; sometimes a list in another order altogether.
std::vector<std::string> nextList(std::mt19937& rng, std::vector<std::string> list,
                                  const std::vector<std::string>& all) {
  if (rng() % 20 == 0) {
    std::shuffle(list.begin(), list.end(), rng);
    return list;
  }
  for (int drops = static_cast<int>(rng() % 4); drops > 0 && !list.empty(); --drops) {
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(rng() % list.size()));
  }
  for (int adds = static_cast<int>(rng() % 3); adds > 0; --adds) {
    const std::string name =
        rng() % 5 == 0 ? "new-" + std::to_string(rng() % 7) : all[rng() % all.size()];
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(rng() % (list.size() + 1)), name);
  }
  if (list.size() > 1 && rng() % 4 == 0)
    std::swap(list[rng() % list.size()], list[rng() % list.size()]);
  return list;
}

// What /filter answers in best and top-N modes without the one pass: filter by name, then, when
// more than `keep` fit, the first `keep` of rankCandidates' order over the feasible names (all
// mode's ranking), kept in the candidates' order.
FilterResult plainRanked(const ClusterSnapshot& snapshot, const Pod& pod,
                         std::span<const std::string_view> candidates, const Scorer& scorer,
                         std::size_t keep) {
  FilterResult r = filter(snapshot, pod, candidates);
  if (!r.feasible.empty()) {  // a node answered: no reasons (filterRanked's contract)
    r.failed.clear();
    r.unresolvable.clear();
  }
  if (r.feasible.size() <= keep) return r;
  const std::vector<std::size_t> order = rankCandidates(snapshot, pod, r.feasible, scorer, keep);
  std::vector<std::string_view> kept;
  for (std::size_t i = 0; i < r.feasible.size(); ++i) {
    if (std::find(order.begin(), order.end(), i) != order.end()) kept.push_back(r.feasible[i]);
  }
  r.feasible = kept;
  return r;
}

// Random clusters (reclaim holds among them) and random NodeNames lists (unknown names,
// duplicates, infeasible and unschedulable nodes): filterRanked gives the plain path's answer,
// the pick, and every FailedNodes reason when no node fits, for gang members and pods fit leaves
// alone too.
TEST(FilterRanked, GivesThePlainFilterThenRankAnswer) {
  std::vector<Pod> pods = testing::filterEquivalencePods();
  pods.push_back(MakePod("team-b", "g").gpus(2).gang("train", 2));
  pods.push_back(MakePod("team-b", "none"));
  // 12 seeds: ~5 s under CI's -O0 ASan build (25 took ~10 s of CPU there and passed ctest's
  // 60 s timeout on a loaded machine only on its retry).
  constexpr std::uint32_t kSeeds = 12;
  int compared = 0;
  int narrowed = 0;
  for (std::uint32_t seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937 rng(seed);
    const RandomCluster c = randomCluster(rng, seed % 2 == 0);
    std::vector<std::string> list = c.names;
    CandidatePositions resolver;
    for (int round = 0; round < 4; ++round) {
      list = nextList(rng, list, c.names);
      if (round == 3) list.resize(std::min<std::size_t>(list.size(), 1 + rng() % 3));
      const std::vector<std::string_view> candidates(list.begin(), list.end());
      const auto at = resolver.resolve(c.snapshot, candidates);
      for (const char* strategy : {"fgdm", "fgd", "blockfit", "spread"}) {
        const ScorerPtr scorer = makeScorer(strategy);
        for (const Pod& p : pods) {
          const Pod pod = testing::resolved(*c.snapshot, p);
          for (std::size_t keep : {std::size_t{1}, std::size_t{3}, std::size_t{0}}) {
            const FilterResult fast = filterRanked(*c.snapshot, pod, candidates, at, *scorer, keep);
            const FilterResult plain =
                keep == 0 ? filter(*c.snapshot, pod, candidates)
                          : plainRanked(*c.snapshot, pod, candidates, *scorer, keep);
            ASSERT_EQ(testing::describeFilter(fast), testing::describeFilter(plain))
                << "seed " << seed << ", round " << round << ", " << strategy << ", pod "
                << pod.name << " " << pod.gpus << ", keep " << keep;
            ++compared;
            if (keep > 0 && filter(*c.snapshot, pod, candidates).feasible.size() > keep) {
              ++narrowed;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, int{kSeeds} * 4 * 4 * 8 * 3);
  EXPECT_GT(narrowed, compared / 4);  // most answers were narrowed, so the ranking was compared
}

// Names laid out as a parsed request body holds them: one buffer, a fixed gap between names (a
// 4-byte length and a terminator in simdjson's string buffer; here any bytes).
struct PackedNames {
  std::string buffer;
  std::vector<std::string_view> views;
};
PackedNames pack(const std::vector<std::string>& names, std::size_t gap, char filler) {
  PackedNames out;
  std::vector<std::size_t> at;
  for (const std::string& name : names) {
    out.buffer.append(gap, filler);
    at.push_back(out.buffer.size());
    out.buffer += name;
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    out.views.emplace_back(&out.buffer[at[i]], names[i].size());
  return out;
}

// A list in one stretch of memory like the last one is known by one comparison, and any
// difference is noticed: a byte, names split at other places over the same bytes, another gap.
// Random lists and layouts: the positions are always the index's.
TEST(CandidatePositions, ARepeatedListInOneStretchIsKnownAtOnceAndAChangedOneIsNoticed) {
  std::mt19937 rng(3);
  RandomCluster c = randomCluster(rng, false);
  const std::vector<std::string> names = {"n1", "n23", "n4", "n10", "n11"};
  CandidatePositions positions;
  auto expectIndexed = [&](const PackedNames& p, const char* what) {
    const auto found = positions.resolve(c.snapshot, p.views);
    ASSERT_EQ(found.size(), p.views.size()) << what;
    for (std::size_t i = 0; i < p.views.size(); ++i) {
      EXPECT_EQ(found[i], c.snapshot->nodeIndex(p.views[i])) << what << ": " << p.views[i];
    }
  };
  expectIndexed(pack(names, 5, 'x'), "first");
  EXPECT_FALSE(positions.sameStretch());
  expectIndexed(pack(names, 5, 'x'), "same list, another buffer");
  EXPECT_TRUE(positions.sameStretch());
  EXPECT_EQ(positions.lookedUp(), 0u);
  std::vector<std::string> changed = names;
  changed[3] = "n12";  // same length, one byte
  expectIndexed(pack(changed, 5, 'x'), "one byte");
  EXPECT_FALSE(positions.sameStretch());
  expectIndexed(pack(changed, 5, 'x'), "again");
  EXPECT_TRUE(positions.sameStretch());
  // The same bytes cut at other places, with the same gap, are not the same list.
  const PackedNames last = pack(changed, 1, '1');
  expectIndexed(last, "gap 1");
  PackedNames resplit;
  resplit.buffer = last.buffer;
  const std::string_view all(resplit.buffer);
  // last is "1n1" "1n23" "1n4" "1n12" "1n11" (gap byte '1'); the same bytes cut into as many
  // names of other lengths: "n11" "23" "n4" "n12" "n11".
  const std::size_t lengths[] = {3, 2, 2, 3, 3};  // were 2, 3, 2, 3, 3
  std::size_t at = 1;
  for (std::size_t len : lengths) {
    resplit.views.push_back(all.substr(at, len));
    at += len + 1;
  }
  ASSERT_EQ(at - 1, all.size());
  expectIndexed(resplit, "same bytes, other names");
  EXPECT_FALSE(positions.sameStretch());
  expectIndexed(pack(changed, 2, '1'), "other gap");
  EXPECT_FALSE(positions.sameStretch());
  expectIndexed(pack(changed, 20, '1'), "gap too wide for one stretch");
  expectIndexed(pack(changed, 20, '1'), "gap too wide, repeated");
  EXPECT_FALSE(positions.sameStretch());
  EXPECT_EQ(positions.lookedUp(), 0u) << "still found name by name";

  // Random lists, often repeated, in random layouts.
  std::vector<std::string> list = c.names;
  int known = 0;
  for (int request = 0; request < 400; ++request) {
    const std::size_t gap = std::array<std::size_t, 6>{5, 5, 5, 5, 0, 9}[rng() % 6];
    const char filler = rng() % 4 == 0 ? 'n' : '-';
    const PackedNames p = pack(list, gap, filler);
    const auto found = positions.resolve(c.snapshot, p.views);
    for (std::size_t i = 0; i < p.views.size(); ++i) {
      ASSERT_EQ(found[i], c.snapshot->nodeIndex(p.views[i])) << "request " << request;
    }
    known += positions.sameStretch() ? 1 : 0;
    if (rng() % 3 == 0) list = nextList(rng, std::move(list), c.names);
  }
  EXPECT_GT(known, 30);
}

// What a caller knows of a list (CandidateList): the id of the call just before gives that call's
// positions without comparing a name, a list `from` it takes its head and tail positions from it
// (while the snapshot shares its node index); any other id, or none, resolves as without one.
// Random lists (kept under one id for several calls, or edited under a new one whose true head and
// tail, or less, are given), snapshots that keep or replace the node index, stale `from` ids:
// the positions are always the index's.
TEST(CandidatePositions, WhatTheCallerKnowsOfTheListGivesItsPositions) {
  std::mt19937 rng(11);
  RandomCluster c = randomCluster(rng, false);
  std::vector<std::string> list = c.names;
  CandidatePositions positions;
  SnapshotPtr snap = c.snapshot;
  CandidateList known{1, 0, 0, 0};
  std::uint64_t lastId = 0;
  std::size_t lastSize = 0;
  int byId = 0;
  int byHeadAndTail = 0;
  for (int request = 0; request < 600; ++request) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 3) {
      const std::vector<std::string> before = list;
      list = nextList(rng, std::move(list), c.names);
      std::size_t head = 0;
      while (head < list.size() && head < before.size() && list[head] == before[head]) ++head;
      std::size_t tail = 0;
      while (tail < list.size() - head && tail < before.size() - head &&
             list[list.size() - 1 - tail] == before[before.size() - 1 - tail]) {
        ++tail;
      }
      // The last id (or, now and then, an older one), a true head and tail or less of them.
      const std::uint64_t from = rng() % 8 == 0 ? known.id - 1 : known.id;
      known = {known.id + 1, from, head - rng() % (head + 1) / 2, tail - rng() % (tail + 1) / 2};
    } else if (what == 3) {
      snap = randomCluster(rng, false).snapshot;  // another node index: the id is not enough
    } else if (what == 4) {
      // A change to one node: the next snapshot shares the node index.
      std::vector<NodeStatePtr> nodes;
      for (const NodeState* n : snap->nodes()) nodes.emplace_back(snap, n);
      const std::size_t at = rng() % nodes.size();
      nodes[at] = std::make_shared<const NodeState>(nodes[at]->node(), std::vector<PodPtr>{}, 2);
      const std::size_t changed[] = {at};
      snap = std::make_shared<const ClusterSnapshot>(snap.get(), std::move(nodes), changed, nullptr,
                                                     snap->quotaConfig(), snap->generation() + 1,
                                                     snap->options());
    }
    const CandidateList given = what == 5 ? CandidateList{} : known;  // sometimes nothing known
    // Each call's names in a buffer of their own: the id, not the memory, says they are the same.
    const std::vector<std::string> copy = list;
    const std::vector<std::string_view> candidates(copy.begin(), copy.end());
    const bool sharesIndex = what != 3;
    const auto found = positions.resolve(snap, candidates, given);
    ASSERT_EQ(found.size(), candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      ASSERT_EQ(found[i], snap->nodeIndex(candidates[i])) << "request " << request;
    }
    const bool sameId = given.id != 0 && given.id == lastId && sharesIndex;
    EXPECT_EQ(positions.sameId(), sameId) << "request " << request;
    EXPECT_EQ(positions.fromId(), !sameId && sharesIndex && given.id != 0 && given.from != 0 &&
                                      given.from == lastId && given.head + given.tail <= lastSize)
        << "request " << request;
    if (positions.sameId()) {
      EXPECT_EQ(positions.lookedUp(), 0u);
      ++byId;
    }
    if (positions.fromId()) {
      EXPECT_EQ(positions.lookedUp(), candidates.size() - given.head - given.tail);
      ++byHeadAndTail;
    }
    lastId = given.id;
    lastSize = candidates.size();
  }
  EXPECT_GT(byId, 200);
  EXPECT_GT(byHeadAndTail, 50);
}

TEST(CandidatePositions, FindsEveryNameWhereTheIndexDoesAndFiltersAlike) {
  const Pod pod = MakePod("team-b", "p").gpus(1);
  std::size_t lookedUp = 0;
  std::size_t resolved = 0;
  for (std::uint32_t seed = 1; seed <= 10; ++seed) {
    std::mt19937 rng(seed);
    RandomCluster c = randomCluster(rng, false);
    std::vector<std::string> list = c.names;
    CandidatePositions positions;
    SnapshotPtr snap = c.snapshot;
    for (int request = 0; request < 200; ++request) {
      const int what = static_cast<int>(rng() % 10);
      if (what == 0) {
        // A change to one node: the next snapshot shares the node index.
        std::vector<NodeStatePtr> nodes;  // the snapshot's nodes, kept alive by the snapshot
        for (const NodeState* n : snap->nodes()) nodes.emplace_back(snap, n);
        const std::size_t at = rng() % nodes.size();
        nodes[at] = std::make_shared<const NodeState>(nodes[at]->node(), std::vector<PodPtr>{}, 2);
        const std::size_t changed[] = {at};
        snap = std::make_shared<const ClusterSnapshot>(snap.get(), std::move(nodes), changed,
                                                       nullptr, snap->quotaConfig(),
                                                       snap->generation() + 1, snap->options());
      } else if (what == 1) {
        // Other node names (a new node joined): positions move, the index is a new one.
        RandomCluster other = randomCluster(rng, false);
        snap = other.snapshot;
      }
      const std::vector<std::string_view> candidates(list.begin(), list.end());
      const auto found = positions.resolve(snap, candidates);
      ASSERT_EQ(found.size(), candidates.size());
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        ASSERT_EQ(found[i], snap->nodeIndex(candidates[i]))
            << "seed " << seed << ", request " << request << ", " << candidates[i];
      }
      const Pod resolvedPod = testing::resolved(*snap, pod);
      ASSERT_EQ(testing::describeFilter(filter(*snap, resolvedPod, candidates, found)),
                testing::describeFilter(filter(*snap, resolvedPod, candidates)));
      lookedUp += positions.lookedUp();
      resolved += candidates.size();
      list = nextList(rng, std::move(list), c.names);
    }
  }
  // Most names were found from the list before (a tenth of the requests come with a new index,
  // a twentieth in a new order); a repeated list looks nothing up.
  EXPECT_LT(lookedUp * 3, resolved);
  RandomCluster c;
  std::mt19937 rng(7);
  c = randomCluster(rng, false);
  const std::vector<std::string_view> candidates(c.names.begin(), c.names.end());
  CandidatePositions positions;
  positions.resolve(c.snapshot, candidates);
  EXPECT_EQ(positions.lookedUp(), candidates.size());
  positions.resolve(c.snapshot, candidates);
  EXPECT_EQ(positions.lookedUp(), 0u);
}

}  // namespace
}  // namespace gpufair::policy
