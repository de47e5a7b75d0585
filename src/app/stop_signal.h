// How serve's main loop runs and learns it should stop.
//
// StopSignal: a stop request, from request() or (once installSignalHandlers() was called) SIGINT or
// SIGTERM. The signal handler only writes a byte to a pipe, which is async-signal-safe; waitFor()
// sleeps on that pipe, so a stop ends a wait at once instead of at the next poll.
// runPeriodically(): calls tick() every `period` on the caller's thread until a stop is requested.
// A reload request (SIGHUP, once installReloadHandler() was called) sets a flag only, which the
// main loop takes with takeReloadRequest() at its next tick: re-reading files is no work for a
// signal handler.
//
// Thread-safety: request() and requested() from any thread or a signal handler (request only);
// waitFor() and runPeriodically() from one thread. One StopSignal at a time may own the signal
// handlers; the destructor gives them back (SIG_DFL).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

namespace gpufair::app {

class StopSignal {
 public:
  StopSignal();  // throws std::system_error if no pipe can be made
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // From now on SIGINT and SIGTERM request a stop.
  void installSignalHandlers();
  // From now on SIGHUP requests a reload (see takeReloadRequest).
  void installReloadHandler();
  // Whether SIGHUP arrived since the last call; clears the request.
  bool takeReloadRequest();
  void request();
  // Whether request() was called or a wait has seen a signal's request.
  bool requested() const { return requested_.load(); }
  // Waits up to `timeout` for a stop request; true when one was made (before or during the wait).
  bool waitFor(std::chrono::milliseconds timeout);

 private:
  int readFd_ = -1;
  int writeFd_ = -1;
  bool handlersInstalled_ = false;
  bool reloadHandlerInstalled_ = false;
  std::atomic<bool> requested_{false};
};

// Calls tick() every `period` (measured on the steady clock from the start of the previous tick)
// until `stop` is requested; returns then without another tick. The first tick comes one period
// after the call.
void runPeriodically(StopSignal& stop, std::chrono::milliseconds period,
                     const std::function<void()>& tick);

}  // namespace gpufair::app
