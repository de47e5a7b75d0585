#include "gpufair/sim/time_replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/sim/time_report.h"

#include "sim/sim_testing.h"

namespace gpufair::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

NodeRow node(std::string name, int gpus) {
  return NodeRow{std::move(name), 64000, 1 << 20, gpus, "A", 0};
}

PodRow pod(std::string name, int gpus) {
  return PodRow{std::move(name), 1000, 1024, gpus, gpus > 0 ? 1000 : 0, {}, 0};
}

const WaitStats* waitsOf(const TimeReplayResult& r, const std::string& size) {
  for (const auto& w : r.waits) {
    if (w.size == size) return &w;
  }
  return nullptr;
}

// One 8-GPU node. a (4 GPUs) runs 0-100, c (4 GPUs) 5-50; big (8 GPUs) arrives at 60 for 10 s:
// 4 GPUs are free then, not 8, so it waits until a leaves at 100 and runs 100-110.
TEST(TimeReplay, WaitingPodsStartWhenTheirRoomIsFreed) {
  auto s = scenarioFromRows({node("n", 8)}, {pod("a", 4), pod("big", 8), pod("c", 4)}, "t");
  ASSERT_TRUE(s.ok());
  const std::vector<PodLifetime> life{{0, 100}, {60, 70}, {5, 50}};
  TimeReplayOptions options;
  options.scorer = "bestfit";
  options.samples = 110;
  auto r = replayOverTime(*s, life, options);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->pods, 3u);
  EXPECT_EQ(r->placed, 3u);
  EXPECT_EQ(r->span, 110);
  EXPECT_EQ(r->window, 60);
  const WaitStats* big = waitsOf(*r, "8");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->p50, 40);
  EXPECT_EQ(big->neverPlaced, 0u);
  EXPECT_EQ(waitsOf(*r, "4")->max, 0);
  // Samples every second over the window and as long again, up to the last departure known
  // ahead (a's at 100: the wait that pushes big's to 110 is not known then).
  ASSERT_EQ(r->samples.size(), 101u);
  EXPECT_EQ(r->samples[30].time, 30);
  EXPECT_EQ(r->samples[30].allocated, 8000) << "a and c";
  EXPECT_EQ(r->samples[30].pending, 0);
  EXPECT_EQ(r->samples[80].allocated, 4000) << "a";
  EXPECT_EQ(r->samples[80].pending, 8000) << "big waits";
  EXPECT_EQ(r->samples[80].waiting, 1u);
  // Time-weighted over the window: 4 GPUs 0-5, 8 GPUs 5-50, 4 GPUs 50-60, of 8 GPUs.
  EXPECT_NEAR(r->meanAllocatedPercent, 100.0 * (20 + 360 + 40) / (8.0 * 60), 1e-9);
}

// First come, first served: of two waiting pods the earlier gets the room, even when the later
// one is smaller; a pod that never fits is counted apart.
TEST(TimeReplay, RetriesInArrivalOrderAndCountsPodsThatNeverStart) {
  auto s = scenarioFromRows(
      {node("n", 4)}, {pod("hold", 4), pod("first", 3), pod("second", 2), pod("huge", 8)}, "t");
  ASSERT_TRUE(s.ok());
  const std::vector<PodLifetime> life{{0, 10}, {1, 11}, {2, 12}, {3, 4}};
  TimeReplayOptions options;
  options.scorer = "bestfit";
  auto r = replayOverTime(*s, life, options);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->placed, 3u);
  EXPECT_EQ(waitsOf(*r, "other")->p50, 9) << "first (3 GPUs) starts at 10 when hold leaves";
  EXPECT_EQ(waitsOf(*r, "2")->p50, 18) << "second waits for first to leave at 20";
  EXPECT_EQ(waitsOf(*r, "8")->neverPlaced, 1u);
}

