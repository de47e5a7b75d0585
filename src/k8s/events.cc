#include "gpufair/k8s/events.h"

#include <algorithm>
#include <optional>

#include <limits.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpufair/common/thread_name.h"

namespace gpufair::k8s {

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

EventRecorder::EventRecorder(KubeClientPtr client, ClockPtr clock, EventRecorderOptions options)
    : client_(std::move(client)),
      clock_(std::move(clock)),
      options_(std::move(options)),
      tokens_(options_.burst),
      refilled_(clock_->now()) {
  if (options_.reportingInstance.empty()) options_.reportingInstance = hostName();
  worker_ = std::thread([this] {
    nameThisThread("events");
    work();
  });
}

EventRecorder::~EventRecorder() {
  stop();
}

bool EventRecorder::recordPod(std::string ns, std::string name, std::string uid, EventType type,
                              const EventReason& why, std::string message) {
  ObjectRef pod{"Pod", "v1", std::move(ns), std::move(name), std::move(uid), ""};
  return record(pod, type, why, std::move(message));
}

bool EventRecorder::record(const ObjectRef& object, EventType type, const EventReason& why,
                           std::string message) {
  if (!leader()) {
    std::lock_guard lock(mu_);
    ++stats_.skippedNotLeader;
    return false;
  }
  std::string key = object.kind + '/' + object.ns + '/' + object.name + '/' + object.uid + '/' +
                    object.resourceVersion + '\x1f' + why.reason;
  std::lock_guard lock(mu_);
  if (stopping_) {
    ++stats_.droppedQueueFull;
    return false;
  }
  const Timestamp now = clock_->now();
  auto it = tracked_.find(key);
  if (it != tracked_.end() && now - it->second.lastQueued < options_.dedupInterval) {
    ++it->second.suppressed;
    ++stats_.droppedDuplicate;
    return false;
  }
  if (now > refilled_) {
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    tokens_ = std::min(options_.burst, tokens_ + elapsed * options_.eventsPerSecond);
    refilled_ = now;
  }
  const bool limited = tokens_ < 1.0;
  if (limited || queue_.size() >= options_.queueCapacity) {
    ++(limited ? stats_.droppedRateLimited : stats_.droppedQueueFull);
    if (it != tracked_.end()) ++it->second.suppressed;
    return false;
  }
  tokens_ -= 1.0;
  if (it == tracked_.end()) {
    if (tracked_.size() >= options_.maxTracked) pruneLocked(now);
    it = tracked_.emplace(key, Tracked{}).first;
  }
  Tracked& tracked = it->second;
  tracked.lastQueued = now;
  EventSpec event;
  event.object = object;
  event.type = type;
  event.reason = why.reason;
  event.action = why.action;
  event.message = std::move(message);
  event.reportingInstance = options_.reportingInstance;
  event.count = 1 + tracked.suppressed;
  event.firstTimestamp = now;
  event.lastTimestamp = now;
  tracked.suppressed = 0;
  queue_.push_back(Item{std::move(event), std::move(key)});
  wake_.notify_one();
  return true;
}

void EventRecorder::pruneLocked(Timestamp now) {
  const auto keep =
      std::max<std::chrono::seconds>(options_.dedupInterval, options_.aggregateWindow);
  std::erase_if(tracked_, [&](const auto& entry) { return now - entry.second.lastQueued >= keep; });
  if (tracked_.size() < options_.maxTracked) return;
  std::erase_if(tracked_, [&](const auto& entry) {
    return now - entry.second.lastQueued >= options_.dedupInterval;
  });
  if (tracked_.size() >= options_.maxTracked) {
    spdlog::warn("event recorder tracks {} objects; forgetting them all", tracked_.size());
    tracked_.clear();
  }
}

void EventRecorder::work() {
  std::unique_lock lock(mu_);
  std::optional<std::chrono::steady_clock::time_point> deadline;
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_ && !deadline) deadline = std::chrono::steady_clock::now() + options_.drainTimeout;
    if (queue_.empty()) break;  // stopping, and nothing left to write
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
      spdlog::warn("event recorder stopping: dropping {} queued events", queue_.size());
      stats_.droppedQueueFull += queue_.size();
      queue_.clear();
      break;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    write(item);
    lock.lock();
    busy_ = false;
    idle_.notify_all();
  }
  idle_.notify_all();
}

void EventRecorder::write(Item& item) {
  if (!leader()) {
    std::lock_guard lock(mu_);
    ++stats_.skippedNotLeader;
    return;
  }
  std::string ns;
  std::string name;
  int count = 0;
  Timestamp created{};
  {
    std::lock_guard lock(mu_);
    if (auto it = tracked_.find(item.key); it != tracked_.end()) {
      ns = it->second.eventNs;
      name = it->second.eventName;
      count = it->second.count;
      created = it->second.created;
    }
  }
  const EventSpec& event = item.event;
  const Timestamp now = event.lastTimestamp;
  if (!name.empty() && now - created < options_.aggregateWindow) {
    const int next = count + event.count;
    bool notFound = false;
    Status updated = updateEvent(*client_, ns, name, next, now, event.message, &notFound);
    std::lock_guard lock(mu_);
    if (updated.isOk()) {
      ++stats_.updated;
      if (auto it = tracked_.find(item.key); it != tracked_.end()) it->second.count = next;
      return;
    }
    if (!notFound) {
      ++stats_.failed;
      spdlog::warn("{}", updated.reason());
      return;
    }
  }
  auto written = createEvent(*client_, event);
  std::lock_guard lock(mu_);
  if (!written) {
    ++stats_.failed;
    spdlog::warn("{}", written.error());
    return;
  }
  ++stats_.created;
  if (auto it = tracked_.find(item.key); it != tracked_.end()) {
    it->second.eventNs = eventNamespace(event.object);
    it->second.eventName = *written;
    it->second.count = event.count;
    it->second.created = now;
  }
}

bool EventRecorder::waitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

void EventRecorder::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

EventRecorderStats EventRecorder::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace gpufair::k8s
