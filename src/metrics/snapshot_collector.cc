#include "snapshot_collector.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <map>
#include <string>

#include <spdlog/spdlog.h>

#include "gpufair/metrics/cluster_measures.h"

namespace gpufair::metrics::detail {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

class Families {
 public:
  MetricFamily& add(std::string name, std::string help, MetricType type = MetricType::Gauge) {
    families_.push_back({"gpufair_" + std::move(name), std::move(help), type, {}});
    return families_.back();
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(families_.begin()), std::make_move_iterator(families_.end())};
  }

 private:
  std::deque<MetricFamily> families_;  // add() hands out references that must stay valid
};

void sample(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

// {queue}, plus {parent} for a queue in a tree below the top level.
std::vector<ClientMetric::Label> queueLabels(const QueueMeasure& q) {
  std::vector<ClientMetric::Label> labels{{"queue", q.name}};
  if (!q.parent.empty()) labels.push_back({"parent", q.parent});
  return labels;
}

void addQueues(Families& out, const ClusterMeasures& m) {
  struct Spec {
    const char* name;
    const char* help;
    double QueueMeasure::*field;
  };
  const Spec specs[] = {
      {"queue_deserved_gpus", "GPUs the queue is always entitled to (its deserved quota).",
       &QueueMeasure::deserved},
      {"queue_allocated_gpus", "GPUs held by the queue's bound or assumed pods.",
       &QueueMeasure::allocated},
      {"queue_over_quota_gpus",
       "What reclaim could take from the queue: GPUs of its borrowed (over-quota) pods, whole pods "
       "youngest first, as long as the queue keeps its deserved quota.",
       &QueueMeasure::overQuota},
      {"queue_fair_share_gpus",
       "The queue's fair share: deserved quota, then idle GPUs split among borrowing queues by "
       "overQuotaWeight, capped by demand and limit.",
       &QueueMeasure::fairShare},
      {"queue_pending_gpus", "GPUs requested by the queue's pending pods.", &QueueMeasure::pending},
  };
  for (const Spec& spec : specs) {
    MetricFamily& family = out.add(spec.name, spec.help);
    for (const auto& q : m.queues) sample(family, q.*spec.field, queueLabels(q));
  }
  MetricFamily& limit =
      out.add("queue_limit_gpus", "The most GPUs the queue may hold (no series: no limit).");
  for (const auto& q : m.queues) {
    if (q.limit) sample(limit, *q.limit, queueLabels(q));
  }
  MetricFamily& pods = out.add("queue_pending_pods", "Pending pods of the queue that want GPUs.");
  for (const auto& q : m.queues) sample(pods, q.pendingPods, queueLabels(q));
}

void addCluster(Families& out, const ClusterMeasures& m) {
  MetricFamily& gpus = out.add("cluster_gpus",
                               "GPUs by state: total (allocatable on all nodes), allocated (held "
                               "by pods), free (on nodes that take new pods).");
  sample(gpus, m.totalGpus, {{"state", "total"}});
  sample(gpus, m.allocatedGpus, {{"state", "allocated"}});
  sample(gpus, m.freeGpus, {{"state", "free"}});
  sample(gpus, m.reservedGpus, {{"state", "reserved"}});
  sample(out.add("fragmentation_ratio",
                 "Share of free GPU capacity the target workload cannot use (fragmentation "
                 "measure of Weng et al., ATC'23), 0..1."),
         m.fragmentationRatio);
  sample(out.add("fragmented_gpus", "Free GPUs the target workload cannot use."), m.fragmentedGpus);
  sample(out.add("largest_free_block_gpus", "The most GPUs free on one node taking new pods."),
         m.largestFreeBlock);
  MetricFamily& jobs = out.add("schedulable_jobs",
                               "How many pods of this many whole GPUs fit now, each on one node.");
  for (std::size_t i = 0; i < m.schedulableJobs.size(); ++i) {
    sample(jobs, static_cast<double>(m.schedulableJobs[i]),
           {{"gpus", std::to_string(kJobSizes[i])}});
  }
  sample(out.add("fairness_index",
                 "Jain's index of allocated / fair share over queues with demand (1: fair)."),
         m.fairnessIndex);
  sample(out.add("pending_pods", "Pods waiting for GPUs, as gpufair knows them."), m.pendingPods);
  sample(out.add("snapshot_generation", "Generation of the snapshot these values come from."),
         static_cast<double>(m.generation));
  MetricFamily& free = out.add("node_free_gpus", "GPUs free on the node.");
  MetricFamily& allocatable = out.add("node_allocatable_gpus", "GPUs the node offers.");
  for (const auto& node : m.nodes) {
    sample(free, node.free, {{"node", node.name}});
    sample(allocatable, node.allocatable, {{"node", node.name}});
  }
}

void addFeed(Families& out, const std::vector<ResourceCounters>& counters) {
  struct Spec {
    const char* name;
    const char* help;
    std::uint64_t ResourceCounters::*field;
  };
  const Spec specs[] = {
      {"mirror_events_total", "Watch events the mirror received, by resource.",
       &ResourceCounters::events},
      {"watch_restarts_total", "Watches started again after they ended, by resource.",
       &ResourceCounters::watchRestarts},
      {"mirror_lists_total", "Complete LISTs the mirror loaded, by resource.",
       &ResourceCounters::lists},
      {"watch_gone_total", "Watches that found their resourceVersion gone (410) and relisted.",
       &ResourceCounters::gone},
  };
  for (const Spec& spec : specs) {
    MetricFamily& family = out.add(spec.name, spec.help, MetricType::Counter);
    for (const auto& c : counters) {
      sample(family, static_cast<double>(c.*spec.field), {{"resource", c.resource}});
    }
  }
}

// Every configured queue has a series (0 until reclaim evicts from it), and so has every queue
// evicted from since, configured or not. A parent queue counts its subtree's evictions.
void addEvictions(Families& out, const ClusterMeasures* m,
                  std::map<std::string, std::uint64_t, std::less<>> counts) {
  std::map<std::string, std::string, std::less<>> parents;
  if (m != nullptr) {
    for (const auto& q : m->queues) {
      counts.try_emplace(q.name, 0);
      if (!q.parent.empty()) parents.emplace(q.name, q.parent);
    }
    std::vector<const QueueMeasure*> deepest;
    for (const auto& q : m->queues) deepest.push_back(&q);
    std::stable_sort(deepest.begin(), deepest.end(),
                     [](const auto* a, const auto* b) { return a->depth > b->depth; });
    for (const QueueMeasure* q : deepest) {
      if (!q->parent.empty()) counts[q->parent] += counts[q->name];
    }
  }
  MetricFamily& family = out.add("reclaim_evictions_total",
                                 "Borrowed pods evicted by reclaim, by the queue they belonged to "
                                 "(a parent queue: by its subtree).",
                                 MetricType::Counter);
  for (const auto& [queue, n] : counts) {
    std::vector<ClientMetric::Label> labels{{"queue", queue}};
    if (auto p = parents.find(queue); p != parents.end()) labels.push_back({"parent", p->second});
    sample(family, static_cast<double>(n), std::move(labels));
  }
}

void addTls(Families& out, const TlsCertificateStatus& tls) {
  sample(out.add("tls_certificate_expiry_seconds",
                 "Seconds until the webhook server's TLS certificate (the one new connections get) "
                 "expires; negative once it has."),
         tls.expirySeconds);
  sample(
      out.add("tls_reloads_total", "Changed TLS certificate files taken into service since start.",
              MetricType::Counter),
      static_cast<double>(tls.reloads));
  sample(out.add("tls_reload_errors_total",
                 "Changed TLS certificate files refused (the old certificate stays in service; see "
                 "/readyz and the log).",
                 MetricType::Counter),
         static_cast<double>(tls.reloadErrors));
}

}  // namespace

