// PodCache: the pod life cycle (see pod_cache.h), one step sequence per case, with the indexes and
// the dirty marks each step leaves.
#include "gpufair/state/pod_cache.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/common/labels.h"

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::MakePod;
using testing::MakeQueue;

constexpr auto kAssumeTtl = 30s;
constexpr auto kPendingTtl = 600s;
const std::string kUid = "uid-team-a-p";

enum class Op {
  kOffer,          // kube-scheduler offers it (unbound)
  kListUnbound,    // the API shows it unbound
  kListBound,      // the API shows it bound to n1
  kListElsewhere,  // the API shows it bound to n2
  kListFinished,   // the API shows it Succeeded on n1
  kAssume,         // /bind placed it on n1
  kConfirm,
  kForget,
  kExpireAssumed,  // assumeTtl passes, then expire()
  kExpireUnseen,   // pendingTtl passes, then expire()
  kRemove,
};
enum class Stage { kGone, kPending, kAssumed, kBound, kFinished };

// A cache, its dirty set and a clock that the steps move.
class Harness {
 public:
  Harness() {
    quota_.queues = {MakeQueue("team-a").deserved(4), MakeQueue("team-b").deserved(4)};
    dirty_.clear();
  }

  void apply(Op op) {
    const policy::Pod pod = MakePod("team-a", "p").gpus(2);
    switch (op) {
      case Op::kOffer:
        cache_.notePending(pod, now_, quota_);
        break;
      case Op::kListUnbound:
        cache_.upsert(pod, now_, quota_);
        break;
      case Op::kListBound:
        cache_.upsert(MakePod("team-a", "p").gpus(2).on("n1"), now_, quota_);
        break;
      case Op::kListElsewhere:
        cache_.upsert(MakePod("team-a", "p").gpus(2).on("n2"), now_, quota_);
        break;
      case Op::kListFinished:
        cache_.upsert(MakePod("team-a", "p").gpus(2).on("n1").phase(policy::PodPhase::kSucceeded),
                      now_, quota_);
        break;
      case Op::kAssume:
        cache_.assume(placed("n1"), now_);
        break;
      case Op::kConfirm:
        cache_.confirm(kUid);
        break;
      case Op::kForget:
        cache_.forget(kUid, now_);
        break;
      case Op::kExpireAssumed:
        now_ += kAssumeTtl + 1s;
        cache_.expire(now_, kAssumeTtl, kPendingTtl);
        break;
      case Op::kExpireUnseen:
        now_ += kPendingTtl + 1s;
        cache_.expire(now_, kAssumeTtl, kPendingTtl);
        break;
      case Op::kRemove:
        cache_.remove(kUid);
        break;
    }
  }
  // The cached pod as /bind would place it on `node`.
  policy::PodPtr placed(const std::string& node) {
    auto copy = std::make_shared<policy::Pod>(*cache_.findPod(kUid));
    copy->nodeName = node;
    return copy;
  }
  const PodCache& cache() const { return cache_; }
  void offeredIsDemand(bool offered) { cache_.setOfferedIsDemand(offered); }
  void assume(policy::PodPtr placed) { cache_.assume(std::move(placed), now_); }
  Stage stage() const {
    const PodCache::Entry* e = cache_.find(kUid);
    if (e == nullptr) return Stage::kGone;
    if (e->assumed) return Stage::kAssumed;
    if (e->pod->isFinished()) return Stage::kFinished;
    return e->pod->nodeName.empty() ? Stage::kPending : Stage::kBound;
  }
  bool pendingHas(const std::string& uid) const {
    const auto pending = cache_.pending();
    return std::any_of(pending.begin(), pending.end(),
                       [&](const auto& p) { return p->uid == uid; });
  }

 protected:
  QuotaConfig quota_;
  DirtySet dirty_;
  PodCache cache_{dirty_};
  Timestamp now_ = testing::ManualClock().now();
};

class PodCacheTest : public ::testing::Test, protected Harness {};

