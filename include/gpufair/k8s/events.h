// EventRecorder: writes core/v1 Events ("why is my pod pending") without ever making the caller
// wait for the API server. record() only queues; a worker thread writes.
//
// Spam control, so that a pending pod offered to /filter every few seconds does not flood the API
// server:
//   - the same (object, reason) is written at most once per dedupInterval (default 5 min); the
//     occurrences in between are counted and added to the next write's count;
//   - a repeat of an Event still alive on the server (aggregateWindow, the API server keeps Events
//     an hour by default) updates its count, lastTimestamp and message instead of creating another;
//   - a global token bucket (default 10/s, burst 50) caps what reaches the queue;
//   - the queue is bounded; when full, record() drops.
// Only writes while the isLeader predicate says so (none: every replica writes).
// Every drop is counted (stats()) for metrics.
//
// Thread-safety: record(), stats(), waitIdle() from any thread. stop() (and the destructor) once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "gpufair/common/clock.h"
#include "gpufair/k8s/api.h"
#include "gpufair/k8s/client.h"

namespace gpufair::k8s {

struct EventRecorderOptions {
  std::string reportingInstance;  // empty: this host's name
  std::size_t queueCapacity = 1000;
  std::chrono::seconds dedupInterval{300};
  std::chrono::seconds aggregateWindow{3600};
  double eventsPerSecond = 10.0;
  double burst = 50.0;
  std::size_t maxTracked = 20'000;  // (object, reason) pairs remembered for dedup and aggregation
  std::chrono::milliseconds drainTimeout{2'000};  // stop() writes what is queued for this long
  std::function<bool()> isLeader;                 // null: always write
};

struct EventRecorderStats {
  std::uint64_t created = 0;             // new Events written
  std::uint64_t updated = 0;             // count updates of an existing Event
  std::uint64_t failed = 0;              // API errors
  std::uint64_t droppedDuplicate = 0;    // same object and reason within dedupInterval
  std::uint64_t droppedRateLimited = 0;  // the token bucket was empty
  std::uint64_t droppedQueueFull = 0;    // the queue was full, or stop() ran out of time
  std::uint64_t skippedNotLeader = 0;    // not the leader when recorded or when written

  std::uint64_t dropped() const { return droppedDuplicate + droppedRateLimited + droppedQueueFull; }
};

class EventRecorder {
 public:
  EventRecorder(KubeClientPtr client, ClockPtr clock, EventRecorderOptions options = {});
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Queues an Event about `object`. Never blocks on the API server. Returns whether it was queued.
  bool record(const ObjectRef& object, EventType type, const EventReason& why, std::string message);
  // Convenience for pods.
  bool recordPod(std::string ns, std::string name, std::string uid, EventType type,
                 const EventReason& why, std::string message);

  // Waits until the queue is empty and nothing is being written, or `timeout` passes.
  bool waitIdle(std::chrono::milliseconds timeout);
  // Writes what is queued (up to drainTimeout), then ends the worker. Later record()s drop.
  void stop();

  EventRecorderStats stats() const;

 private:
  struct Item {
    EventSpec event;
    std::string key;
  };
  struct Tracked {
    Timestamp lastQueued{};
    int suppressed = 0;  // occurrences dropped as duplicates since the last queued one
    std::string eventNs;
    std::string eventName;  // the Event on the server, empty until written
    int count = 0;
    Timestamp created{};
  };

  void work();
  void write(Item& item);
  bool leader() const { return !options_.isLeader || options_.isLeader(); }
  void pruneLocked(Timestamp now);

  KubeClientPtr client_;
  ClockPtr clock_;
  EventRecorderOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Item> queue_;                            // GUARDED_BY(mu_)
  std::unordered_map<std::string, Tracked> tracked_;  // GUARDED_BY(mu_)
  double tokens_;                                     // GUARDED_BY(mu_)
  Timestamp refilled_;                                // GUARDED_BY(mu_)
  bool busy_ = false;                                 // GUARDED_BY(mu_)
  bool stopping_ = false;                             // GUARDED_BY(mu_)
  EventRecorderStats stats_;                          // GUARDED_BY(mu_)
  std::thread worker_;
};

// This host's name (gethostname), or "unknown".
std::string hostName();

}  // namespace gpufair::k8s