// The controller hook: what it evicts waits again and runs its whole duration once more.
TEST(TimeReplay, ControllerEvictionsAreCountedAndThePodRunsAgain) {
  auto s = scenarioFromRows({node("n", 4)}, {pod("victim", 4)}, "t");
  ASSERT_TRUE(s.ok());
  const std::vector<PodLifetime> life{{0, 100}};
  TimeReplayOptions options;
  options.scorer = "bestfit";
  options.controllerPeriod = 50;
  int calls = 0;
  options.controller = [&calls, &s](ServiceCluster& cluster, std::int64_t now) {
    ControllerStep step;
    if (++calls == 2) {  // at t=50
      EXPECT_EQ(now, 50);
      cluster.remove(s->templates[0].uid);
      step.evicted.push_back(s->templates[0].uid);
    }
    return step;
  };
  auto r = replayOverTime(*s, life, options);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->evictions, 1u);
  EXPECT_EQ(r->placed, 1u);
  EXPECT_EQ(r->span, 150) << "runs again from 50 for its 100 s";
}

// resumeRemaining: the replacement runs what was left (here 50 s of 100), nothing is lost. With a
// controller each pod is a Job's: a controller uid, its creation and start times are set.
TEST(TimeReplay, AnEvictedPodMayResumeWhatWasLeft) {
  auto s = scenarioFromRows({node("n", 4)}, {pod("victim", 4)}, "t");
  ASSERT_TRUE(s.ok());
  const std::vector<PodLifetime> life{{0, 100}};
  TimeReplayOptions options;
  options.scorer = "bestfit";
  options.controllerPeriod = 50;
  options.resumeRemaining = true;
  options.movableShare = 1;
  int calls = 0;
  options.controller = [&calls, &s](ServiceCluster& cluster, std::int64_t) {
    ControllerStep step;
    const policy::PodPtr running = cluster.mirror().findPod(s->templates[0].uid);
    if (++calls == 2 && running != nullptr) {  // at t=50
      EXPECT_EQ(running->controller, "job:" + s->templates[0].uid);
      EXPECT_EQ(running->labels.at("gpufair.io/movable"), "true");
      EXPECT_EQ(running->started, Timestamp(std::chrono::seconds(0)));
      cluster.remove(running->uid);
      step.evicted.push_back(running->uid);
    }
    return step;
  };
  auto r = replayOverTime(*s, life, options);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->evictions, 1u);
  EXPECT_EQ(r->span, 100) << "runs its last 50 s from 50";
  EXPECT_EQ(r->lostGpuSeconds, 0);
  EXPECT_EQ(r->neverRestarted, 0u);
  EXPECT_EQ(r->restartMax, 0) << "restarted at once on the freed node";
}

// Inflating adds copies of drawn pods (shape and duration) at drawn creation times; the offered
// load grows about as much.
TEST(TimeReplay, InflatedArrivalsKeepShapesAndDurations) {
  auto s = scenarioFromRows({node("n", 8)}, {pod("a", 1), pod("b", 2), pod("c", 4)}, "t");
  ASSERT_TRUE(s.ok());
  std::vector<PodLifetime> life{{0, 10}, {20, 40}, {40, 80}};
  const double before = offeredLoadAt(*s, life, 1);
  Scenario inflated = *s;
  inflateArrivals(inflated, life, 4, 7);
  ASSERT_EQ(inflated.templates.size(), 12u);
  ASSERT_EQ(life.size(), 12u);
  for (std::size_t k = 3; k < 12; ++k) {
    const policy::Pod& p = inflated.templates[k];
    EXPECT_THAT(p.name, HasSubstr("-x" + std::to_string(k - 2)));
    const std::string base = p.name.substr(0, 1);
    const std::size_t from = base == "a" ? 0 : base == "b" ? 1 : 2;
    EXPECT_EQ(p.gpus, s->templates[from].gpus) << p.name;
    EXPECT_EQ(life[k].deleted - life[k].created, life[from].deleted - life[from].created);
    EXPECT_TRUE(life[k].created == 0 || life[k].created == 20 || life[k].created == 40);
  }
  EXPECT_GT(offeredLoadAt(inflated, life, 1), 2 * before);
  Scenario same = *s;
  std::vector<PodLifetime> unchanged{{0, 10}, {20, 40}, {40, 80}};
  inflateArrivals(same, unchanged, 1, 7);
  EXPECT_EQ(same.templates.size(), 3u);
}

