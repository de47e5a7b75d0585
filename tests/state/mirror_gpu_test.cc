// Mirror and fractional GPUs: the GPU index chosen at assume, kept through the watch, dropped when
// forgotten; the learned target workload; fit options in snapshots.
#include <gtest/gtest.h>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/state/mirror.h"

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using namespace std::chrono_literals;
using testing::MakeNode;
using testing::MakePod;

class MirrorGpuTest : public ::testing::Test {
 protected:
  MirrorGpuTest() : clock_(std::make_shared<testing::ManualClock>()), mirror_(clock_) {
    mirror_.upsertNode(MakeNode("n1").gpus(4));
  }
  std::shared_ptr<testing::ManualClock> clock_;
  Mirror mirror_;
};

TEST_F(MirrorGpuTest, AssumeGivesAFractionalPodTheBestFitGpu) {
  mirror_.upsertPod(MakePod("a", "x").share(0.5).gpuIndex(2).on("n1"));
  mirror_.upsertPod(MakePod("a", "y").share(0.25).gpuIndex(3).on("n1"));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  auto r = mirror_.assume("uid-a-p", "n1");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpuIndex, 2);  // GPU 2 has exactly 0.5 left; GPU 3 has 0.75, 0 and 1 are whole
  auto pod = mirror_.findPod("uid-a-p");
  EXPECT_EQ(pod->gpuIndex, 2);
  EXPECT_EQ(pod->annotations.at(kGpuIndexAnnotation), "2");
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->gpuUsed(2), 1000);
  // Asking again (a retried bind) returns the same placement.
  EXPECT_EQ(mirror_.assume("uid-a-p", "n1")->gpuIndex, 2);
}

TEST_F(MirrorGpuTest, WholeGpuPodsHaveNoIndex) {
  mirror_.notePending(MakePod("a", "p").gpus(2));
  auto r = mirror_.assume("uid-a-p", "n1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gpuIndex, -1);
  EXPECT_EQ(mirror_.findPod("uid-a-p")->annotations.count(kGpuIndexAnnotation), 0u);
}

// Always picks the highest GPU with room.
class LastGpu final : public policy::Scorer {
 public:
  std::string_view name() const override { return "last"; }
  void score(const policy::ClusterSnapshot&, const policy::Pod&,
             std::span<const policy::NodeState* const>, std::span<double> out) const override {
    for (auto& x : out) x = 0;
  }
  int chooseGpu(const policy::ClusterSnapshot&, const policy::Pod& pod,
                const policy::NodeState& node) const override {
    for (int g = node.gpuCount() - 1; g >= 0; --g) {
      if (node.gpuFree(g) >= pod.gpuShare) return g;
    }
    return -1;
  }
};

TEST_F(MirrorGpuTest, TheScorersChoiceWins) {
  mirror_.notePending(MakePod("a", "p").share(0.5));
  mirror_.notePending(MakePod("a", "q").share(0.5));
  LastGpu last;
  EXPECT_EQ(mirror_.assume("uid-a-p", "n1", last)->gpuIndex, 3);
  mirror_.setScorer(std::make_shared<LastGpu>());
  EXPECT_EQ(mirror_.assume("uid-a-q", "n1")->gpuIndex, 3);  // 3 still has 0.5 left
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->gpuUsed(3), 1000);
}

TEST_F(MirrorGpuTest, WatchKeepsTheIndexUntilTheAnnotationArrivesForgetDropsIt) {
  mirror_.upsertPod(MakePod("a", "x").share(0.5).gpuIndex(0).on("n1"));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  ASSERT_EQ(mirror_.assume("uid-a-p", "n1")->gpuIndex, 0);
  // The watch shows the binding before the binder's annotation patch.
  mirror_.upsertPod(MakePod("a", "p").share(0.5).on("n1"));
  EXPECT_EQ(mirror_.findPod("uid-a-p")->gpuIndex, 0);
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->gpuUsed(0), 1000);

  mirror_.notePending(MakePod("a", "q").share(0.25));
  ASSERT_EQ(mirror_.assume("uid-a-q", "n1")->gpuIndex, 1);
  mirror_.forget("uid-a-q");
  auto q = mirror_.findPod("uid-a-q");
  EXPECT_EQ(q->gpuIndex, -1);
  EXPECT_EQ(q->annotations.count(kGpuIndexAnnotation), 0u);
  EXPECT_EQ(mirror_.snapshot()->findNode("n1")->gpuUsed(1), 0);
}

TEST_F(MirrorGpuTest, AssumeRechecksPerGpuFit) {
  mirror_.upsertPod(MakePod("a", "x").share(0.5).gpuIndex(0).on("n1"));
  mirror_.upsertPod(MakePod("a", "y").share(0.5).gpuIndex(1).on("n1"));
  mirror_.upsertPod(MakePod("a", "z").gpus(2).on("n1"));
  mirror_.notePending(MakePod("a", "p").gpus(1));
  auto r = mirror_.assume("uid-a-p", "n1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("but only 0 whole"), std::string::npos) << r.error();
}

TEST_F(MirrorGpuTest, LearnsTheWorkloadFromPodsItSees) {
  EXPECT_TRUE(mirror_.snapshot()->workload()->empty());
  mirror_.upsertPod(MakePod("a", "running").gpus(1).on("n1"));
  mirror_.notePending(MakePod("a", "p").share(0.5));
  mirror_.notePending(MakePod("a", "p").share(0.5));  // seen before: not counted again
  mirror_.notePending(MakePod("a", "cpu-only"));      // no GPU: not part of the workload
  auto w = mirror_.snapshot()->workload();
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->shapes().size(), 2u);
  // decay 0.999: the 1-GPU pod weighs 0.999, the half 1.
  for (const auto& s : w->shapes()) {
    const double want = s.shape.isFractional() ? 1.0 / 1.999 : 0.999 / 1.999;
    EXPECT_NEAR(s.weight, want, 1e-12);
  }
  auto fixed = std::make_shared<const policy::Workload>(
      std::vector<policy::WeightedShape>{{policy::PodShape::of(MakePod("a", "w").gpus(8)), 1.0}});
  mirror_.setWorkload(fixed);
  EXPECT_EQ(mirror_.snapshot()->workload(), fixed);
  mirror_.setWorkload(nullptr);
  EXPECT_EQ(mirror_.snapshot()->workload()->shapes().size(), 2u);
}

TEST(MirrorOptionsTest, FitOptionsAndSeedAreInSnapshots) {
  MirrorOptions options;
  options.fit.checkCpuMemory = true;
  options.seed = 7;
  Mirror mirror(std::make_shared<testing::ManualClock>(), options);
  mirror.upsertNode(MakeNode("n1").gpus(1).cpu(4));
  auto snap = mirror.snapshot();
  EXPECT_TRUE(snap->fitOptions().checkCpuMemory);
  EXPECT_EQ(snap->seed(), 7u);
  mirror.notePending(MakePod("a", "p").gpus(1).cpu(8));
  auto r = mirror.assume("uid-a-p", "n1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("pod needs 8 CPUs"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace gpufair::state
