// Polling with a deadline, for tests against FakeApiServer: no fixed sleeps.
#pragma once

#include <chrono>
#include <thread>

namespace gpufair::k8s::fake {

// Polls `condition` every 5 ms until it holds or `timeout` passes; returns its last value.
template <typename Condition>
bool waitUntil(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace gpufair::k8s::fake
