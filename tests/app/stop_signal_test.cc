// serve's main loop: a periodic tick that a stop request or SIGTERM ends at once.
#include "stop_signal.h"

#include <atomic>
#include <csignal>
#include <thread>

#include <gtest/gtest.h>

namespace gpufair::app {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(StopSignalTest, AWaitTimesOutWithoutARequest) {
  StopSignal stop;
  const auto start = Clock::now();
  EXPECT_FALSE(stop.waitFor(20ms));
  EXPECT_GE(Clock::now() - start, 20ms);
  EXPECT_FALSE(stop.requested());
}

TEST(StopSignalTest, ARequestEndsAWaitAtOnceAndEveryLaterOne) {
  StopSignal stop;
  std::thread requester([&] {
    std::this_thread::sleep_for(20ms);
    stop.request();
  });
  const auto start = Clock::now();
  EXPECT_TRUE(stop.waitFor(1h));
  EXPECT_LT(Clock::now() - start, 30s);
  requester.join();
  EXPECT_TRUE(stop.requested());
  EXPECT_TRUE(stop.waitFor(1h));  // stays requested
}

TEST(StopSignalTest, SigtermRequestsAStopOnceHandlersAreInstalled) {
  StopSignal stop;
  stop.installSignalHandlers();
  ASSERT_EQ(std::raise(SIGTERM), 0);  // handled: the process goes on
  EXPECT_TRUE(stop.waitFor(10s));
  EXPECT_TRUE(stop.requested());
}

TEST(StopSignalTest, SighupRequestsAReloadOnceAndDoesNotStop) {
  StopSignal stop;
  stop.installReloadHandler();
  EXPECT_FALSE(stop.takeReloadRequest());
  ASSERT_EQ(std::raise(SIGHUP), 0);  // handled: the process goes on
  EXPECT_TRUE(stop.takeReloadRequest());
  EXPECT_FALSE(stop.takeReloadRequest()) << "taken";
  EXPECT_FALSE(stop.waitFor(1ms)) << "a reload is no stop";
}

TEST(RunPeriodicallyTest, TicksEveryPeriodUntilStopped) {
  StopSignal stop;
  std::atomic<int> ticks{0};
  const auto start = Clock::now();
  runPeriodically(stop, 10ms, [&] {
    if (++ticks == 3) stop.request();
  });
  EXPECT_EQ(ticks.load(), 3);  // no tick after the request
  EXPECT_GE(Clock::now() - start, 30ms);
}

TEST(RunPeriodicallyTest, AStopDuringALongPeriodEndsTheLoopWithoutATick) {
  StopSignal stop;
  std::atomic<int> ticks{0};
  std::thread requester([&] {
    std::this_thread::sleep_for(20ms);
    stop.request();
  });
  runPeriodically(stop, 1h, [&] { ++ticks; });
  requester.join();
  EXPECT_EQ(ticks.load(), 0);
}

}  // namespace
}  // namespace gpufair::app
