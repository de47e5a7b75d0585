// The cpprestsdk implementation of KubeClient. One http_client (one connection pool) per server;
// per-request deadlines and watch cancellation go through pplx cancellation tokens, which close the
// connection. A streamed body is read from cpprest's producer/consumer buffer as chunks arrive.
#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>

#include <cpprest/http_client.h>
#include <cpprest/producerconsumerstream.h>
#include <nlohmann/json.hpp>
#include <pplx/threadpool.h>

#include "gpufair/k8s/client.h"

#include "client_auth.h"

namespace gpufair::k8s {
namespace {

namespace http = web::http;
using Traits = concurrency::streams::streambuf<std::uint8_t>::traits;
using SteadyClock = std::chrono::steady_clock;

// cpprest's own timeout is an inactivity timeout per connection; request deadlines are ours. It
// bounds how long a watch may stay silent before the connection is considered dead.
constexpr std::chrono::seconds kIdleTimeout{600};
constexpr std::chrono::milliseconds kPollSlice{100};
constexpr std::chrono::seconds kCancelGrace{5};
constexpr std::size_t kReadChunk = 64 * 1024;
// cpprestsdk runs every request's completions on one shared pool, 40 threads by default. gpufair
// never blocks a pool thread (callers wait on their own threads, see TaskWaiter), so a few do;
// forty threads woken in turn for each answer cost more CPU than the requests themselves
// (bench/RESULTS.md, load driver).
constexpr std::size_t kPoolThreads = 4;

// Sizes cpprest's pool before its first use; once per process. A pool some other code created
// first stays as it is.
void sizeThreadPool() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      crossplat::threadpool::initialize_with_threads(kPoolThreads);
    } catch (const std::exception&) {
    }
  });
}

enum class WaitResult { kDone, kTimedOut, kCancelled };

// Waits for a pplx task, in one or more steps (a deadline, then a grace period after cancelling).
// One continuation per task, attached on construction, wakes every step: when until() says
// kDone, that continuation has run, so nothing of ours is left queued on cpprest's pool.
template <typename T>
class TaskWaiter {
 public:
  explicit TaskWaiter(const pplx::task<T>& task) : signal_(std::make_shared<Signal>()) {
    task.then([signal = signal_](const pplx::task<T>& done) {
      try {
        done.wait();  // observes a failure: pplx aborts on exceptions nobody looked at
      } catch (...) {
      }
      std::lock_guard lock(signal->mu);
      signal->done = true;
      signal->cv.notify_all();
    });
  }

  // Until the task is done, `deadline`, or `*cancel` becomes true (checked every 100 ms).
  WaitResult until(SteadyClock::time_point deadline, const std::atomic<bool>* cancel = nullptr) {
    std::unique_lock lock(signal_->mu);
    while (!signal_->done) {
      if (cancel != nullptr && cancel->load()) return WaitResult::kCancelled;
      auto now = SteadyClock::now();
      if (now >= deadline) return WaitResult::kTimedOut;
      signal_->cv.wait_until(lock, std::min(deadline, now + kPollSlice));
    }
    return WaitResult::kDone;
  }

 private:
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  std::shared_ptr<Signal> signal_;
};

SteadyClock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return SteadyClock::time_point::max();
  return SteadyClock::now() + timeout;
}

