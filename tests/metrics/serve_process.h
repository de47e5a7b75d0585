// Runs the real `gpufair` binary for end-to-end tests: `serve` in the background with its stdout
// collected line by line, and one-shot commands (top, explain) with their output.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpufair::metrics::testsupport {

// A child process whose stdout (and stderr) lines are collected by a reader thread.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    reader_ = std::thread([this, fd = fds[0]] {
      std::string partial;
      char buffer[4096];
      for (;;) {
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n <= 0) break;
        partial.append(buffer, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
          std::lock_guard lock(mu_);
          lines_.push_back(partial.substr(0, nl));
          partial.erase(0, nl + 1);
          changed_.notify_all();
        }
      }
      close(fd);
      std::lock_guard lock(mu_);
      if (!partial.empty()) lines_.push_back(partial);
      ended_ = true;
      changed_.notify_all();
    });
  }
  ~ServeProcess() { stop(); }

  // Waits until a line satisfies `match`; returns it, or "" on timeout or exit.
  std::string waitFor(const std::function<bool(const std::string&)>& match,
                      std::chrono::seconds timeout = std::chrono::seconds(20)) {
    std::unique_lock lock(mu_);
    std::size_t seen = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      for (; seen < lines_.size(); ++seen) {
        if (match(lines_[seen])) return lines_[seen];
      }
      if (ended_ || changed_.wait_until(lock, deadline) == std::cv_status::timeout) return "";
    }
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // SIGTERM, then wait; returns the exit status.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (reader_.joinable()) reader_.join();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;  // GUARDED_BY(mu_)
  bool ended_ = false;              // GUARDED_BY(mu_)
};

struct CommandResult {
  int exitCode = -1;
  std::string output;  // stdout and stderr
};

// Runs a command line to its end (arguments are passed through the shell: keep them simple).
inline CommandResult runCommand(const std::string& commandLine) {
  CommandResult result;
  FILE* pipe = popen((commandLine + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace gpufair::metrics::testsupport
