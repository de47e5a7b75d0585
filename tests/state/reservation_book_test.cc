// ReservationBook: holding GPUs for a pod or a gang, taking them at bind, giving them back (see
// reservation_book.h). The pods come from a real PodCache.
#include "gpufair/state/reservation_book.h"

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::gpus;
using testing::MakePod;

const std::string kHolder = "uid-team-b-train-0";
const std::string kGang = "gang:team-b/train";

class ReservationBookTest : public ::testing::Test {
 protected:
  policy::Reservation reservation(std::string holder, std::string node, double gpuCount) {
    return {std::move(node), gpus(gpuCount), std::move(holder), "team-b", "reclaim", ""};
  }
  // Stores the pod and lets the book see it placed, as the mirror does.
  void place(const policy::Pod& pod, bool assumed) {
    if (assumed) {
      cache_.notePending(pod, now_, quota_);
      auto placed = std::make_shared<policy::Pod>(*cache_.findPod(pod.uid));
      placed->nodeName = pod.nodeName;
      cache_.assume(placed, now_);
    } else {
      cache_.upsert(pod, now_, quota_);
    }
    book_.take(*cache_.findPod(pod.uid));
    book_.settle(cache_);
  }
  MilliGpu heldOn(const std::string& node) const {
    MilliGpu sum = 0;
    const auto byNode = book_.byNode();
    if (auto it = byNode.find(node); it != byNode.end()) {
      for (const auto& r : it->second) sum += r.gpus;
    }
    return sum;
  }

  QuotaConfig quota_;
  DirtySet dirty_;
  PodCache cache_{dirty_};
  ReservationBook book_{dirty_};
  Timestamp now_ = testing::ManualClock().now();
};

TEST(ReservationShare, HolderPodsTakeWholeGpus) {
  struct Case {
    const char* name;
    policy::Pod pod;
    MilliGpu share;
  };
  const std::vector<Case> cases = {
      {"whole GPUs", MakePod("a", "p").gpus(2), gpus(2)},
      {"a fractional pod takes the GPU it uses", MakePod("a", "p").share(0.25), gpus(1)},
      {"a request in milli-GPUs is rounded up", MakePod("a", "p").gpus(1.5), gpus(2)},
      {"no GPU, no share", MakePod("a", "p"), 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ReservationBook::share(c.pod), c.share);
  }
}

TEST_F(ReservationBookTest, ReserveRoundsUpReplacesAndMarksTheNode) {
  dirty_.clear();
  EXPECT_FALSE(book_.reserve(reservation("", "n1", 1), now_ + 60s));  // no holder
  EXPECT_FALSE(book_.reserve(reservation(kHolder, "", 1), now_ + 60s));
  EXPECT_TRUE(dirty_.empty());
  EXPECT_TRUE(book_.reserve(reservation(kHolder, "n1", 5.5), now_ + 60s));
  EXPECT_EQ(dirty_.nodes(), (std::set<std::string, std::less<>>{"n1"}));
  EXPECT_EQ(heldOn("n1"), gpus(6));
  EXPECT_TRUE(book_.reserve(reservation(kHolder, "n1", 2), now_ + 60s));  // replaces
  ASSERT_EQ(book_.all().size(), 1u);
  EXPECT_EQ(book_.all()[0].gpus, gpus(2));
  EXPECT_EQ(book_.heldBy(kHolder).size(), 1u);
  EXPECT_TRUE(book_.heldBy("someone-else").empty());
}

