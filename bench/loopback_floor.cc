// loopback_floor: what the system calls of one scheduled pod cost an extender on this machine,
// with no HTTP, JSON or policy at all: the floor under gpufair's CPU per pod in load_driver.
//
// Two processes on loopback TCP. The measured one (the "extender") does per pod exactly the
// exchanges gpufair does: it answers a /filter-sized request (--filter-bytes, 2,000 node names by
// default) on one connection; on another it takes a /bind-sized request, sends a Binding-sized
// request to the "API server" on a third and answers the bind when that one's response comes; a
// second thread reads a watch-event-sized message from a fourth connection. Its event loop is the
// leanest one: level-triggered epoll, one recv per readable socket, one send per message. The other
// process plays kube-scheduler (a scheduling loop that waits for each filter answer, then hands the
// bind to a binding thread) and the API server (answers each Binding and writes one watch event).
// The extender's CPU (getrusage, user + system) over the run, divided by the pods, is printed.
//
//   build/bench/loopback_floor --pods=20000 [--filter-bytes=28000] [--think-us=150]
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Sizes {
  std::size_t filterRequest = 28'000;  // POST /filter with 2,000 NodeNames, headers included
  std::size_t filterAnswer = 160;      // one node name, headers included
  std::size_t bindRequest = 260;
  std::size_t bindAnswer = 120;
  std::size_t binding = 450;  // POST .../binding with its preconditions
  std::size_t bindingAnswer = 320;
  std::size_t watchEvent = 1'800;  // the pod, now with spec.nodeName
};

void fail(const char* what) {
  std::perror(what);
  std::exit(1);
}

void noDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int listenOn(sockaddr_in& address) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) fail("bind");
  if (listen(fd, 8) != 0) fail("listen");
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return fd;
}

int connectTo(const sockaddr_in& address) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    fail("connect");
  }
  noDelay(fd);
  return fd;
}

int acceptOne(int listener) {
  const int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) fail("accept");
  noDelay(fd);
  return fd;
}

void sendAll(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) fail("send");
    sent += static_cast<std::size_t>(n);
  }
}

// Blocking: reads one message of `size` bytes (the peer sends nothing else meanwhile).
bool readMessage(int fd, std::size_t size, std::vector<char>& buffer) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = recv(fd, buffer.data(), std::min(buffer.size(), size - got), 0);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// Bytes in, whole messages out: how many complete messages of `size` the socket's reads made.
struct Framer {
  std::size_t size;
  std::size_t partial = 0;
  std::size_t add(std::size_t bytes) {
    partial += bytes;
    const std::size_t whole = partial / size;
    partial %= size;
    return whole;
  }
};

