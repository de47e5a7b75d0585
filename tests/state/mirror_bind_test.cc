// Mirror::assume decides on a snapshot outside the mirror's lock and commits only if nothing
// changed meanwhile (see mirror.h). The scorers here act from inside the decision (chooseGpu).
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/state/mirror.h"

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::gpus;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

// Best fit, after running `during` with the number of the call (0-based).
class ActingScorer final : public policy::Scorer {
 public:
  explicit ActingScorer(std::function<void(int)> during) : during_(std::move(during)) {}
  std::string_view name() const override { return "acting"; }
  void score(const policy::ClusterSnapshot&, const policy::Pod&,
             std::span<const policy::NodeState* const>, std::span<double> out) const override {
    for (auto& x : out) x = 0;
  }
  int chooseGpu(const policy::ClusterSnapshot&, const policy::Pod& pod,
                const policy::NodeState& node) const override {
    during_(calls_++);
    return node.bestFitGpu(pod.gpuShare);
  }
  int calls() const { return calls_; }

 private:
  std::function<void(int)> during_;
  mutable std::atomic<int> calls_{0};
};

class MirrorBindTest : public ::testing::Test {
 protected:
  MirrorBindTest() : clock_(std::make_shared<testing::ManualClock>()), mirror_(clock_) {
    QuotaConfig quota;
    quota.queues = {MakeQueue("a").deserved(32)};
    mirror_.setQuotaConfig(quota);
  }
  ~MirrorBindTest() override { joinOthers(); }

  // Runs `act` on another thread, as another request or the watch would, and waits for it up to
  // `patience`. False if it had to wait longer: the mirror was locked. Joined by joinOthers(), so
  // a decision under the lock does not deadlock the test.
  bool meanwhile(std::function<void()> act, std::chrono::milliseconds patience = 10s) {
    auto other = std::async(std::launch::async, std::move(act));
    const bool done = other.wait_for(patience) == std::future_status::ready;
    std::lock_guard lock(othersMu_);
    others_.push_back(std::move(other));
    return done;
  }
  void joinOthers() {
    std::lock_guard lock(othersMu_);
    for (auto& o : others_) o.wait();
    others_.clear();
  }

  std::shared_ptr<testing::ManualClock> clock_;
  Mirror mirror_;
  std::mutex othersMu_;
  std::vector<std::future<void>> others_;
};

TEST_F(MirrorBindTest, TheDecisionRunsOutsideTheLock) {
  mirror_.upsertNode(MakeNode("n1").gpus(2));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  bool readerGotIn = false;
  ActingScorer scorer([&](int) {
    // Another thread reads the mirror meanwhile: it must not wait for the bind to finish.
    readerGotIn = meanwhile([&] { mirror_.findPod("uid-a-p"); });
  });
  auto r = mirror_.assume("uid-a-p", "n1", scorer);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(readerGotIn);
  EXPECT_EQ(scorer.calls(), 1);
}

TEST_F(MirrorBindTest, AChangeWhileDecidingIsDecidedAgainOnTheNewState) {
  mirror_.upsertNode(MakeNode("n1").gpus(2));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  ActingScorer scorer([&](int call) {
    // The first decision picks GPU 0 (best fit: both empty, lowest index); meanwhile the watch
    // shows a pod that took most of it.
    if (call == 0) {
      meanwhile([&] { mirror_.upsertPod(MakePod("a", "x").share(0.75).gpuIndex(0).on("n1")); });
    }
  });
  auto r = mirror_.assume("uid-a-p", "n1", scorer);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(scorer.calls(), 2);
  EXPECT_EQ(r->gpuIndex, 1);
  EXPECT_EQ(mirror_.findPod("uid-a-p")->gpuIndex, 1);
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->gpuUsed(0), 750);
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->gpuUsed(1), 500);
}

TEST_F(MirrorBindTest, AChangeThatTakesTheRoomTurnsTheAnswerIntoARefusal) {
  mirror_.upsertNode(MakeNode("n1").gpus(1));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  ActingScorer scorer([&](int call) {
    if (call == 0) meanwhile([&] { mirror_.upsertPod(MakePod("a", "x").share(0.75).on("n1")); });
  });
  auto r = mirror_.assume("uid-a-p", "n1", scorer);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("pod a/p no longer fits on node n1: ", 0), 0u) << r.error();
  EXPECT_EQ(scorer.calls(), 1);  // the second decision refused before choosing a GPU
  EXPECT_FALSE(mirror_.isAssumed("uid-a-p"));
  EXPECT_TRUE(mirror_.findPod("uid-a-p")->nodeName.empty());
}

TEST_F(MirrorBindTest, ChangesThatNeverStopCannotStarveABind) {
  mirror_.upsertNode(MakeNode("n1").gpus(4));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  int lockedOut = 0;
  ActingScorer scorer([&](int call) {
    const bool done = meanwhile(
        [this, call] {
          mirror_.upsertPod(MakePod("a", "w" + std::to_string(call)).gpus(0).on("n1"));
        },
        500ms);
    if (!done) ++lockedOut;
  });
  auto r = mirror_.assume("uid-a-p", "n1", scorer);
  joinOthers();
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(mirror_.isAssumed("uid-a-p"));
  // Every optimistic decision was overtaken by a change; the last one held the lock, so the
  // change it started waited for it.
  EXPECT_GE(lockedOut, 1);
  EXPECT_LE(scorer.calls(), 10);
}

TEST_F(MirrorBindTest, ConcurrentBindsNeverOvercommitANode) {
  mirror_.upsertNode(MakeNode("n1").gpus(8));
  mirror_.upsertNode(MakeNode("n2").gpus(8));
  constexpr int kPods = 16;
  for (int i = 0; i < kPods; ++i)
    mirror_.notePending(MakePod("a", "p" + std::to_string(i)).gpus(1));
  std::atomic<bool> stop{false};
  std::thread watch([&] {  // unrelated churn: binds race with it
    for (int i = 0; !stop; ++i) {
      mirror_.upsertPod(MakePod("a", "churn").gpus(0).on("n2"));
      mirror_.deletePod("uid-a-churn");
      if (i % 64 == 0) std::this_thread::yield();
    }
  });
  std::atomic<int> bound{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> binders;
  for (int t = 0; t < 4; ++t) {
    binders.emplace_back([&, t] {
      for (int i = t; i < kPods; i += 4) {
        auto r = mirror_.assume("uid-a-p" + std::to_string(i), "n1");
        if (r.ok()) {
          ++bound;
        } else if (r.error().find("no longer fits on node n1") != std::string::npos) {
          ++refused;
        }
      }
    });
  }
  for (auto& b : binders) b.join();
  stop = true;
  watch.join();
  EXPECT_EQ(bound, 8);
  EXPECT_EQ(refused, 8);
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->used(), gpus(8));
}

TEST_F(MirrorBindTest, SnapshotsTellAssumedPodsFromConfirmedOnes) {
  mirror_.upsertNode(MakeNode("n1").gpus(4));
  mirror_.notePending(MakePod("a", "p").gpus(1));
  ASSERT_TRUE(mirror_.assume("uid-a-p", "n1").ok());
  EXPECT_TRUE(mirror_.isAssumed("uid-a-p"));
  EXPECT_TRUE(mirror_.snapshot()->isProvisional("uid-a-p"));
  mirror_.confirm("uid-a-p");
  EXPECT_FALSE(mirror_.isAssumed("uid-a-p"));
  EXPECT_FALSE(mirror_.snapshot()->isProvisional("uid-a-p"));
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->used(), gpus(1));
}

}  // namespace
}  // namespace gpufair::state