// Sped up, arrivals come closer together while durations stay: the second pod now waits.
TEST(TimeReplay, ASpeedupCompressesArrivalsNotDurations) {
  auto s = scenarioFromRows({node("n", 4)}, {pod("first", 4), pod("second", 4)}, "t");
  ASSERT_TRUE(s.ok());
  const std::vector<PodLifetime> life{{0, 100}, {100, 110}};
  TimeReplayOptions options;
  options.scorer = "bestfit";
  auto real = replayOverTime(*s, life, options);
  ASSERT_TRUE(real.ok()) << real.error();
  EXPECT_EQ(waitsOf(*real, "4")->max, 0);
  options.arrivalSpeedup = 2;
  auto fast = replayOverTime(*s, life, options);
  ASSERT_TRUE(fast.ok()) << fast.error();
  EXPECT_EQ(waitsOf(*fast, "4")->max, 50) << "arrives at 50, starts at 100";
  EXPECT_EQ(fast->span, 110);
  // The offered load: the mean demand over the arrivals' window. Here first fills the window at
  // any speedup; with a short first pod the window must shrink to its 10 s: speedup 9.
  EXPECT_NEAR(offeredLoadAt(*s, life, 1), 1.0, 1e-12);
  const std::vector<PodLifetime> sparse{{0, 10}, {90, 100}};
  EXPECT_NEAR(offeredLoadAt(*s, sparse, 1), 10.0 / 90, 1e-12);
  EXPECT_NEAR(arrivalSpeedupFor(*s, sparse, 1.0), 9.0, 1e-6);
  EXPECT_NEAR(arrivalSpeedupFor(*s, sparse, 0.5), 4.5, 1e-6);
  EXPECT_NEAR(offeredLoadAt(*s, sparse, 9), 1.0, 1e-12);
}

TEST(TimeReplay, MismatchedLifetimesAreAnError) {
  auto s = scenarioFromRows({node("n", 4)}, {pod("p", 1)}, "t");
  ASSERT_TRUE(s.ok());
  TimeReplayOptions options;
  options.scorer = "bestfit";
  auto r = replayOverTime(*s, std::vector<PodLifetime>{}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("0 lifetimes for 1 pods"));
}

// A slice of the openb default list with its times, through fgd: every pod is accounted for, the
// allocation never passes the capacity, and the reports carry every policy.
TEST(TimeReplay, OpenbSlice) {
  if (!testing::haveTrace()) GTEST_SKIP() << "openb trace not found under ../shared";
  const std::string podsCsv = testing::sliceOf("openb_pod_list_default.csv", 10, 600);
  auto nodes = parseNodeCsv(testing::sliceOf("openb_node_list_gpu_node.csv", 40, 30), "nodes");
  auto pods = parsePodCsv(podsCsv, "pods");
  auto life = parsePodLifetimes(podsCsv, "pods");
  ASSERT_TRUE(nodes.ok() && pods.ok() && life.ok());
  auto s = scenarioFromRows(*nodes, *pods, "slice");
  ASSERT_TRUE(s.ok());
  TimeReport report;
  report.source = "slice";
  for (const char* name : {"fgd", "bestfit"}) {
    TimeReplayOptions options;
    options.scorer = name;
    auto r = replayOverTime(*s, *life, options);
    ASSERT_TRUE(r.ok()) << r.error();
    std::size_t counted = 0;
    for (const auto& w : r->waits) counted += w.pods;
    EXPECT_EQ(counted, 600u) << name;
    EXPECT_GT(r->placed, 0u);
    for (const auto& sample : r->samples) {
      EXPECT_LE(sample.allocated, r->capacity) << name << " at " << sample.time;
    }
    EXPECT_GT(r->meanAllocatedPercent, 0.0);
    report.policies.push_back(name);
    report.results.push_back(std::move(r.value()));
  }
  EXPECT_THAT(timeSummary(report), HasSubstr("bestfit"));
  EXPECT_THAT(timeJson(report), HasSubstr("\"schema\": \"gpufair.simulate.time/v1\""));
  const std::string svg = timePlotSvg(report, "");
  EXPECT_THAT(svg, HasSubstr("class=\"curve allocated\" data-policy=\"fgd\""));
  EXPECT_THAT(svg, HasSubstr("class=\"curve pending\" data-policy=\"bestfit\""));
}

}  // namespace
}  // namespace gpufair::sim
