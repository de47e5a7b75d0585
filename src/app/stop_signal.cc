#include "stop_signal.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace gpufair::app {
namespace {

// The write end of the pipe of the StopSignal that owns the handlers (-1: none). A lock-free atomic
// is safe to read in a signal handler.
std::atomic<int> gSignalFd{-1};
static_assert(std::atomic<int>::is_always_lock_free);
// Set by SIGHUP, taken by takeReloadRequest().
std::atomic<bool> gReloadRequested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void onStopSignal(int) {
  const int saved = errno;
  const int fd = gSignalFd.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = ::write(fd, &byte, 1);
  }
  errno = saved;
}

extern "C" void onReloadSignal(int) {
  gReloadRequested.store(true);
}

}  // namespace

StopSignal::StopSignal() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "stop signal pipe");
  }
  readFd_ = fds[0];
  writeFd_ = fds[1];
}

StopSignal::~StopSignal() {
  if (handlersInstalled_) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    gSignalFd.store(-1);
  }
  if (reloadHandlerInstalled_) std::signal(SIGHUP, SIG_DFL);
  ::close(readFd_);
  ::close(writeFd_);
}

void StopSignal::installSignalHandlers() {
  gSignalFd.store(writeFd_);
  handlersInstalled_ = true;
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
}

void StopSignal::installReloadHandler() {
  reloadHandlerInstalled_ = true;
  gReloadRequested.store(false);
  std::signal(SIGHUP, onReloadSignal);
}

bool StopSignal::takeReloadRequest() {
  return gReloadRequested.exchange(false);
}

void StopSignal::request() {
  requested_.store(true);
  const char byte = 1;
  [[maybe_unused]] const ssize_t written = ::write(writeFd_, &byte, 1);  // full pipe: already set
}

bool StopSignal::waitFor(std::chrono::milliseconds timeout) {
  if (requested_.load()) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Rounded up, so that a wait never ends before the deadline.
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const long long ms = std::clamp<long long>(left.count(), 0, 24LL * 3600 * 1000);  // fits int
    pollfd fd{readFd_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(ms));
    if (ready > 0) {
      requested_.store(true);  // the byte stays in the pipe: every later wait returns at once
      return true;
    }
    if (ready < 0 && errno != EINTR) return false;  // cannot wait: a timeout, the loop goes on
    if (ready == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

void runPeriodically(StopSignal& stop, std::chrono::milliseconds period,
                     const std::function<void()>& tick) {
  auto next = std::chrono::steady_clock::now() + period;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(next - std::chrono::steady_clock::now());
    if (stop.waitFor(std::max(left, std::chrono::milliseconds{0}))) return;
    tick();
    next += period;
    // A tick that took longer than a period does not cause a burst of catch-up ticks.
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;
  }
}

}  // namespace gpufair::app