struct LifeCycleCase {
  const char* name;
  std::vector<Op> ops;
  Stage stage;
  const char* node;  // where the pod is then ("" unbound)
};

TEST(PodCacheLifeCycle, EachStepSequenceEndsInItsStage) {
  const std::vector<LifeCycleCase> cases = {
      {"an offered pod is pending", {Op::kOffer}, Stage::kPending, ""},
      {"bind assumes it on the node", {Op::kOffer, Op::kAssume}, Stage::kAssumed, "n1"},
      {"confirm binds it", {Op::kOffer, Op::kAssume, Op::kConfirm}, Stage::kBound, "n1"},
      {"the watch showing it there confirms it",
       {Op::kOffer, Op::kAssume, Op::kListBound},
       Stage::kBound,
       "n1"},
      {"a lagging unbound version keeps the assumption",
       {Op::kOffer, Op::kAssume, Op::kListUnbound},
       Stage::kAssumed,
       "n1"},
      {"bound elsewhere, the API wins",
       {Op::kOffer, Op::kAssume, Op::kListElsewhere},
       Stage::kBound,
       "n2"},
      {"finished while assumed",
       {Op::kOffer, Op::kAssume, Op::kListFinished},
       Stage::kFinished,
       "n1"},
      {"forget resets it to pending", {Op::kOffer, Op::kAssume, Op::kForget}, Stage::kPending, ""},
      {"an unconfirmed assumption expires to pending",
       {Op::kOffer, Op::kAssume, Op::kExpireAssumed},
       Stage::kPending,
       ""},
      {"assumed again after a reset",
       {Op::kOffer, Op::kAssume, Op::kForget, Op::kAssume, Op::kConfirm},
       Stage::kBound,
       "n1"},
      {"forget leaves a bound pod", {Op::kListBound, Op::kForget}, Stage::kBound, "n1"},
      {"confirm leaves a pending pod", {Op::kOffer, Op::kConfirm}, Stage::kPending, ""},
      {"an offer leaves a bound pod", {Op::kListBound, Op::kOffer}, Stage::kBound, "n1"},
      {"an offer leaves an assumed pod",
       {Op::kOffer, Op::kAssume, Op::kOffer},
       Stage::kAssumed,
       "n1"},
      {"only offered and unseen: dropped", {Op::kOffer, Op::kExpireUnseen}, Stage::kGone, ""},
      {"listed by the API: kept however long unseen",
       {Op::kListUnbound, Op::kExpireUnseen},
       Stage::kPending,
       ""},
      {"a bound pod outlives both ttls",
       {Op::kListBound, Op::kExpireAssumed, Op::kExpireUnseen},
       Stage::kBound,
       "n1"},
      {"removed", {Op::kListBound, Op::kRemove}, Stage::kGone, ""},
      // expire() looks only at assumed and only-offered pods: each step that enters or leaves
      // the only-offered set.
      {"offered, then listed: kept however long unseen",
       {Op::kOffer, Op::kListUnbound, Op::kExpireUnseen},
       Stage::kPending,
       ""},
      {"offered, assumed, bound: outlives both ttls",
       {Op::kOffer, Op::kAssume, Op::kConfirm, Op::kExpireAssumed, Op::kExpireUnseen},
       Stage::kBound,
       "n1"},
      {"offered, assumed, forgotten, then unseen: dropped",
       {Op::kOffer, Op::kAssume, Op::kForget, Op::kExpireUnseen},
       Stage::kGone,
       ""},
      {"offered, assumption expired, then unseen: dropped",
       {Op::kOffer, Op::kAssume, Op::kExpireAssumed, Op::kExpireUnseen},
       Stage::kGone,
       ""},
      {"offered and removed: expire finds nothing",
       {Op::kOffer, Op::kRemove, Op::kExpireAssumed, Op::kExpireUnseen},
       Stage::kGone,
       ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    for (Op op : c.ops) h.apply(op);
    EXPECT_EQ(h.stage(), c.stage);
    const PodCache& cache = h.cache();
    const policy::PodPtr pod = cache.findPod(kUid);
    EXPECT_EQ(pod != nullptr ? pod->nodeName : "", c.node);
    // The indexes agree with the stage.
    const bool placed = std::string(c.node) != "" && c.stage != Stage::kGone;
    EXPECT_EQ(cache.podsOn(c.node).size(), placed ? 1u : 0u);
    EXPECT_EQ(h.pendingHas(kUid), c.stage == Stage::kPending);
    EXPECT_EQ(cache.assumedUids(), c.stage == Stage::kAssumed ? std::vector<std::string>{kUid}
                                                              : std::vector<std::string>{});
    EXPECT_EQ(cache.isAssumed(kUid), c.stage == Stage::kAssumed);
    const auto assumed = cache.assumedList();
    EXPECT_EQ(assumed->size(), c.stage == Stage::kAssumed ? 1u : 0u);
    EXPECT_EQ(assumed->anyWithUid(kUid, [](const policy::Pod&) { return true; }),
              c.stage == Stage::kAssumed);
  }
}

// Against an API server a pod only offered is remembered (so /bind finds it) but is not demand
// until the API shows it; one the API deleted and kube-scheduler offers late is no demand either.
TEST(PodCacheDemand, OfferedPodsAreDemandOnlyOnceTheApiShowsThem) {
  struct Case {
    const char* name;
    std::vector<Op> ops;
    bool demand;
  };
  const std::vector<Case> cases = {
      {"only offered", {Op::kOffer}, false},
      {"offered, then listed", {Op::kOffer, Op::kListUnbound}, true},
      {"listed, then offered", {Op::kListUnbound, Op::kOffer}, true},
      {"deleted, then a late offer", {Op::kListUnbound, Op::kRemove, Op::kOffer}, false},
      {"assumed and forgotten, only offered", {Op::kOffer, Op::kAssume, Op::kForget}, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    h.offeredIsDemand(false);
    for (Op op : c.ops) h.apply(op);
    EXPECT_EQ(h.pendingHas(kUid), c.demand);
    EXPECT_NE(h.cache().findPod(kUid), nullptr) << "still known, for /bind";
  }
  Harness fileMode;  // the default: a cluster file or the simulator has no watch
  fileMode.apply(Op::kOffer);
  EXPECT_TRUE(fileMode.pendingHas(kUid));
}

// forget() and expire() undo an assumption the same way: the borrowed mark and label, the GPU
// index and its annotation go with the node.
TEST(PodCacheReset, ForgetAndExpireLeaveTheSamePendingPod) {
  std::vector<policy::PodPtr> reset;
  for (const bool byExpiry : {false, true}) {
    Harness h;
    h.apply(Op::kOffer);
    auto placed = std::make_shared<policy::Pod>(*h.cache().findPod(kUid));
    placed->nodeName = "n1";
    placed->gpuIndex = 3;
    placed->annotations[kGpuIndexAnnotation] = "3";
    placed->overQuota = true;
    placed->labels[kOverQuotaLabel] = "true";
    h.assume(placed);
    h.apply(byExpiry ? Op::kExpireAssumed : Op::kForget);
    reset.push_back(h.cache().findPod(kUid));
    ASSERT_NE(reset.back(), nullptr);
    EXPECT_FALSE(h.cache().isAssumed(kUid));
  }
  const policy::Pod offered = MakePod("team-a", "p").gpus(2);
  for (const auto& pod : reset) {
    EXPECT_TRUE(pod->nodeName.empty());
    EXPECT_EQ(pod->gpuIndex, -1);
    EXPECT_FALSE(pod->overQuota);
    EXPECT_EQ(pod->labels, offered.labels);
    EXPECT_EQ(pod->annotations, offered.annotations);
    EXPECT_EQ(pod->queue, "team-a");
  }
}

TEST_F(PodCacheTest, ChangesMarkWhatTheyAffect) {
  apply(Op::kOffer);
  EXPECT_TRUE(dirty_.hasPending());
  EXPECT_TRUE(dirty_.nodes().empty());
  dirty_.clear();

  apply(Op::kAssume);  // leaves the pending set for n1, and is provisional
  EXPECT_TRUE(dirty_.hasPending());
  EXPECT_EQ(dirty_.nodes(), (std::set<std::string, std::less<>>{"n1"}));
  EXPECT_TRUE(dirty_.hasProvisional());
  dirty_.clear();

  apply(Op::kListElsewhere);  // the API says n2: both nodes change, no longer provisional
  EXPECT_EQ(dirty_.nodes(), (std::set<std::string, std::less<>>{"n1", "n2"}));
  EXPECT_TRUE(dirty_.hasProvisional());
  EXPECT_FALSE(dirty_.hasPending());
  dirty_.clear();

  apply(Op::kForget);  // not assumed: nothing happens
  apply(Op::kConfirm);
  EXPECT_TRUE(dirty_.empty());
}

// A bind that goes through changes no node twice: the confirm, and the watch showing the pod
// bound as assumed, in either order, keep the assumed pod object and mark only the provisional
// set. A watch event that differs replaces the pod and marks its node.
TEST_F(PodCacheTest, AConfirmOrAWatchEventEqualToTheHeldPodChangesNoNode) {
  // What the API shows right after our Binding: the pod on n1, still Pending.
  auto watchBound = [&] {
    cache_.upsert(MakePod("team-a", "p").gpus(2).on("n1").phase(policy::PodPhase::kPending), now_,
                  quota_);
  };
  for (const bool watchFirst : {false, true}) {
    SCOPED_TRACE(watchFirst ? "watch, then confirm" : "confirm, then watch");
    cache_.remove(kUid);
    apply(Op::kListUnbound);
    apply(Op::kAssume);
    const policy::PodPtr assumed = cache_.findPod(kUid);
    dirty_.clear();
    if (watchFirst) {
      watchBound();
    } else {
      apply(Op::kConfirm);
    }
    EXPECT_TRUE(dirty_.nodes().empty());
    EXPECT_FALSE(dirty_.hasPending());
    EXPECT_TRUE(dirty_.hasProvisional());
    EXPECT_FALSE(cache_.isAssumed(kUid));
    EXPECT_EQ(cache_.findPod(kUid), assumed);
    dirty_.clear();
    if (watchFirst) {
      apply(Op::kConfirm);
    } else {
      watchBound();
    }
    EXPECT_TRUE(dirty_.empty());
    EXPECT_EQ(cache_.findPod(kUid), assumed);
    EXPECT_EQ(cache_.podsOn("n1"), std::vector<policy::PodPtr>{assumed});
    EXPECT_TRUE(cache_.pending().empty());
  }
  // Running now, and labelled.
  cache_.upsert(MakePod("team-a", "p").gpus(2).on("n1").label("app", "x"), now_, quota_);
  EXPECT_EQ(dirty_.nodes(), (std::set<std::string, std::less<>>{"n1"}));
  EXPECT_EQ(cache_.findPod(kUid)->labels.at("app"), "x");
  EXPECT_EQ(cache_.podsOn("n1").size(), 1u);
}

TEST_F(PodCacheTest, AnUnchangedOfferOnlyRefreshesWhenItWasSeen) {
  apply(Op::kOffer);
  dirty_.clear();
  now_ += 500s;
  EXPECT_EQ(cache_.notePending(MakePod("team-a", "p").gpus(2), now_, quota_).pod, nullptr);
  EXPECT_TRUE(dirty_.empty());
  EXPECT_EQ(cache_.find(kUid)->seen, now_);
  const auto changed = cache_.notePending(MakePod("team-a", "p").gpus(3), now_, quota_);
  ASSERT_NE(changed.pod, nullptr);
  EXPECT_FALSE(changed.firstSeen);
  EXPECT_EQ(changed.pod->gpus, testing::gpus(3));
  EXPECT_TRUE(dirty_.hasPending());
}

TEST_F(PodCacheTest, AnOfferIsStoredAsACopyUnderItsKeyAndLeftAsGiven) {
  // notePending takes the offered pod by reference: what it stores is its own resolved copy
  // (uid "ns/name" when the pod has none), and the caller's pod is not touched.
  policy::Pod offered = MakePod("team-a", "no-uid").gpus(2).uid("");
  const auto first = cache_.notePending(offered, now_, quota_);
  ASSERT_NE(first.pod, nullptr);
  EXPECT_TRUE(first.firstSeen);
  EXPECT_EQ(first.pod->uid, "team-a/no-uid");
  EXPECT_EQ(first.pod->queue, "team-a");
  EXPECT_EQ(cache_.findPod("team-a/no-uid"), first.pod);
  EXPECT_EQ(offered.uid, "");
  EXPECT_EQ(offered.queue, "");
  dirty_.clear();
  EXPECT_EQ(cache_.notePending(offered, now_, quota_).pod, nullptr);  // the same offer again
  EXPECT_TRUE(dirty_.empty());
  EXPECT_EQ(cache_.size(), 1u);
}

TEST_F(PodCacheTest, RequeueMovesPendingAndPlacedPodsToTheirNewQueue) {
  cache_.upsert(MakePod("ml", "waiting").gpus(1), now_, quota_);
  cache_.upsert(MakePod("ml", "running").gpus(1).on("n1"), now_, quota_);
  EXPECT_EQ(cache_.pending().at(0)->queue, kDefaultQueueName);
  quota_.queues.push_back(MakeQueue("ml").deserved(2));
  dirty_.clear();
  cache_.requeue(quota_);
  EXPECT_TRUE(dirty_.hasAll());
  EXPECT_EQ(cache_.pending().at(0)->queue, "ml");
  EXPECT_EQ(cache_.podsOn("n1").at(0)->queue, "ml");
}

TEST_F(PodCacheTest, GangCountsMembersPlacedAndAssumed) {
  auto member = [](const std::string& name) { return MakePod("team-b", name).gang("train", 3); };
  cache_.upsert(member("a").gpus(1).on("n1"), now_, quota_);
  cache_.notePending(member("b").gpus(1), now_, quota_);
  cache_.upsert(member("c").gpus(1).on("n2").terminating(), now_, quota_);
  cache_.upsert(member("launcher"), now_, quota_);  // no GPUs, unplaced
  auto b = std::make_shared<policy::Pod>(*cache_.findPod("uid-team-b-b"));
  b->nodeName = "n1";
  cache_.assume(b, now_);
  const PodCache::GangCount count = cache_.gangCount("gang:team-b/train");
  EXPECT_EQ(count.size, 3);
  EXPECT_EQ(count.placed, 2);  // a and b; c is terminating
  EXPECT_EQ(count.assumed, 1);
  const auto unplaced = cache_.unplacedWithoutGpus("gang:team-b/train");
  ASSERT_EQ(unplaced.size(), 1u);
  EXPECT_EQ(unplaced[0]->name, "launcher");
  EXPECT_EQ(cache_.gangCount("gang:team-b/other").size, 0);
}

TEST_F(PodCacheTest, ARelistDropsOnlyApiPodsItLacks) {
  cache_.upsert(MakePod("team-a", "kept").gpus(1).on("n1"), now_, quota_);
  cache_.upsert(MakePod("team-a", "deleted").gpus(1).on("n1"), now_, quota_);
  cache_.notePending(MakePod("team-a", "offered").gpus(1), now_, quota_);
  const auto gone = cache_.removeUnlisted({"uid-team-a-kept"});
  EXPECT_EQ(gone, std::vector<std::string>{"uid-team-a-deleted"});
  EXPECT_EQ(cache_.size(), 2u);
  EXPECT_EQ(cache_.podsOn("n1").size(), 1u);
}

}  // namespace
}  // namespace gpufair::state
