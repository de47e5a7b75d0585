#include "load_driver_support.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>  // before Boost.Asio, which uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fcntl.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpufair::bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

struct KeepAliveClient::Impl {
  explicit Impl(std::uint16_t p) : port(p), socket(io) {}
  std::uint16_t port;
  net::io_context io;
  tcp::socket socket;
  beast::flat_buffer buffer;
  bool open = false;
};

KeepAliveClient::KeepAliveClient(std::uint16_t port) : impl_(std::make_unique<Impl>(port)) {}
KeepAliveClient::~KeepAliveClient() = default;

HttpAnswer KeepAliveClient::post(const std::string& target, const std::string& body) {
  return request(true, target, body);
}

HttpAnswer KeepAliveClient::get(const std::string& target) {
  return request(false, target, "");
}

HttpAnswer KeepAliveClient::request(bool isPost, const std::string& target,
                                    const std::string& body) {
  HttpAnswer answer;
  // A kept-alive connection the server closed meanwhile fails on first use: retry once anew.
  for (int attempt = 0; attempt < 2; ++attempt) {
    beast::error_code ec;
    if (!impl_->open) {
      impl_->socket = tcp::socket(impl_->io);
      impl_->socket.connect({net::ip::make_address("127.0.0.1"), impl_->port}, ec);
      if (ec) {
        answer.error = "connect: " + ec.message();
        return answer;
      }
      impl_->socket.set_option(tcp::no_delay(true));
      impl_->buffer.clear();
      impl_->open = true;
      ++opened_;
    }
    http::request<http::string_body> req{isPost ? http::verb::post : http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::user_agent, "gpufair-load-driver");
    if (isPost) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    http::write(impl_->socket, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    if (!ec) http::read(impl_->socket, impl_->buffer, parser, ec);
    if (ec) {
      impl_->open = false;
      answer.error = ec.message();
      continue;
    }
    auto res = parser.release();
    answer.status = static_cast<int>(res.result_int());
    answer.body = std::move(res.body());
    answer.error.clear();
    if (!res.keep_alive()) impl_->open = false;
    return answer;
  }
  return answer;
}

std::string writeKubeconfig(const std::string& serverUrl, const std::string& caPem,
                            const std::string& dir) {
  std::string authority;
  if (!caPem.empty()) {
    const std::string caPath = dir + "/ca.crt";
    std::ofstream(caPath) << caPem;
    authority = "\n    certificate-authority: " + caPath;
  }
  const std::string path = dir + "/kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
                      << "clusters:\n- name: fake\n  cluster:\n    server: " << serverUrl
                      << authority
                      << "\ncontexts:\n- name: bench\n  context: {cluster: fake, user: u}\n"
                      << "users:\n- name: u\n  user: {token: bench}\n";
  return path;
}

ProcessUsage processUsage(pid_t pid) {
  ProcessUsage usage;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name "(...)": state is field 3, utime 14, stime 15.
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    double utime = 0;
    double stime = 0;
    for (int i = 3; fields >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) {
        stime = std::stod(field);
        break;
      }
    }
    usage.cpuSeconds = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
    usage.systemSeconds = stime / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    usage.threadIds.push_back(std::stol(task.path().filename().string()));
    std::ifstream schedstat(task.path() / "schedstat");
    double onCpuNs = 0;
    if (schedstat >> onCpuNs) usage.threadsOnCpuSeconds += onCpuNs / 1e9;
    std::ifstream taskStatus(task.path() / "status");
    for (std::string line; std::getline(taskStatus, line);) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        usage.voluntarySwitches += std::stol(line.substr(24));
      } else if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        usage.involuntarySwitches += std::stol(line.substr(27));
      }
    }
  }
  std::sort(usage.threadIds.begin(), usage.threadIds.end());
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) usage.rssMiB = std::stod(line.substr(6)) / 1024.0;
    if (line.rfind("VmHWM:", 0) == 0) usage.peakRssMiB = std::stod(line.substr(6)) / 1024.0;
  }
  return usage;
}

GpufairChild::GpufairChild(const std::string& binary, const std::vector<std::string>& args,
                           const std::string& logFile) {
  stdoutFd_ = ::open(logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (stdoutFd_ < 0) throw std::runtime_error("cannot write " + logFile);
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the driver gone (crash, kill): so is its fake API server
    ::dup2(stdoutFd_, STDOUT_FILENO);
    ::dup2(stdoutFd_, STDERR_FILENO);
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    ::execv(binary.c_str(), raw.data());
    ::_exit(127);
  }
  logFile_ = logFile;
}

GpufairChild::~GpufairChild() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (stdoutFd_ >= 0) ::close(stdoutFd_);
}

bool GpufairChild::exited() {
  int status = 0;
  if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
  return pid_ <= 0;
}

std::uint16_t GpufairChild::waitForPort(std::chrono::seconds timeout) {
  const std::regex banner("serving the extender webhooks on http://127\\.0\\.0\\.1:([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("gpufair exited during start-up; see " + logFile_);
    }
    std::ifstream log(logFile_);
    for (std::string line; std::getline(log, line);) {
      std::smatch match;
      if (std::regex_search(line, match, banner)) {
        return static_cast<std::uint16_t>(std::stoi(match[1]));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("gpufair named no webhook port in time; see " + logFile_);
}

Binders::Binders(std::uint16_t port, int workers, std::vector<PodTiming>& timings,
                 std::vector<int>& freeGpus, std::mutex& freeMu)
    : timings_(timings), freeGpus_(freeGpus), freeMu_(freeMu) {
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this, port] { work(port); });
}

Binders::~Binders() {
  finish();
}

void Binders::submit(BindJob job) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(job));
  cv_.notify_one();
}

void Binders::finish() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::string Binders::firstError() const {
  std::lock_guard lock(freeMu_);
  return firstError_;
}

void Binders::work(std::uint16_t port) {
  KeepAliveClient client(port);
  simdjson::dom::parser parser;
  for (;;) {
    BindJob job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto start = std::chrono::steady_clock::now();
    HttpAnswer answer = client.post("/bind", job.body);
    timings_[job.pod].bind =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::string error = answer.error;
    simdjson::dom::element doc;
    if (answer.status == 200 && !parser.parse(answer.body).get(doc)) {
      std::string_view e;
      if (!doc["Error"].get(e)) error = std::string(e);
    } else if (error.empty()) {
      error = "HTTP " + std::to_string(answer.status);
    }
    if (error.empty()) {
      timings_[job.pod].bound = true;
      continue;
    }
    ++failures_;
    std::lock_guard lock(freeMu_);
    ++freeGpus_[job.node];
    if (firstError_.empty()) firstError_ = error;
  }
}

std::uint16_t freePort() {
  net::io_context io;
  tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

double quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, index == 0 ? 0 : index - 1)];
}

}  // namespace gpufair::bench