void SnapshotCollector::evicted(std::string_view queue) {
  std::lock_guard lock(mu_);
  auto it = evictions_.find(queue);
  if (it == evictions_.end()) it = evictions_.emplace(std::string(queue), 0).first;
  ++it->second;
}

std::vector<MetricFamily> SnapshotCollector::Collect() const {
  Families out;
  std::map<std::string, std::uint64_t, std::less<>> evictions;
  {
    std::lock_guard lock(mu_);
    evictions = evictions_;
  }
  std::optional<ClusterMeasures> measures;
  try {
    const policy::SnapshotPtr snapshot = snapshots_ ? snapshots_() : nullptr;
    if (snapshot != nullptr) {
      measures = measureCluster(*snapshot);
      addQueues(out, *measures);
      addCluster(out, *measures);
    }
  } catch (const std::exception& e) {
    spdlog::warn("metrics: cannot measure the cluster: {}", e.what());
  }
  addEvictions(out, measures ? &*measures : nullptr, std::move(evictions));
  try {
    addFeed(out, counters_ ? counters_() : std::vector<ResourceCounters>{});
    if (webhook_) {
      MetricFamily& family = out.add(
          "webhook_events_total",
          "What the webhook server did at its limits (refused connections, oversize bodies or "
          "headers, timeouts, idle closes, TLS handshake failures, handler errors), by event.",
          MetricType::Counter);
      for (const auto& [event, n] : webhook_()) {
        sample(family, static_cast<double>(n), {{"event", event}});
      }
    }
    if (quotaHealth_) {
      sample(out.add("quota_config_valid",
                     "1 when the quota ConfigMaps as they are now are in force; 0 when a change "
                     "was rejected and the last good config stays (see /readyz)."),
             quotaHealth_() ? 1.0 : 0.0);
    }
    if (tls_) addTls(out, tls_());
  } catch (const std::exception& e) {
    spdlog::warn("metrics: cannot read the feed or server counters: {}", e.what());
  }
  return out.take();
}

}  // namespace gpufair::metrics::detail
