// The snapshot's provisional pods (PodCache::assumedList): the assumed pods by uid, published
// after each assume or confirm by copying the list of chunks, not every assumed uid. While the
// watch lags behind the binds (a slow API server, a relist) thousands of pods can stay assumed,
// and a copy of every uid per bind made each bind cost grow with them.
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/state/pod_cache.h"

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::MakePod;

std::string name(int i) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "p-%04d", i);
  return buffer;
}

class AssumedPods : public ::testing::Test {
 protected:
  AssumedPods() : cache_(dirty_) {
    for (int i = 0; i < kPods; ++i) {
      uids_.push_back(cache_.upsert(MakePod("team-a", name(i)).gpus(1), now_, quota_).pod->uid);
    }
  }
  void assume(int i) {
    auto placed = std::make_shared<policy::Pod>(*cache_.findPod(uids_[i]));
    placed->nodeName = "n-" + std::to_string(i % 7);
    cache_.assume(std::move(placed), now_);
  }
  // The uids of a published list, in its order.
  static std::vector<std::string> uidsOf(const policy::PendingPods& list) {
    std::vector<std::string> out;
    for (const auto& pod : list) out.push_back(pod->uid);
    return out;
  }
  // How many of `after`'s chunks are not `before`'s.
  static std::size_t newChunks(const policy::PendingPods& before,
                               const policy::PendingPods& after) {
    std::set<const policy::PendingPods::Chunk*> old;
    for (const auto& chunk : before.chunks()) old.insert(chunk.get());
    return std::count_if(after.chunks().begin(), after.chunks().end(),
                         [&](const auto& chunk) { return old.count(chunk.get()) == 0; });
  }

  static constexpr int kPods = 2'000;
  DirtySet dirty_;
  PodCache cache_;
  QuotaConfig quota_;
  Timestamp now_{};
  std::vector<std::string> uids_;
};

TEST_F(AssumedPods, EachAssumeOrConfirmPublishesANewChunkOrTwoAndSharesTheRest) {
  std::mt19937 random(7);
  std::vector<int> order(kPods);
  for (int i = 0; i < kPods; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), random);
  auto before = cache_.assumedList();
  for (int i : order) {
    assume(i);
    const auto after = cache_.assumedList();
    ASSERT_LE(newChunks(*before, *after), 2u) << "assume " << i;
    before = after;
  }
  EXPECT_EQ(before->size(), static_cast<std::size_t>(kPods));
  EXPECT_GE(before->chunks().size(), 2'000u / (2 * policy::PendingPods::kChunk));
  // Confirmed in another order: the list shrinks a chunk or two at a time.
  std::shuffle(order.begin(), order.end(), random);
  for (int i : order) {
    ASSERT_TRUE(cache_.confirm(uids_[i]));
    const auto after = cache_.assumedList();
    ASSERT_LE(newChunks(*before, *after), 2u) << "confirm " << i;
    before = after;
  }
  EXPECT_TRUE(before->empty());
}

// Assume, confirm, forget, remove and expire in random order: the published list always holds
// exactly the assumed uids, sorted, and a list handed out earlier never changes.
TEST_F(AssumedPods, ThePublishedListIsTheAssumedUidsAndStaysAsHandedOut) {
  std::mt19937 random(11);
  std::uniform_int_distribution<int> pick(0, kPods - 1);
  std::uniform_int_distribution<int> what(0, 9);
  auto earlier = cache_.assumedList();
  std::vector<std::string> earlierUids = uidsOf(*earlier);
  for (int step = 0; step < 6'000; ++step) {
    const int i = pick(random);
    switch (what(random)) {
      case 0:
      case 1:
      case 2:
      case 3:
        if (!cache_.isAssumed(uids_[i]) && cache_.findPod(uids_[i]) != nullptr &&
            cache_.findPod(uids_[i])->nodeName.empty()) {
          assume(i);
        }
        break;
      case 4:
      case 5:
        cache_.confirm(uids_[i]);
        break;
      case 6:
        cache_.forget(uids_[i], now_);
        break;
      case 7:
        cache_.remove(uids_[i]);
        uids_[i] = cache_.upsert(MakePod("team-a", name(i)).gpus(1), now_, quota_).pod->uid;
        break;
      case 8:
        now_ += 1s;
        cache_.expire(now_, 20s, 600s);
        break;
      default: {
        ASSERT_EQ(uidsOf(*earlier), earlierUids) << "a list handed out changed, step " << step;
        earlier = cache_.assumedList();
        earlierUids = uidsOf(*earlier);
      }
    }
    const auto list = cache_.assumedList();
    ASSERT_EQ(uidsOf(*list), cache_.assumedUids()) << "step " << step;
    ASSERT_TRUE(list->sortedByUid());
    if (step % 50 == 0) {  // against each pod's own entry, which the list is not derived from
      std::vector<std::string> assumed;
      for (const std::string& uid : uids_) {
        if (cache_.isAssumed(uid)) assumed.push_back(uid);
      }
      std::sort(assumed.begin(), assumed.end());
      ASSERT_EQ(uidsOf(*list), assumed) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace gpufair::state
