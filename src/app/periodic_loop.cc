#include "periodic_loop.h"

#include <exception>
#include <utility>

namespace gpufair::app {

PeriodicLoop::PeriodicLoop(std::chrono::milliseconds period, std::function<void()> round,
                           std::function<void(const std::string&)> onError)
    : period_(period), round_(std::move(round)), onError_(std::move(onError)) {}

PeriodicLoop::~PeriodicLoop() {
  stop();
}

void PeriodicLoop::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void PeriodicLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void PeriodicLoop::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    try {
      round_();
    } catch (const std::exception& e) {
      if (onError_) onError_(e.what());
    }
    lock.lock();
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

}  // namespace gpufair::app
