#include "gpufair/metrics/metrics.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <iterator>
#include <mutex>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "snapshot_collector.h"

namespace gpufair::metrics {
namespace {

// The value itself if `values` lists it, else "other".
template <std::size_t N>
std::string_view bounded(std::string_view value, const std::string_view (&values)[N]) {
  return std::find(std::begin(values), std::end(values), value) != std::end(values) ? value
                                                                                    : "other";
}

template <std::size_t N>
std::size_t indexOf(std::string_view value, const std::string_view (&values)[N]) {
  return static_cast<std::size_t>(std::find(std::begin(values), std::end(values), value) -
                                  std::begin(values));
}

}  // namespace

struct Metrics::Impl {
  explicit Impl(SnapshotSource snapshots)
      : registry(std::make_shared<prometheus::Registry>()),
        collector(std::make_shared<detail::SnapshotCollector>(std::move(snapshots))),
        requests(prometheus::BuildCounter()
                     .Name("gpufair_extender_requests_total")
                     .Help("Webhook requests handled, by verb and result.")
                     .Register(*registry)),
        durations(prometheus::BuildHistogram()
                      .Name("gpufair_extender_request_duration_seconds")
                      .Help("Time to handle one webhook request, by verb.")
                      .Register(*registry)),
        rejections(prometheus::BuildCounter()
                       .Name("gpufair_filter_rejections_total")
                       .Help("Pods /filter left no node, by reason category.")
                       .Register(*registry)) {
    const prometheus::Histogram::BucketBoundaries buckets(std::begin(kDurationBuckets),
                                                          std::end(kDurationBuckets));
    for (std::size_t i = 0; i < std::size(kVerbs); ++i) {
      durationByVerb[i] = &durations.Add({{"verb", std::string(kVerbs[i])}}, buckets);
      // Every verb has an "ok" series from the start, so rate() sees the first request.
      requests.Add({{"verb", std::string(kVerbs[i])}, {"result", "ok"}});
    }
    durationByVerb.back() = &durations.Add({{"verb", "other"}}, buckets);
    for (std::size_t i = 0; i < std::size(kRejectionReasons); ++i) {
      rejectionByReason[i] = &rejections.Add({{"reason", std::string(kRejectionReasons[i])}});
    }
    consolidationMoves = &prometheus::BuildCounter()
                              .Name("gpufair_consolidation_moves_total")
                              .Help("Pods evicted by consolidation to be recreated elsewhere.")
                              .Register(*registry)
                              .Add({});
    waitingOnFragmentation =
        &prometheus::BuildGauge()
             .Name("gpufair_pods_waiting_on_fragmentation")
             .Help(
                 "Pending pods admitted by their queue whose GPUs are free in total but on no "
                 "one node (the consolidation loop's last round).")
             .Register(*registry)
             .Add({});
  }

  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<detail::SnapshotCollector> collector;
  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Histogram>& durations;
  prometheus::Family<prometheus::Counter>& rejections;
  // Indexed like kVerbs, the last one for "other".
  std::array<prometheus::Histogram*, std::size(kVerbs) + 1> durationByVerb{};
  std::array<prometheus::Counter*, std::size(kRejectionReasons)> rejectionByReason{};
  prometheus::Counter* consolidationMoves = nullptr;
  prometheus::Gauge* waitingOnFragmentation = nullptr;
  // Request counters by (verb, result) index, "other" last in each; filled on first use.
  std::array<std::atomic<prometheus::Counter*>, (std::size(kVerbs) + 1) * (std::size(kResults) + 1)>
      requestByVerbResult{};
};

Metrics::Metrics(SnapshotSource snapshots) : impl_(std::make_unique<Impl>(std::move(snapshots))) {}

Metrics::~Metrics() = default;

void Metrics::requestObserved(std::string_view verb, std::string_view result, double seconds) {
  // Indexes into kVerbs and kResults; one past the end stands for "other".
  const std::size_t v = indexOf(verb, kVerbs);
  const std::size_t r = indexOf(result, kResults);
  std::atomic<prometheus::Counter*>& slot =
      impl_->requestByVerbResult[v * (std::size(kResults) + 1) + r];
  prometheus::Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {
    // First request of this kind: Family::Add returns the one counter for these labels, so
    // threads racing here store the same pointer.
    const std::string verbLabel(v < std::size(kVerbs) ? kVerbs[v] : "other");
    const std::string resultLabel(r < std::size(kResults) ? kResults[r] : "other");
    counter = &impl_->requests.Add({{"verb", verbLabel}, {"result", resultLabel}});
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
  impl_->durationByVerb[v]->Observe(std::max(0.0, seconds));
}

void Metrics::filterRejected(std::string_view reason) {
  impl_->rejectionByReason[indexOf(bounded(reason, kRejectionReasons), kRejectionReasons)]
      ->Increment();
}

void Metrics::reclaimEvicted(std::string_view queue) {
  impl_->collector->evicted(queue);
}

void Metrics::consolidationMoved() {
  impl_->consolidationMoves->Increment();
}

void Metrics::setWaitingOnFragmentation(int pods) {
  impl_->waitingOnFragmentation->Set(pods);
}

void Metrics::setResourceCounters(ResourceCountersSource source) {
  impl_->collector->setResourceCounters(std::move(source));
}

void Metrics::setWebhookEvents(EventCountersSource source) {
  impl_->collector->setWebhookEvents(std::move(source));
}

void Metrics::setQuotaHealth(QuotaHealthSource source) {
  impl_->collector->setQuotaHealth(std::move(source));
}

void Metrics::setTlsStatus(TlsStatusSource source) {
  impl_->collector->setTlsStatus(std::move(source));
}

std::vector<std::shared_ptr<prometheus::Collectable>> Metrics::collectables() const {
  return {impl_->collector, impl_->registry};
}

std::string Metrics::render() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& collectable : collectables()) {
    auto collected = collectable->Collect();
    std::move(collected.begin(), collected.end(), std::back_inserter(families));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace gpufair::metrics
