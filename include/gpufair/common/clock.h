// Time enters gpufair through this interface so tests control it. The engine (policy) never reads a
// clock: callers pass the time in.
// Thread-safety: implementations must be safe to call from any thread.
#pragma once

#include <chrono>
#include <memory>

namespace gpufair {

using Timestamp = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};
using ClockPtr = std::shared_ptr<const Clock>;

class SystemClock final : public Clock {
 public:
  Timestamp now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace gpufair
