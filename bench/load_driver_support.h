// What the load driver (load_driver.cc) needs besides its scheduling loop: a keep-alive HTTP/1.1
// client (one connection, as kube-scheduler's Go transport reuses one per goroutine), the gpufair
// child process (started, its webhook port read from its start-up banner, its CPU time and
// resident memory read from /proc, stopped), and percentiles.
// Thread-safety: a KeepAliveClient belongs to one thread; GpufairChild is used from the main
// thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

namespace gpufair::bench {

struct HttpAnswer {
  int status = 0;  // 0: the request failed on the wire (error says why)
  std::string body;
  std::string error;
};

// One TCP connection to 127.0.0.1:port, reopened when the server closes it.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(std::uint16_t port);
  ~KeepAliveClient();
  KeepAliveClient(const KeepAliveClient&) = delete;
  KeepAliveClient& operator=(const KeepAliveClient&) = delete;

  HttpAnswer post(const std::string& target, const std::string& body);
  HttpAnswer get(const std::string& target);
  std::uint64_t connectionsOpened() const { return opened_; }

 private:
  HttpAnswer request(bool isPost, const std::string& target, const std::string& body);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t opened_ = 0;
};

// CPU time (user + system) and resident memory of a process, from /proc/<pid>/stat and status.
struct ProcessUsage {
  double cpuSeconds = 0;
  double rssMiB = 0;
  double peakRssMiB = 0;  // VmHWM
};
ProcessUsage processUsage(pid_t pid);

// The gpufair binary with `args` (e.g. serve --kubeconfig FILE --listen 127.0.0.1:0), its stdout
// and stderr (banner and log) written to logFile, which waitForPort() reads for the webhook URL.
class GpufairChild {
 public:
  GpufairChild(const std::string& binary, const std::vector<std::string>& args,
               const std::string& logFile);
  ~GpufairChild();  // SIGTERM, then waits
  GpufairChild(const GpufairChild&) = delete;
  GpufairChild& operator=(const GpufairChild&) = delete;

  pid_t pid() const { return pid_; }
  // The webhook port from the banner; throws when the child exits or says nothing in `timeout`.
  std::uint16_t waitForPort(std::chrono::seconds timeout);

 private:
  pid_t pid_ = -1;
  int stdoutFd_ = -1;
  std::string logFile_;
};

// The q-quantile (0..1) of `values` (sorted in place); 0 when empty.
double quantile(std::vector<double>& values, double q);

}  // namespace gpufair::bench
