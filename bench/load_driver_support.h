// What the load driver (load_driver.cc) needs besides its scheduling loop: a keep-alive HTTP/1.1
// client (one connection, as kube-scheduler's Go transport reuses one per goroutine), the gpufair
// child process (started, its webhook port read from its start-up banner, its CPU time and
// resident memory read from /proc, stopped), kube-scheduler's binding workers, and percentiles.
// Thread-safety: a KeepAliveClient belongs to one thread; GpufairChild is used from the main
// thread only; Binders says its own below.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// Writes dir/kubeconfig for gpufair serve --kubeconfig: the API server at serverUrl with a Bearer
// token; with caPem (an https serverUrl) also dir/ca.crt, named as its certificate-authority.
// Returns the kubeconfig's path.
std::string writeKubeconfig(const std::string& serverUrl, const std::string& caPem,
                            const std::string& dir);

// CPU time (user + system, and system alone), context switches summed over the threads alive at
// the time, and resident memory of a process, from /proc/<pid>/stat, status and task/*/status.
// /proc/<pid>/stat gives CPU time in clock ticks (10 ms): ±10 µs per pod over a run of 1,000
// pods. The threads' schedstat gives their time on a CPU in nanoseconds (the same sum the kernel
// scales utime + stime to), for the threads alive at the time.
struct ProcessUsage {
  double cpuSeconds = 0;
  double systemSeconds = 0;
  double threadsOnCpuSeconds = 0;  // task/*/schedstat, summed; 0 when the kernel has none
  std::vector<long> threadIds;     // sorted
  long voluntarySwitches = 0;      // the thread slept (waited for input, a lock, a timer)
  long involuntarySwitches = 0;    // the thread was preempted
  double rssMiB = 0;
  double peakRssMiB = 0;  // VmHWM
};
ProcessUsage processUsage(pid_t pid);

// The gpufair binary with `args` (e.g. serve --kubeconfig FILE --listen 127.0.0.1:0), or the limit
// server, its stdout and stderr (banner and log) written to logFile, which waitForPort() reads for
// gpufair's webhook URL.
class GpufairChild {
 public:
  GpufairChild(const std::string& binary, const std::vector<std::string>& args,
               const std::string& logFile);
  ~GpufairChild();  // SIGTERM, then waits
  GpufairChild(const GpufairChild&) = delete;
  GpufairChild& operator=(const GpufairChild&) = delete;

  pid_t pid() const { return pid_; }
  // Whether the child has ended (reaped here; the log file says why).
  bool exited();
  // The webhook port from the banner; throws when the child exits or says nothing in `timeout`.
  std::uint16_t waitForPort(std::chrono::seconds timeout);

 private:
  pid_t pid_ = -1;
  int stdoutFd_ = -1;
  std::string logFile_;
};

// One pod's timings, in microseconds, filled by the scheduling loop and the binder.
struct PodTiming {
  double filter = 0;
  double prioritize = 0;
  double bind = 0;
  bool prioritized = false;
  bool bound = false;
};

struct BindJob {
  int pod = 0;
  int node = 0;
  std::string body;  // ExtenderBindingArgs
};

// kube-scheduler's binding goroutines: POST /bind on a pool of workers, each on its own keep-alive
// connection. A failed bind gives the pod's GPU back to `freeGpus` (kube-scheduler forgets the
// assumed pod). Thread-safety: submit() and finish() from one thread; the workers write
// timings[job.pod] (one job per pod) and freeGpus under freeMu.
class Binders {
 public:
  Binders(std::uint16_t port, int workers, std::vector<PodTiming>& timings,
          std::vector<int>& freeGpus, std::mutex& freeMu);
  ~Binders();
  Binders(const Binders&) = delete;
  Binders& operator=(const Binders&) = delete;

  void submit(BindJob job);
  // Waits until every job submitted is done and the workers have ended.
  void finish();
  int failures() const { return failures_.load(); }
  std::string firstError() const;

 private:
  void work(std::uint16_t port);

  std::vector<PodTiming>& timings_;
  std::vector<int>& freeGpus_;
  std::mutex& freeMu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<BindJob> queue_;  // GUARDED_BY(mu_)
  bool done_ = false;          // GUARDED_BY(mu_)
  std::string firstError_;     // GUARDED_BY(freeMu_)
  std::atomic<int> failures_{0};
  std::vector<std::thread> threads_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read, closed), for a child
// that takes its port as an argument (the limit server).
std::uint16_t freePort();

// The q-quantile (0..1) of `values` (sorted in place); 0 when empty.
double quantile(std::vector<double>& values, double q);

}  // namespace gpufair::bench
