#include "gpufair/k8s/reflector.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>

#include <spdlog/spdlog.h>

#include "gpufair/k8s/api.h"

#include "reflector_decode.h"

namespace gpufair::k8s {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A watch that ends cleanly this soon without a single event is treated as a failure (as
// client-go does), so a server that closes every watch at once is not hammered.
constexpr std::chrono::seconds kVeryShortWatch{1};
constexpr int kMaxListRestarts = 3;  // continue tokens expiring again and again

class Query {
 public:
  explicit Query(const std::string& path) : text_(path) {
    separator_ = path.find('?') == std::string::npos ? '?' : '&';
  }
  Query& add(const char* key, std::string_view value) {
    if (value.empty()) return *this;
    text_ += separator_;
    text_ += key;
    text_ += '=';
    text_ += escapeQueryValue(value);
    separator_ = '&';
    return *this;
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  char separator_;
};

enum class WatchEnd { kStopped, kEnded, kGone, kFailed };

}  // namespace

struct Reflector::State {
  State(KubeClientPtr c, ReflectorOptions o, ReflectorSink& s, ClockPtr k)
      : client(std::move(c)),
        options(std::move(o)),
        sink(s),
        clock(std::move(k)),
        backoff(options.backoffInitial),
        rng(std::random_device{}()) {}

  // Sleeps the next backoff delay (or until stop()); the delay doubles up to backoffMax and
  // starts over after a healthy period of 2 x backoffMax.
  void waitBackoff() {
    auto now = SteadyClock::now();
    if (healthySince && now - *healthySince >= 2 * options.backoffMax) {
      backoff = options.backoffInitial;
    }
    healthySince.reset();
    auto base = std::max<std::int64_t>(1, std::min(backoff, options.backoffMax).count());
    std::uniform_int_distribution<std::int64_t> jitter(base / 2, base);
    auto delay = std::chrono::milliseconds(jitter(rng));
    backoff = std::min(backoff * 2, options.backoffMax);
    std::unique_lock lock(waitMu);
    wake.wait_for(lock, delay, [&] { return stopping.load(); });
  }

  void markHealthy() {
    if (!healthySince) healthySince = SteadyClock::now();
    std::lock_guard lock(statsMu);
    lastHealthy = clock->now();
  }

  void setResourceVersion(const std::string& rv) {
    std::lock_guard lock(statsMu);
    stats.resourceVersion = rv;
  }

  std::optional<std::string> list();
  WatchEnd watch(std::string& rv, std::string& error);

  KubeClientPtr client;
  ReflectorOptions options;
  ReflectorSink& sink;
  ClockPtr clock;

  std::atomic<bool> stopping{false};
  std::atomic<bool> running{false};
  std::atomic<bool> synced{false};
  std::atomic<bool> relisting{false};  // a LIST after the first is needed or under way
  std::atomic<bool> streaming{false};  // a watch answered 2xx and is open
  std::mutex waitMu;
  std::condition_variable wake;

  mutable std::mutex statsMu;
  ReflectorStats stats;   // guarded by statsMu
  Timestamp lastHealthy;  // guarded by statsMu

  // Used by the run() thread only.
  std::chrono::milliseconds backoff;
  std::optional<SteadyClock::time_point> healthySince;
  std::mt19937_64 rng;
  ListDecoder listDecoder;
  WatchDecoder watchDecoder;
};

void ReflectorSink::changed(Change change, std::string_view object, simdjson::dom::element) {
  switch (change) {
    case Change::kAdded:
      return added(object);
    case Change::kModified:
      return modified(object);
    case Change::kDeleted:
      return deleted(object);
  }
}

void ReflectorSink::beginList() {
  gathered_.clear();
}

void ReflectorSink::listPage(std::vector<std::string>& items) {
  gathered_.insert(gathered_.end(), std::make_move_iterator(items.begin()),
                   std::make_move_iterator(items.end()));
}

void ReflectorSink::endList() {
  replace(gathered_);
  gathered_.clear();
  gathered_.shrink_to_fit();
}

// A complete paginated LIST into the sink; the list's resourceVersion, or nullopt (logged).
std::optional<std::string> Reflector::State::list() {
  std::vector<std::string> items;
  std::string continueToken;
  ListPage page;
  int restarts = 0;
  int pages = 0;
  std::size_t listed = 0;
  sink.beginList();
  for (;;) {
    ApiRequest request;
    request.path = Query(options.listPath)
                       .add("limit", options.pageSize > 0 ? std::to_string(options.pageSize) : "")
                       .add("continue", continueToken)
                       .add("labelSelector", options.labelSelector)
                       .add("fieldSelector", options.fieldSelector)
                       .text();
    auto response = client->send(request);
    if (stopping) return std::nullopt;
    if (response.status == 410 && !continueToken.empty() && ++restarts <= kMaxListRestarts) {
      spdlog::info("reflector {}: the list's continue token expired (410); listing again",
                   options.name);
      items.clear();
      continueToken.clear();
      pages = 0;
      listed = 0;
      sink.beginList();
      continue;
    }
    if (!response.ok()) {
      spdlog::warn("reflector {}: list failed: {}", options.name, response.describe());
      return std::nullopt;
    }
    auto decoded = listDecoder.decode(response.body, items);
    if (!decoded) {
      spdlog::warn("reflector {}: cannot decode the list: {}", options.name, decoded.error());
      return std::nullopt;
    }
    ++pages;
    listed += items.size();
    sink.listPage(items);
    items.clear();
    page = std::move(decoded).value();
    if (page.continueToken.empty()) break;
    continueToken = page.continueToken;
  }
  // Counted before the sink replaces its contents, so whoever observes the new contents also
  // sees the count.
  {
    std::lock_guard lock(statsMu);
    ++stats.lists;
    stats.resourceVersion = page.resourceVersion;
  }
  sink.endList();
  relisting = false;
  bool first = !synced.exchange(true);
  markHealthy();
  spdlog::log(first ? spdlog::level::info : spdlog::level::debug,
              "reflector {}: listed {} objects in {} pages at resourceVersion {}", options.name,
              listed, pages, page.resourceVersion);
  return page.resourceVersion;
}

// One WATCH from `rv`, which follows every event; the way it ended (error text for kFailed).
WatchEnd Reflector::State::watch(std::string& rv, std::string& error) {
  ApiRequest request;
  request.path = Query(options.listPath)
                     .add("watch", "1")
                     .add("resourceVersion", rv)
                     .add("allowWatchBookmarks", "true")
                     .add("timeoutSeconds", std::to_string(options.watchTimeout.count()))
                     .add("labelSelector", options.labelSelector)
                     .add("fieldSelector", options.fieldSelector)
                     .text();
  request.batchWindow = options.batchWindow;
  request.onResponse = [this](int status) {
    if (status >= 200 && status < 300) {
      markHealthy();
      streaming = true;
    }
  };
  std::optional<WatchEnd> verdict;
  std::uint64_t events = 0;
  auto started = SteadyClock::now();
  auto onLine = [&](std::string_view line) {
    auto event = watchDecoder.decode(line);
    if (!event) {
      verdict = WatchEnd::kFailed;
      error = "cannot decode a watch event: " + event.error();
      return false;
    }
    if (event->type == "ERROR") {
      verdict = event->code == 410 ? WatchEnd::kGone : WatchEnd::kFailed;
      error = "ERROR event " + std::to_string(event->code) + ": " + event->message;
      return false;
    }
    if (!event->resourceVersion.empty()) rv = event->resourceVersion;
    // Counted before the sink sees the event, so whoever observes its effect also sees the count.
    {
      std::lock_guard lock(statsMu);
      if (event->type != "BOOKMARK") ++stats.events;
      stats.resourceVersion = rv;
      lastHealthy = clock->now();
    }
    if (event->type == "ADDED") {
      sink.changed(ReflectorSink::Change::kAdded, event->object, event->parsed);
    } else if (event->type == "MODIFIED") {
      sink.changed(ReflectorSink::Change::kModified, event->object, event->parsed);
    } else if (event->type == "DELETED") {
      sink.changed(ReflectorSink::Change::kDeleted, event->object, event->parsed);
    } else if (event->type != "BOOKMARK") {
      spdlog::warn("reflector {}: ignoring a watch event of type {}", options.name, event->type);
    }
    ++events;
    return !stopping;
  };
  auto response = client->stream(request, onLine, stopping);
  streaming = false;
  if (stopping) return WatchEnd::kStopped;
  if (verdict) return *verdict;
  if (response.status == 410) {
    error = response.describe();
    return WatchEnd::kGone;
  }
  if (!response.ok()) {
    error = response.describe();
    return WatchEnd::kFailed;
  }
  markHealthy();
  if (events == 0 && SteadyClock::now() - started < kVeryShortWatch) {
    error = "the watch ended at once without events";
    return WatchEnd::kFailed;
  }
  return WatchEnd::kEnded;
}

Reflector::Reflector(KubeClientPtr client, ReflectorOptions options, ReflectorSink& sink,
                     ClockPtr clock)
    : state_(
          std::make_unique<State>(std::move(client), std::move(options), sink, std::move(clock))) {}

Reflector::~Reflector() {
  stop();
}

void Reflector::run() {
  auto& s = *state_;
  if (s.running.exchange(true)) {
    spdlog::error("reflector {}: run() called twice", s.options.name);
    return;
  }
  std::string rv;
  bool needList = true;
  int goneInARow = 0;  // a server answering 410 right after every list is not relisted in a loop
  while (!s.stopping) {
    try {
      if (needList) {
        auto listed = s.list();
        if (!listed) {
          if (!s.stopping) s.waitBackoff();
          continue;
        }
        rv = std::move(*listed);
        needList = false;
      }
      std::string error;
      auto end = s.watch(rv, error);
      goneInARow = end == WatchEnd::kGone ? goneInARow + 1 : 0;
      switch (end) {
        case WatchEnd::kStopped:
          break;
        case WatchEnd::kEnded:
          break;  // timeoutSeconds: watch again at once
        case WatchEnd::kGone:
          s.relisting = true;  // before the count: whoever sees the 410 counted sees this too
          spdlog::info("reflector {}: resourceVersion {} is gone ({}); listing again",
                       s.options.name, rv, error);
          {
            std::lock_guard lock(s.statsMu);
            ++s.stats.gone;
          }
          needList = true;
          if (goneInARow > 1) s.waitBackoff();
          break;
        case WatchEnd::kFailed:
          spdlog::warn("reflector {}: watch failed: {}; watching again from resourceVersion {}",
                       s.options.name, error, rv);
          s.waitBackoff();
          break;
      }
      if (!s.stopping && !needList) {
        std::lock_guard lock(s.statsMu);
        ++s.stats.watchRestarts;
      }
    } catch (const std::exception& e) {
      spdlog::error("reflector {}: {}; listing again", s.options.name, e.what());
      needList = true;
      s.relisting = true;
      s.waitBackoff();
    }
  }
  s.running = false;
}

void Reflector::stop() {
  state_->stopping = true;
  std::lock_guard lock(state_->waitMu);
  state_->wake.notify_all();
}

bool Reflector::synced() const {
  return state_->synced;
}

bool Reflector::consistent() const {
  return state_->synced && !state_->relisting;
}

Timestamp Reflector::lastHealthy() const {
  if (state_->streaming) return state_->clock->now();
  std::lock_guard lock(state_->statsMu);
  return state_->lastHealthy;
}

ReflectorStats Reflector::stats() const {
  std::lock_guard lock(state_->statsMu);
  return state_->stats;
}

}  // namespace gpufair::k8s
