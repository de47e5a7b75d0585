// The round loop of the leader's controllers (reclaim, consolidation): a thread that runs one
// round, then waits `period` or until stopped, and so on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpufair::app {

// Thread-safety: start() and stop() may be called from any thread; stop() more than once, and from
// within a round (it then does not join its own thread). A stopped loop does not start again.
// An exception out of a round is passed to `onError` (with its what()) and the loop goes on.
class PeriodicLoop {
 public:
  PeriodicLoop(std::chrono::milliseconds period, std::function<void()> round,
               std::function<void(const std::string&)> onError);
  ~PeriodicLoop();  // stop()
  PeriodicLoop(const PeriodicLoop&) = delete;
  PeriodicLoop& operator=(const PeriodicLoop&) = delete;

  void start();  // nothing when running or stopped
  void stop();   // wakes the wait, then joins after the round in progress

 private:
  void run();

  const std::chrono::milliseconds period_;
  const std::function<void()> round_;
  const std::function<void(const std::string&)> onError_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace gpufair::app