std::string millis(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

class CpprestKubeClient final : public KubeClient {
 public:
  CpprestKubeClient(const ClientConfig& config, std::shared_ptr<const TlsMaterial> tls)
      : server_(config.server), tokens_(config.token, config.tokenFile) {
    http::client::http_client_config settings;
    settings.set_timeout(kIdleTimeout);
    settings.set_validate_certificates(!config.insecureSkipTlsVerify);
    settings.set_proxy(web::web_proxy(web::web_proxy::disabled));
    if (tls) {
      settings.set_ssl_context_callback(
          [tls](boost::asio::ssl::context& context) { tls->configure(context); });
    }
    client_ = std::make_unique<http::client::http_client>(server_, settings);
  }

  Status init() { return tokens_.init(); }

  ApiResponse send(const ApiRequest& request) override {
    auto response = sendOnce(request);
    if (response.status == 401 && tokens_.refresh()) response = sendOnce(request);
    return response;
  }

  ApiResponse stream(const ApiRequest& request, const LineHandler& onLine,
                     const std::atomic<bool>& cancel) override {
    auto response = streamOnce(request, onLine, cancel);
    if (response.status == 401 && tokens_.refresh()) response = streamOnce(request, onLine, cancel);
    return response;
  }

  std::string server() const override { return server_; }

 private:
  http::http_request message(const ApiRequest& request) {
    http::http_request msg(request.method);
    msg.set_request_uri(request.path);
    msg.headers().add("Accept", "application/json");
    msg.headers().add("User-Agent", "gpufair/0.1");
    auto token = tokens_.current();
    if (!token.empty()) msg.headers().add("Authorization", "Bearer " + token);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      msg.set_body(request.body, request.contentType);
    }
    return msg;
  }

  std::string failure(const ApiRequest& request, const std::string& what) const {
    return request.method + " " + server_ + request.path.substr(0, request.path.find('?')) + ": " +
           what;
  }

  // Reads the rest of a (small) body: a non-2xx answer of stream().
  std::string readBody(http::http_response& response, SteadyClock::time_point deadline) {
    auto body = response.extract_utf8string(true);
    if (TaskWaiter(body).until(deadline) != WaitResult::kDone) return "";
    try {
      return body.get();
    } catch (const std::exception&) {
      return "";
    }
  }

  ApiResponse sendOnce(const ApiRequest& request) {
    ApiResponse out;
    pplx::cancellation_token_source cts;
    pplx::task<std::pair<int, std::string>> task;
    try {
      task = client_->request(message(request), cts.get_token())
                 .then([](http::http_response response) {
                   return response.extract_utf8string(true).then(
                       [status = response.status_code()](std::string body) {
                         return std::make_pair(static_cast<int>(status), std::move(body));
                       });
                 });
    } catch (const std::exception& e) {
      out.transportError = failure(request, e.what());
      return out;
    }
    TaskWaiter waiter(task);
    if (waiter.until(deadlineAfter(request.timeout)) != WaitResult::kDone) {
      cts.cancel();
      waiter.until(SteadyClock::now() + kCancelGrace);
      out.transportError = failure(request, "no answer within " + millis(request.timeout));
      return out;
    }
    try {
      auto [status, body] = task.get();
      out.status = status;
      out.body = std::move(body);
    } catch (const std::exception& e) {
      out.transportError = failure(request, e.what());
    }
    return out;
  }

  ApiResponse streamOnce(const ApiRequest& request, const LineHandler& onLine,
                         const std::atomic<bool>& cancel) {
    ApiResponse out;
    pplx::cancellation_token_source cts;
    pplx::task<http::http_response> task;
    try {
      task = client_->request(message(request), cts.get_token());
    } catch (const std::exception& e) {
      out.transportError = failure(request, e.what());
      return out;
    }
    TaskWaiter waiter(task);
    auto waited = waiter.until(deadlineAfter(request.timeout), &cancel);
    if (waited != WaitResult::kDone) {
      cts.cancel();
      waiter.until(SteadyClock::now() + kCancelGrace);
      out.transportError = failure(request, waited == WaitResult::kCancelled
                                                ? "cancelled"
                                                : "no answer within " + millis(request.timeout));
      return out;
    }
    http::http_response response;
    try {
      response = task.get();
    } catch (const std::exception& e) {
      out.transportError = failure(request, e.what());
      return out;
    }
    out.status = response.status_code();
    if (request.onResponse) request.onResponse(out.status);
    if (out.status < 200 || out.status >= 300) {
      out.body = readBody(response, deadlineAfter(request.timeout));
      return out;
    }
    auto error = readLines(response, onLine, cancel, cts);
    if (!error.empty()) out.transportError = failure(request, error);
    return out;
  }

  // Feeds complete lines to onLine until the body ends, onLine declines, or `cancel`; returns a
  // transport error, or "" when it stopped normally.
  std::string readLines(http::http_response& response, const LineHandler& onLine,
                        const std::atomic<bool>& cancel, pplx::cancellation_token_source& cts) {
    auto body = response.body().streambuf();
    std::string pending;
    std::size_t scanned = 0;
    std::vector<char> chunk(kReadChunk);
    // Calls onLine for each complete line in `pending`; false when onLine asked to stop.
    auto deliver = [&](bool all) {
      std::size_t start = 0;
      for (auto nl = pending.find('\n', scanned); nl != std::string::npos;
           nl = pending.find('\n', start)) {
        std::string_view line(pending.data() + start, nl - start);
        start = nl + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.empty() && !onLine(line)) return false;
      }
      if (all && start < pending.size()) {
        if (!onLine(std::string_view(pending).substr(start))) return false;
        start = pending.size();
      }
      pending.erase(0, start);
      scanned = pending.size();
      return true;
    };
    for (;;) {
      if (cancel) {
        cts.cancel();
        return "";
      }
      if (body.in_avail() == 0) {
        auto next = body.bumpc();  // completes when a byte arrives, at the end, or on error
        TaskWaiter waiter(next);
        if (waiter.until(SteadyClock::time_point::max(), &cancel) != WaitResult::kDone) {
          cts.cancel();
          waiter.until(SteadyClock::now() + kCancelGrace);
          return "";
        }
        Traits::int_type c = 0;
        try {
          c = next.get();
        } catch (const std::exception& e) {
          return std::string("stream broken: ") + e.what();
        }
        if (c == Traits::eof()) {
          deliver(true);
          return "";
        }
        pending += static_cast<char>(c);
      }
      while (auto available = body.in_avail()) {
        auto n = body.getn(reinterpret_cast<std::uint8_t*>(chunk.data()),
                           std::min(available, chunk.size()))
                     .get();
        if (n == 0) break;
        pending.append(chunk.data(), n);
      }
      if (!deliver(false)) {
        cts.cancel();
        return "";
      }
    }
  }

  const std::string server_;
  TokenSource tokens_;
  std::unique_ptr<http::client::http_client> client_;
};

}  // namespace

