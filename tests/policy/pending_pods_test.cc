// PendingPods (pending_pods.h): random edits give the same list as a plain vector edited alike,
// chunks stay bounded, a copy (a published version) never sees later edits and shares the chunks
// no edit touched, lowerBound finds what std::lower_bound finds, and pendingChange tells exactly
// what differs between two versions.
#include "gpufair/policy/pending_pods.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpufair::policy {
namespace {

PodPtr pod(int i) {
  Pod p;
  char uid[16];
  std::snprintf(uid, sizeof uid, "uid-%06d", i);
  p.uid = uid;
  p.name = uid;
  return std::make_shared<const Pod>(std::move(p));
}

std::vector<PodPtr> listOf(const PendingPods& pods) {
  return {pods.begin(), pods.end()};
}

// Pods by address, counted: what a list holds as a multiset.
std::map<const Pod*, int> counts(const std::vector<PodPtr>& pods) {
  std::map<const Pod*, int> out;
  for (const auto& p : pods) ++out[p.get()];
  return out;
}

void expectChunksBounded(const PendingPods& pods) {
  std::size_t total = 0;
  for (const auto& c : pods.chunks()) {
    ASSERT_FALSE(c->empty());
    ASSERT_LE(c->size(), 2 * PendingPods::kChunk);
    total += c->size();
  }
  ASSERT_EQ(total, pods.size());
  // Merging keeps the chunk count within a constant of size / kChunk.
  EXPECT_LE(pods.chunks().size(), 1 + 8 * pods.size() / PendingPods::kChunk + 1);
}

TEST(PendingPods, RandomEditsMatchAVectorAndEarlierVersionsNeverChange) {
  for (unsigned seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    PendingPods pods;
    std::vector<PodPtr> model;
    int next = 0;
    const int start = static_cast<int>(rng() % 700);
    for (int i = 0; i < start; ++i) model.push_back(pod(next++));
    pods = PendingPods(model);
    ASSERT_EQ(listOf(pods), model);
    struct Version {
      PendingPods pods;
      std::vector<PodPtr> seen;
    };
    std::vector<Version> versions;
    for (int step = 0; step < 1500; ++step) {
      const PendingPods before = pods;  // published
      std::size_t what = rng() % 7;
      if (model.empty()) what = 0;
      if (what < 3) {
        const std::size_t at = rng() % (model.size() + 1);
        const PodPtr p = pod(next++);
        pods.insert(pods.positionOf(at), p);
        model.insert(model.begin() + static_cast<std::ptrdiff_t>(at), p);
      } else if (what < 6) {
        const std::size_t at = rng() % model.size();
        pods.erase(pods.positionOf(at));
        model.erase(model.begin() + static_cast<std::ptrdiff_t>(at));
      } else {
        const std::size_t at = rng() % model.size();
        const PodPtr p = pod(next++);
        pods.replace(pods.positionOf(at), p);
        model[at] = p;
      }
      ASSERT_EQ(pods.size(), model.size());
      ASSERT_EQ(listOf(pods), model) << "step " << step;
      expectChunksBounded(pods);
      for (std::size_t i = 0; i < model.size(); i += 1 + model.size() / 7) {
        ASSERT_EQ(pods[i], model[i]);
        ASSERT_EQ(pods.at(pods.positionOf(i)), model[i].get());
      }
      EXPECT_EQ(pods.at(pods.positionOf(model.size())), nullptr);
      // One edit touches at most two chunks of the version before (a split or a merge); the
      // others are the same chunk objects.
      std::size_t shared = 0;
      for (const auto& c : pods.chunks()) {
        shared += std::count(before.chunks().begin(), before.chunks().end(), c);
      }
      EXPECT_GE(shared + 2, before.chunks().size()) << "step " << step;
      // pendingChange: the version before less `removed` plus `added` is this one (checked as
      // multisets every 5th step: two maps of ~700 pods per step are too slow under ASan at
      // -O0), and one edit is one pod out and/or one in.
      const PendingChange change = pendingChange(before, pods);
      if (step % 5 == 0) {
        std::map<const Pod*, int> sum = counts(listOf(before));
        for (const Pod* p : change.removed) --sum[p];
        for (const Pod* p : change.added) ++sum[p];
        std::erase_if(sum, [](const auto& kv) { return kv.second == 0; });
        EXPECT_EQ(sum, counts(model)) << "step " << step;
      }
      EXPECT_LE(change.removed.size(), 1u);
      EXPECT_LE(change.added.size(), 1u);
      EXPECT_EQ(change.removed.size() + change.added.size(), what < 6 ? 1u : 2u);
      if (step % 100 == 0) versions.push_back({pods, model});
    }
    for (const Version& v : versions) EXPECT_EQ(listOf(v.pods), v.seen);
  }
}

TEST(PendingPods, ChangeBetweenDistantVersionsAndUnrelatedLists) {
  std::vector<PodPtr> all;
  for (int i = 0; i < 500; ++i) all.push_back(pod(i));
  const PendingPods first(all);
  PendingPods later = first;
  later.erase(later.positionOf(10));
  later.erase(later.positionOf(300));
  later.insert(later.positionOf(450), pod(1000));
  const PendingChange change = pendingChange(first, later);
  std::map<const Pod*, int> sum = counts(all);
  for (const Pod* p : change.removed) --sum[p];
  for (const Pod* p : change.added) ++sum[p];
  std::erase_if(sum, [](const auto& kv) { return kv.second == 0; });
  EXPECT_EQ(sum, counts(listOf(later)));
  // Rebuilt from the same pods: no chunk shared, yet nothing differs pod by pod.
  const PendingPods copy(all);
  const PendingChange none = pendingChange(first, copy);
  EXPECT_TRUE(none.removed.empty());
  EXPECT_TRUE(none.added.empty());
  const PendingChange emptied = pendingChange(first, PendingPods{});
  EXPECT_EQ(emptied.removed.size(), 500u);
  EXPECT_TRUE(emptied.added.empty());
}

// The pod cache's way (insert where the uid belongs, erase, replace by a pod of the same uid)
// keeps the list in uid order and anyWithUid searches; an edit out of order makes it walk. Either
// way it answers as a walk over the list does.
TEST(PendingPods, AnyWithUidAnswersAsAWalkInOrderOrNot) {
  std::mt19937 rng(11);
  PendingPods pods;
  std::vector<PodPtr> model;
  auto walk = [&](const std::string& uid, int gpus) {
    return std::any_of(model.begin(), model.end(),
                       [&](const PodPtr& p) { return p->uid == uid && p->gpus >= gpus; });
  };
  auto withGpus = [](int i, int gpus) {
    Pod p = *pod(i);
    p.gpus = gpus;
    return std::make_shared<const Pod>(std::move(p));
  };
  for (int step = 0; step < 3000; ++step) {
    const bool inOrder = step < 2000;
    const int i = static_cast<int>(rng() % 600);
    const std::string uid = pod(i)->uid;
    auto before = [&](const Pod& p) { return p.uid < uid; };
    const auto at = inOrder ? pods.lowerBound(before) : pods.positionOf(rng() % (model.size() + 1));
    const std::size_t index = static_cast<std::size_t>(
        inOrder
            ? std::lower_bound(model.begin(), model.end(), uid,
                               [](const PodPtr& p, const std::string& k) { return p->uid < k; }) -
                  model.begin()
            : 0);
    const Pod* there = pods.at(at);
    if (inOrder && there != nullptr && there->uid == uid) {
      if (rng() % 2 == 0) {
        pods.erase(at);
        model.erase(model.begin() + static_cast<std::ptrdiff_t>(index));
      } else {
        const PodPtr p = withGpus(i, static_cast<int>(rng() % 4000));
        pods.replace(at, p);
        model[index] = p;
      }
    } else if (inOrder) {
      const PodPtr p = withGpus(i, static_cast<int>(rng() % 4000));
      pods.insert(at, p);
      model.insert(model.begin() + static_cast<std::ptrdiff_t>(index), p);
    } else {
      model = listOf(pods);
      const std::size_t where = rng() % (model.size() + 1);
      const PodPtr p = withGpus(i, static_cast<int>(rng() % 4000));
      pods.insert(pods.positionOf(where), p);
      model.insert(model.begin() + static_cast<std::ptrdiff_t>(where), p);
    }
    ASSERT_EQ(listOf(pods), model);
    const bool sorted =
        std::is_sorted(model.begin(), model.end(),
                       [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
    if (inOrder) {
      ASSERT_TRUE(pods.sortedByUid()) << "step " << step;
    }
    if (pods.sortedByUid()) {
      ASSERT_TRUE(sorted) << "step " << step;
    }
    for (int probe = 0; probe < 5; ++probe) {
      const std::string key = pod(static_cast<int>(rng() % 600))->uid;
      const int gpus = static_cast<int>(rng() % 4000);
      ASSERT_EQ(pods.anyWithUid(key, [&](const Pod& p) { return p.gpus >= gpus; }), walk(key, gpus))
          << "step " << step << ", " << key;
    }
  }
  EXPECT_FALSE(pods.sortedByUid()) << "inserts out of order were noticed";
  EXPECT_FALSE(PendingPods(std::vector<PodPtr>{pod(2), pod(1)}).sortedByUid());
  EXPECT_TRUE(PendingPods(std::vector<PodPtr>{pod(1), pod(2)}).sortedByUid());
}

TEST(PendingPods, LowerBoundFindsWhatStdLowerBoundFinds) {
  std::mt19937 rng(7);
  std::vector<PodPtr> sorted;
  for (int i = 0; i < 900; ++i) sorted.push_back(pod(2 * i));  // even uids, sorted
  const PendingPods pods(sorted);
  for (int probe = -1; probe <= 1801; ++probe) {
    const std::string key = pod(probe < 0 ? 0 : probe)->uid;
    auto before = [&](const Pod& p) { return p.uid < key; };
    const auto at = pods.lowerBound(before);
    const auto want =
        std::lower_bound(sorted.begin(), sorted.end(), key,
                         [](const PodPtr& p, const std::string& k) { return p->uid < k; });
    if (want == sorted.end()) {
      EXPECT_EQ(pods.at(at), nullptr) << key;
    } else {
      EXPECT_EQ(pods.at(at), want->get()) << key;
    }
  }
  EXPECT_EQ(PendingPods{}.at(PendingPods{}.lowerBound([](const Pod&) { return true; })), nullptr);
}

}  // namespace
}  // namespace gpufair::policy
