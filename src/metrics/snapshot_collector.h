// SnapshotCollector: a prometheus Collectable that measures the current snapshot at every scrape
// (gpufair_queue_*, gpufair_cluster_*, fragmentation, fairness, per node) and reads the mirror feed
// counters (gpufair_mirror_*, gpufair_watch_*).
// It also keeps the reclaim eviction counts (gpufair_reclaim_evictions_total), so that every
// configured queue has a series even before its first eviction.
// Thread-safety: Collect() and evicted() may run on several threads at once; setResourceCounters
// only before the first scrape.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "gpufair/metrics/metrics.h"

namespace gpufair::metrics::detail {

class SnapshotCollector final : public prometheus::Collectable {
 public:
  explicit SnapshotCollector(SnapshotSource snapshots) : snapshots_(std::move(snapshots)) {}
  void setResourceCounters(ResourceCountersSource source) { counters_ = std::move(source); }
  void setWebhookEvents(EventCountersSource source) { webhook_ = std::move(source); }
  void setQuotaHealth(QuotaHealthSource source) { quotaHealth_ = std::move(source); }
  void setTlsStatus(TlsStatusSource source) { tls_ = std::move(source); }
  void evicted(std::string_view queue);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t, std::less<>> evictions_;  // GUARDED_BY(mu_)
  SnapshotSource snapshots_;
  ResourceCountersSource counters_;
  EventCountersSource webhook_;
  QuotaHealthSource quotaHealth_;
  TlsStatusSource tls_;
};

}  // namespace gpufair::metrics::detail