// kube-scheduler and the API server. Returns when every pod is bound.
void driveAndServe(const sockaddr_in& extender, int apiListener, const Sizes& sizes, int pods,
                   int thinkUs) {
  const int filterFd = connectTo(extender);
  const int bindFd = connectTo(extender);
  const int bindingFd = acceptOne(apiListener);
  const int watchFd = acceptOne(apiListener);
  std::thread api([&] {
    std::vector<char> buffer(1 << 16);
    const std::string answer(sizes.bindingAnswer, 'a');
    const std::string event(sizes.watchEvent, 'w');
    for (int i = 0; i < pods; ++i) {
      if (!readMessage(bindingFd, sizes.binding, buffer)) return;
      sendAll(bindingFd, answer);
      sendAll(watchFd, event);
    }
  });
  std::mutex mu;
  std::condition_variable ready;
  int toBind = 0;
  std::thread binder([&] {
    std::vector<char> buffer(1 << 16);
    const std::string request(sizes.bindRequest, 'b');
    for (int i = 0; i < pods; ++i) {
      {
        std::unique_lock lock(mu);
        ready.wait(lock, [&] { return toBind > 0; });
        --toBind;
      }
      sendAll(bindFd, request);
      if (!readMessage(bindFd, sizes.bindAnswer, buffer)) return;
    }
  });
  std::vector<char> buffer(1 << 16);
  const std::string request(sizes.filterRequest, 'f');
  for (int i = 0; i < pods; ++i) {
    sendAll(filterFd, request);
    if (!readMessage(filterFd, sizes.filterAnswer, buffer)) break;
    {
      std::lock_guard lock(mu);
      ++toBind;
    }
    ready.notify_one();
    // kube-scheduler's own work for the next pod (its filters over the nodes).
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(thinkUs);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  binder.join();
  api.join();
}

// The measured extender: returns when the drive is over.
void extend(int listener, const sockaddr_in& api, const Sizes& sizes, int pods) {
  const int filterFd = acceptOne(listener);
  const int bindFd = acceptOne(listener);
  const int bindingFd = connectTo(api);
  const int watchFd = connectTo(api);
  std::thread watch([&] {
    std::vector<char> buffer(1 << 16);
    Framer events{sizes.watchEvent};
    std::size_t seen = 0;
    while (seen < static_cast<std::size_t>(pods)) {
      const ssize_t n = recv(watchFd, buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      seen += events.add(static_cast<std::size_t>(n));
    }
  });
  const int epoll = epoll_create1(0);
  for (int fd : {filterFd, bindFd, bindingFd}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
  }
  const std::string filterAnswer(sizes.filterAnswer, 'F');
  const std::string binding(sizes.binding, 'B');
  const std::string bindAnswer(sizes.bindAnswer, 'A');
  Framer filters{sizes.filterRequest}, binds{sizes.bindRequest}, bindings{sizes.bindingAnswer};
  std::vector<char> buffer(1 << 16);
  int bound = 0;
  while (bound < pods) {
    epoll_event ready[4];
    const int n = epoll_wait(epoll, ready, 4, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = ready[i].data.fd;
      const ssize_t got = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (got <= 0) continue;
      const auto bytes = static_cast<std::size_t>(got);
      if (fd == filterFd) {
        for (std::size_t k = filters.add(bytes); k > 0; --k) sendAll(filterFd, filterAnswer);
      } else if (fd == bindFd) {
        for (std::size_t k = binds.add(bytes); k > 0; --k) sendAll(bindingFd, binding);
      } else {
        for (std::size_t k = bindings.add(bytes); k > 0; --k, ++bound) sendAll(bindFd, bindAnswer);
      }
    }
  }
  watch.join();
}

double cpuMicros(const rusage& u) {
  auto us = [](const timeval& t) { return t.tv_sec * 1e6 + t.tv_usec; };
  return us(u.ru_utime) + us(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 20'000;
  int thinkUs = 150;
  Sizes sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string("--") + name + "=";
      return arg.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (const char* v = value("pods")) {
      pods = std::atoi(v);
    } else if (const char* v = value("filter-bytes")) {
      sizes.filterRequest = std::strtoul(v, nullptr, 10);
    } else if (const char* v = value("think-us")) {
      thinkUs = std::atoi(v);
    } else {
      std::fprintf(stderr, "usage: %s [--pods=N] [--filter-bytes=B] [--think-us=U]\n", argv[0]);
      return 2;
    }
  }
  if (pods <= 0 || sizes.filterRequest == 0) {
    std::fprintf(stderr, "--pods and --filter-bytes must be positive\n");
    return 2;
  }
  sockaddr_in extenderAddress{}, apiAddress{};
  const int extenderListener = listenOn(extenderAddress);
  const int apiListener = listenOn(apiAddress);
  const pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    close(extenderListener);
    driveAndServe(extenderAddress, apiListener, sizes, pods, thinkUs);
    _exit(0);
  }
  close(apiListener);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const auto start = std::chrono::steady_clock::now();
  extend(extenderListener, apiAddress, sizes, pods);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  getrusage(RUSAGE_SELF, &after);
  waitpid(child, nullptr, 0);
  const double user = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e6 +
                      (after.ru_utime.tv_usec - before.ru_utime.tv_usec);
  const double total = cpuMicros(after) - cpuMicros(before);
  std::printf(
      "RESULT pods=%d filter_bytes=%zu think_us=%d seconds=%.2f pods_per_s=%.0f "
      "cpu_us_per_pod=%.1f user_us_per_pod=%.1f system_us_per_pod=%.1f "
      "voluntary_switches_per_pod=%.2f\n",
      pods, sizes.filterRequest, thinkUs, seconds, pods / seconds, total / pods, user / pods,
      (total - user) / pods, static_cast<double>(after.ru_nvcsw - before.ru_nvcsw) / pods);
  return 0;
}