std::string ApiResponse::describe() const {
  if (!transportError.empty()) return transportError;
  std::string text = "HTTP " + std::to_string(status);
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("message") && json["message"].is_string()) {
    return text + ": " + json["message"].get<std::string>();
  }
  if (body.empty()) return text;
  auto excerpt = body.substr(0, 200);
  std::replace(excerpt.begin(), excerpt.end(), '\n', ' ');
  return text + ": " + excerpt + (body.size() > 200 ? "..." : "");
}

Result<KubeClientPtr> makeKubeClient(const ClientConfig& config) {
  using R = Result<KubeClientPtr>;
  if (config.server.empty()) return R::failure("server: no API server address");
  bool https = config.server.rfind("https://", 0) == 0;
  if (!https && config.server.rfind("http://", 0) != 0) {
    return R::failure("server \"" + config.server + "\" must start with https:// or http://");
  }
  if (!web::uri::validate(config.server)) {
    return R::failure("server \"" + config.server + "\" is not a valid URL");
  }
  sizeThreadPool();
  std::shared_ptr<const TlsMaterial> tls;
  if (https) {
    auto material = TlsMaterial::load(config);
    if (!material) return R::failure(material.error());
    tls = std::make_shared<const TlsMaterial>(std::move(material).value());
  }
  try {
    auto client = std::make_shared<CpprestKubeClient>(config, tls);
    if (auto status = client->init(); !status.isOk()) return R::failure(status.reason());
    return KubeClientPtr(std::move(client));
  } catch (const std::exception& e) {
    return R::failure("cannot create a client for " + config.server + ": " + e.what());
  }
}

}  // namespace gpufair::k8s
