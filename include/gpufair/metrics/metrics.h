// Metrics: gpufair's Prometheus metrics (prefix gpufair_), each with HELP text.
//
// Values describing the cluster are computed at scrape time from the snapshot the mirror last
// published (SnapshotSource), so a scrape never holds a lock the webhooks need beyond the mirror's
// brief snapshot() call, and never blocks scheduling:
//   gpufair_queue_{deserved,limit,allocated,over_quota,fair_share,pending}_gpus{queue}
//   gpufair_queue_pending_pods{queue}
//   gpufair_cluster_gpus{state="total|allocated|free"}, gpufair_fragmentation_ratio,
//   gpufair_fragmented_gpus, gpufair_largest_free_block_gpus, gpufair_schedulable_jobs{gpus},
//   gpufair_fairness_index, gpufair_node_free_gpus{node}, gpufair_node_allocatable_gpus{node},
//   gpufair_pending_pods, gpufair_snapshot_generation
// Mirror feed counters, read at scrape time from a ResourceCountersSource (the reflectors):
//   gpufair_mirror_events_total{resource}, gpufair_watch_restarts_total{resource},
//   gpufair_mirror_lists_total{resource}, gpufair_watch_gone_total{resource}
// Counted as things happen (the record* methods):
//   gpufair_extender_requests_total{verb,result}, gpufair_extender_request_duration_seconds{verb}
//   (histogram, buckets 100 us .. 5 s), gpufair_filter_rejections_total{reason},
//   gpufair_reclaim_evictions_total{queue}, gpufair_consolidation_moves_total
// Set by the consolidation loop after each round: gpufair_pods_waiting_on_fragmentation.
// Read at scrape time from sources set before serving: gpufair_mirror_*, gpufair_watch_* (the
// list/watch feed), gpufair_webhook_events_total{event} (the server's limits),
// gpufair_quota_config_valid, and with TLS gpufair_tls_certificate_expiry_seconds (of the
// certificate served to new connections), gpufair_tls_reloads_total,
// gpufair_tls_reload_errors_total. Label values outside the documented sets (verbs, results,
// rejection reasons) are counted as "other", so no caller can make a label unbounded.
//
// Thread-safety: every method is thread-safe; requestObserved, filterRejected and reclaimEvicted
// take no lock held by a scrape for more than a counter update. setResourceCounters must be called
// before serving. Metrics must outlive any MetricsServer serving it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace gpufair::metrics {

using SnapshotSource = std::function<policy::SnapshotPtr()>;

// What one reflector has done since start.
struct ResourceCounters {
  std::string resource;  // "nodes", "pods", ...
  std::uint64_t events = 0;
  std::uint64_t watchRestarts = 0;
  std::uint64_t lists = 0;
  std::uint64_t gone = 0;  // 410 Gone answered by a relist
};
using ResourceCountersSource = std::function<std::vector<ResourceCounters>()>;

// Counts of what the webhook server did at its limits, by event ("body_too_large",
// "read_timeout", ...): gpufair_webhook_events_total{event}.
using EventCountersSource = std::function<std::vector<std::pair<std::string, std::uint64_t>>()>;
// Whether the quota ConfigMaps as they are now are in force (false: a change was rejected and the
// last good config stays); gpufair_quota_config_valid, absent in file mode.
using QuotaHealthSource = std::function<bool()>;
// The webhook server's TLS certificate and its rotation.
struct TlsCertificateStatus {
  double expirySeconds = 0;  // until the served certificate's notAfter; negative once expired
  std::uint64_t reloads = 0;
  std::uint64_t reloadErrors = 0;
};
using TlsStatusSource = std::function<TlsCertificateStatus()>;

// The verb and result label values requestObserved keeps; anything else becomes "other".
inline constexpr std::string_view kVerbs[] = {"filter",         "prioritize",    "preempt",
                                              "bind",           "healthz",       "readyz",
                                              "debug_snapshot", "debug_explain", "unknown"};
inline constexpr std::string_view kResults[] = {
    "ok", "bad_request", "not_found", "method_not_allowed", "unavailable", "error"};
// Rejection reasons kept as labels (api::kRejectionCategories plus what gangs and reservations
// add); anything else becomes "other".
inline constexpr std::string_view kRejectionReasons[] = {
    "quota_limit", "quota_borrow", "unknown_queue", "insufficient_gpus",
    "gpu_model",   "cordoned",     "cpu_memory",    "unknown_node",
    "reserved",    "gang",         "other"};
// Histogram bucket upper bounds of gpufair_extender_request_duration_seconds.
inline constexpr double kDurationBuckets[] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

class Metrics {
 public:
  explicit Metrics(SnapshotSource snapshots);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One finished webhook request (seconds of handling).
  void requestObserved(std::string_view verb, std::string_view result, double seconds);
  // /filter left a pod no node, for this reason category.
  void filterRejected(std::string_view reason);
  // The reclaim controller evicted a borrowed pod of this queue.
  void reclaimEvicted(std::string_view queue);
  // The consolidation loop evicted a pod to move it.
  void consolidationMoved();
  // Pods waiting on fragmentation alone, as the consolidation loop's last round counted them.
  void setWaitingOnFragmentation(int pods);
  // Where mirror feed counters come from (none in file mode). Call before serving.
  void setResourceCounters(ResourceCountersSource source);
  // Where the webhook server's limit counters come from. Call before serving.
  void setWebhookEvents(EventCountersSource source);
  // Where quota-config health comes from (a cluster only). Call before serving.
  void setQuotaHealth(QuotaHealthSource source);
  // Where the TLS certificate's status comes from (with TLS only). Call before serving.
  void setTlsStatus(TlsStatusSource source);

  // Everything in Prometheus' text exposition format (what GET /metrics returns).
  std::string render() const;
  // What a MetricsServer registers.
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufair::metrics