TEST_F(ReservationBookTest, ThePodHolderTakesAllHereAndDropsTheRestElsewhere) {
  book_.reserve(reservation(kHolder, "n1", 8), now_ + 60s);
  book_.reserve(reservation(kHolder, "n2", 8), now_ + 60s);
  place(MakePod("team-b", "train-0").gpus(4).on("n1"), /*assumed=*/true);
  EXPECT_EQ(heldOn("n1"), 0);  // all taken, kept while the taker is only assumed
  EXPECT_EQ(heldOn("n2"), 0);  // not needed any more: dropped
  EXPECT_TRUE(book_.all().empty());
  EXPECT_FALSE(book_.empty());

  cache_.forget(kHolder, now_);  // the bind failed: the share is held again
  book_.settle(cache_);
  EXPECT_EQ(heldOn("n1"), gpus(8));

  place(MakePod("team-b", "train-0").gpus(4).on("n1"), /*assumed=*/false);  // bound
  EXPECT_TRUE(book_.empty());  // fully taken by a bound pod: done
}

TEST_F(ReservationBookTest, ATakerThatGoesAwayGivesItsShareBack) {
  struct Case {
    const char* name;
    std::function<void(PodCache&)> away;
  };
  const std::vector<Case> cases = {
      {"deleted", [](PodCache& c) { c.remove(kHolder); }},
      {"finished",
       [this](PodCache& c) {
         c.upsert(MakePod("team-b", "train-0").gpus(4).on("n1").phase(policy::PodPhase::kFailed),
                  now_, quota_);
       }},
      {"reset by expiry", [this](PodCache& c) { c.expire(now_ + 31s, 30s, 600s); }}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    book_.reserve(reservation(kHolder, "n1", 8), now_ + 60s);
    place(MakePod("team-b", "train-0").gpus(4).on("n1"), /*assumed=*/true);
    ASSERT_EQ(heldOn("n1"), 0);
    c.away(cache_);
    book_.settle(cache_);
    EXPECT_EQ(heldOn("n1"), gpus(8));
    book_.release(kHolder);
    cache_.remove(kHolder);
  }
}

TEST_F(ReservationBookTest, GangMembersTakeTheirShareAndACompleteGangReleasesAll) {
  auto member = [](const std::string& name) {
    return MakePod("team-b", name).gang("train", 2).gpus(4);
  };
  EXPECT_TRUE(
      book_.install({reservation(kGang, "n1", 4), reservation(kGang, "n2", 4)}, now_ + 300s));
  place(member("w0").on("n1"), /*assumed=*/true);
  EXPECT_EQ(heldOn("n1"), 0);
  EXPECT_EQ(heldOn("n2"), gpus(4));
  place(member("w1").on("n2"), /*assumed=*/false);
  EXPECT_FALSE(book_.empty());  // w0 is only assumed: the gang is not complete yet
  cache_.confirm("uid-team-b-w0");
  book_.settle(cache_);
  EXPECT_TRUE(book_.empty());
}

TEST_F(ReservationBookTest, AFreshPlanForgetsWhatMembersTookOfTheOldOne) {
  book_.install({reservation(kGang, "n1", 8)}, now_ + 300s);
  place(MakePod("team-b", "w0").gang("train", 4).gpus(4).on("n1"), /*assumed=*/true);
  EXPECT_EQ(heldOn("n1"), gpus(4));
  book_.install({reservation(kGang, "n1", 8)}, now_ + 300s);
  EXPECT_EQ(heldOn("n1"), gpus(8));
  EXPECT_FALSE(book_.install({}, now_ + 300s));
}

TEST_F(ReservationBookTest, ExpiryAndReleaseDropReservations) {
  book_.reserve(reservation(kHolder, "n1", 1), now_ + 60s);
  book_.reserve(reservation("uid-other", "n2", 1), now_ + 120s);
  book_.install({reservation(kGang, "n3", 1)}, now_ + 300s);
  EXPECT_EQ(book_.expire(now_ + 59s), 0u);
  EXPECT_EQ(book_.expire(now_ + 60s), 1u);
  EXPECT_EQ(heldOn("n1"), 0);
  dirty_.clear();
  book_.release(kGang);
  EXPECT_EQ(dirty_.nodes(), (std::set<std::string, std::less<>>{"n3"}));
  ASSERT_EQ(book_.all().size(), 1u);
  EXPECT_EQ(book_.all()[0].holder, "uid-other");
}

}  // namespace
}  // namespace gpufair::state
