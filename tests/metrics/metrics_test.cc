#include "gpufair/metrics/metrics.h"

#include <thread>

#include <gtest/gtest.h>

#include "gpufair/metrics/cluster_measures.h"
#include "gpufair/metrics/metrics_server.h"

#include "exposition.h"
#include "testing/builders.h"
#include "testing/cluster.h"

namespace gpufair::metrics {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;
using testsupport::parseExposition;

policy::SnapshotPtr smallCluster() {
  return testing::snapshotOf(
      {MakeNode("n1").gpus(8), MakeNode("n2").gpus(4)},
      {MakePod("team-a", "run").gpus(6).on("n1"), MakePod("team-b", "wait").gpus(4)},
      {MakeQueue("team-a").deserved(6).limit(10), MakeQueue("team-b").deserved(2)});
}

TEST(Metrics, EveryFamilyHasHelpAndAType) {
  Metrics metrics([] { return smallCluster(); });
  const auto exposed = parseExposition(metrics.render());
  const char* families[] = {
      "gpufair_queue_deserved_gpus",     "gpufair_queue_limit_gpus",
      "gpufair_queue_allocated_gpus",    "gpufair_queue_over_quota_gpus",
      "gpufair_queue_fair_share_gpus",   "gpufair_queue_pending_gpus",
      "gpufair_queue_pending_pods",      "gpufair_cluster_gpus",
      "gpufair_fragmentation_ratio",     "gpufair_fragmented_gpus",
      "gpufair_largest_free_block_gpus", "gpufair_schedulable_jobs",
      "gpufair_fairness_index",          "gpufair_node_free_gpus",
      "gpufair_node_allocatable_gpus",   "gpufair_pending_pods",
      "gpufair_snapshot_generation",     "gpufair_reclaim_evictions_total",
      "gpufair_filter_rejections_total", "gpufair_extender_request_duration_seconds",
      "gpufair_extender_requests_total", "gpufair_mirror_events_total",
      "gpufair_watch_restarts_total",    "gpufair_mirror_lists_total",
      "gpufair_watch_gone_total",
  };
  for (const char* family : families) {
    ASSERT_TRUE(exposed.help.count(family)) << family << " has no HELP";
    EXPECT_FALSE(exposed.help.at(family).empty()) << family;
    EXPECT_TRUE(exposed.type.count(family)) << family << " has no TYPE";
  }
  EXPECT_EQ(exposed.type.at("gpufair_extender_request_duration_seconds"), "histogram");
  EXPECT_EQ(exposed.type.at("gpufair_filter_rejections_total"), "counter");
  EXPECT_EQ(exposed.type.at("gpufair_cluster_gpus"), "gauge");
}

TEST(Metrics, ConsolidationMovesAndPodsWaitingOnFragmentation) {
  Metrics metrics([] { return smallCluster(); });
  const auto before = parseExposition(metrics.render());
  EXPECT_EQ(before.value("gpufair_consolidation_moves_total"), 0);
  metrics.consolidationMoved();
  metrics.consolidationMoved();
  metrics.setWaitingOnFragmentation(3);
  const auto m = parseExposition(metrics.render());
  EXPECT_EQ(m.type.at("gpufair_consolidation_moves_total"), "counter");
  EXPECT_EQ(m.type.at("gpufair_pods_waiting_on_fragmentation"), "gauge");
  EXPECT_FALSE(m.help.at("gpufair_pods_waiting_on_fragmentation").empty());
  EXPECT_EQ(m.value("gpufair_consolidation_moves_total"), 2);
  EXPECT_EQ(m.value("gpufair_pods_waiting_on_fragmentation"), 3);
  metrics.setWaitingOnFragmentation(0);
  EXPECT_EQ(parseExposition(metrics.render()).value("gpufair_pods_waiting_on_fragmentation"), 0);
}

TEST(Metrics, SnapshotValuesWithLabels) {
  Metrics metrics([] { return smallCluster(); });
  const auto m = parseExposition(metrics.render());
  struct Case {
    const char* series;
    double want;
  };
  const Case cases[] = {
      {R"(gpufair_queue_deserved_gpus{queue="team-a"})", 6},
      {R"(gpufair_queue_limit_gpus{queue="team-a"})", 10},
      {R"(gpufair_queue_allocated_gpus{queue="team-a"})", 6},
      {R"(gpufair_queue_pending_gpus{queue="team-b"})", 4},
      {R"(gpufair_queue_pending_pods{queue="team-b"})", 1},
      {R"(gpufair_queue_over_quota_gpus{queue="team-a"})", 0},
      {R"(gpufair_cluster_gpus{state="total"})", 12},
      {R"(gpufair_cluster_gpus{state="allocated"})", 6},
      {R"(gpufair_cluster_gpus{state="free"})", 6},
      {R"(gpufair_cluster_gpus{state="reserved"})", 0},
      {R"(gpufair_largest_free_block_gpus)", 4},
      {R"(gpufair_schedulable_jobs{gpus="1"})", 6},
      {R"(gpufair_schedulable_jobs{gpus="2"})", 3},
      {R"(gpufair_schedulable_jobs{gpus="4"})", 1},
      {R"(gpufair_schedulable_jobs{gpus="8"})", 0},
      {R"(gpufair_node_free_gpus{node="n1"})", 2},
      {R"(gpufair_node_allocatable_gpus{node="n2"})", 4},
      {R"(gpufair_pending_pods)", 1},
      {R"(gpufair_snapshot_generation)", 1},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(m.value(c.series).has_value()) << c.series << " missing";
    EXPECT_EQ(*m.value(c.series), c.want) << c.series;
  }
  // Fair share and the fairness index come from the snapshot's own fair share.
  const auto snap = smallCluster();
  double ratios[2];
  for (int i = 0; i < 2; ++i) {
    const char* name = i == 0 ? "team-a" : "team-b";
    const policy::QueueState* q = snap->findQueue(name);
    ASSERT_NE(q, nullptr);
    ASSERT_GT(q->fairShare, 0) << name;
    const std::string series = std::string("gpufair_queue_fair_share_gpus{queue=\"") + name + "\"}";
    EXPECT_EQ(m.value(series), q->fairShare / 1000.0) << series;
    ratios[i] = static_cast<double>(q->allocated) / static_cast<double>(q->fairShare);
  }
  EXPECT_NEAR(*m.value("gpufair_fairness_index"), jainIndex(ratios), 1e-12);
  EXPECT_LT(*m.value("gpufair_fairness_index"), 1.0);  // team-b waits, team-a has its share
  // No limit, no series.
  EXPECT_FALSE(m.value(R"(gpufair_queue_limit_gpus{queue="team-b"})").has_value());
}

// Queue trees: every level has its series; children carry the label parent, and a parent's
// amounts (evictions too) are its subtree's. Top-level queues keep {queue} alone.
TEST(Metrics, QueueTreesLabelEveryLevel) {
  auto tree = [] {
    return testing::snapshotOf(
        {MakeNode("n1").gpus(8), MakeNode("n2").gpus(4)},
        {MakePod("team-a", "run").gpus(6).on("n1"), MakePod("team-b", "run").gpus(2).on("n2"),
         MakePod("team-b", "wait").gpus(2)},
        {MakeQueue("research").namespaces({}).deserved(8).limit(10),
         MakeQueue("team-a").parent("research").deserved(6),
         MakeQueue("team-b").parent("research").deserved(2), MakeQueue("ops").deserved(2)});
  };
  Metrics metrics(tree);
  metrics.reclaimEvicted("team-a");
  metrics.reclaimEvicted("team-b");
  const auto m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_queue_allocated_gpus{queue="research"})"), 8);
  EXPECT_EQ(m.value(R"(gpufair_queue_pending_gpus{queue="research"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_queue_limit_gpus{queue="research"})"), 10);
  EXPECT_EQ(m.value(R"(gpufair_queue_allocated_gpus{parent="research",queue="team-a"})"), 6);
  EXPECT_EQ(m.value(R"(gpufair_queue_deserved_gpus{parent="research",queue="team-b"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_queue_pending_pods{parent="research",queue="team-b"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_queue_allocated_gpus{queue="ops"})"), 0);
  EXPECT_EQ(m.value(R"(gpufair_reclaim_evictions_total{parent="research",queue="team-a"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_reclaim_evictions_total{queue="research"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_reclaim_evictions_total{queue="ops"})"), 0);
}

TEST(Metrics, CountersWithBoundedLabels) {
  Metrics metrics([] { return smallCluster(); });
  metrics.requestObserved("filter", "ok", 0.0003);
  metrics.requestObserved("filter", "ok", 0.2);
  metrics.requestObserved("bind", "bad_request", 0.001);
  metrics.requestObserved("/etc/passwd", "teapot", 7);  // neither verb nor result known
  metrics.filterRejected("quota_limit");
  metrics.filterRejected("quota_limit");
  metrics.filterRejected("queue team-a at 30/30 GPUs (limit)");  // free text is not a label
  metrics.reclaimEvicted("team-b");
  const auto m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_extender_requests_total{result="ok",verb="filter"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_extender_requests_total{result="bad_request",verb="bind"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_extender_requests_total{result="other",verb="other"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_extender_request_duration_seconds_count{verb="filter"})"), 2);
  EXPECT_EQ(
      m.value(R"(gpufair_extender_request_duration_seconds_bucket{le="0.0005",verb="filter"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_extender_request_duration_seconds_bucket{le="0.25",verb="filter"})"),
            2);
  EXPECT_EQ(
      m.value(R"(gpufair_extender_request_duration_seconds_bucket{le="0.0001",verb="filter"})"), 0);
  EXPECT_EQ(m.value(R"(gpufair_extender_request_duration_seconds_bucket{le="5",verb="other"})"), 0);
  EXPECT_EQ(m.value(R"(gpufair_extender_request_duration_seconds_bucket{le="+Inf",verb="other"})"),
            1);
  EXPECT_EQ(m.value(R"(gpufair_filter_rejections_total{reason="quota_limit"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_filter_rejections_total{reason="other"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_filter_rejections_total{reason="insufficient_gpus"})"), 0);
  EXPECT_EQ(m.value(R"(gpufair_reclaim_evictions_total{queue="team-b"})"), 1);
  EXPECT_EQ(m.series("gpufair_filter_rejections_total").size(), std::size(kRejectionReasons));
}

TEST(Metrics, ResourceCountersAreReadAtScrapeTime) {
  Metrics metrics([] { return smallCluster(); });
  std::uint64_t events = 5;
  metrics.setResourceCounters([&events] {
    return std::vector<ResourceCounters>{{"pods", events, 2, 3, 1}, {"nodes", 1, 0, 1, 0}};
  });
  auto m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_mirror_events_total{resource="pods"})"), 5);
  EXPECT_EQ(m.value(R"(gpufair_watch_restarts_total{resource="pods"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_mirror_lists_total{resource="pods"})"), 3);
  EXPECT_EQ(m.value(R"(gpufair_watch_gone_total{resource="pods"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_mirror_events_total{resource="nodes"})"), 1);
  events = 9;
  m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_mirror_events_total{resource="pods"})"), 9);
}

TEST(Metrics, WebhookEventsAndQuotaHealthAreReadAtScrapeTime) {
  Metrics metrics([] { return smallCluster(); });
  auto m = parseExposition(metrics.render());
  EXPECT_TRUE(m.series("gpufair_quota_config_valid").empty());  // file mode: no ConfigMaps
  std::uint64_t oversize = 2;
  bool valid = true;
  metrics.setWebhookEvents([&oversize] {
    return std::vector<std::pair<std::string, std::uint64_t>>{{"body_too_large", oversize},
                                                              {"read_timeout", 1}};
  });
  metrics.setQuotaHealth([&valid] { return valid; });
  m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_webhook_events_total{event="body_too_large"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_webhook_events_total{event="read_timeout"})"), 1);
  EXPECT_EQ(m.value("gpufair_quota_config_valid"), 1);
  oversize = 3;
  valid = false;
  m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_webhook_events_total{event="body_too_large"})"), 3);
  EXPECT_EQ(m.value("gpufair_quota_config_valid"), 0);
}

TEST(Metrics, TlsCertificateStatusIsReadAtScrapeTime) {
  Metrics metrics([] { return smallCluster(); });
  auto m = parseExposition(metrics.render());
  EXPECT_TRUE(m.series("gpufair_tls_certificate_expiry_seconds").empty());  // plain HTTP
  TlsCertificateStatus status{86400.5, 1, 0};
  metrics.setTlsStatus([&status] { return status; });
  m = parseExposition(metrics.render());
  EXPECT_EQ(m.value("gpufair_tls_certificate_expiry_seconds"), 86400.5);
  EXPECT_EQ(m.value("gpufair_tls_reloads_total"), 1);
  EXPECT_EQ(m.value("gpufair_tls_reload_errors_total"), 0);
  status = {-30, 1, 2};  // expired, and two replacements refused
  m = parseExposition(metrics.render());
  EXPECT_EQ(m.value("gpufair_tls_certificate_expiry_seconds"), -30);
  EXPECT_EQ(m.value("gpufair_tls_reload_errors_total"), 2);
}

TEST(Metrics, ASnapshotSourceThatFailsLeavesTheCounters) {
  Metrics metrics([]() -> policy::SnapshotPtr { throw std::runtime_error("mirror gone"); });
  metrics.filterRejected("gang");
  const auto m = parseExposition(metrics.render());
  EXPECT_FALSE(m.value("gpufair_fairness_index").has_value());
  EXPECT_EQ(m.value(R"(gpufair_filter_rejections_total{reason="gang"})"), 1);
}

TEST(Metrics, CountsFromManyThreads) {
  Metrics metrics([] { return smallCluster(); });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&metrics] {
      for (int i = 0; i < 1000; ++i) {
        metrics.requestObserved("prioritize", "ok", 0.001);
        metrics.reclaimEvicted("team-a");
      }
    });
  }
  for (int i = 0; i < 20; ++i) metrics.render();  // scrapes while counting
  for (auto& t : threads) t.join();
  const auto m = parseExposition(metrics.render());
  EXPECT_EQ(m.value(R"(gpufair_extender_requests_total{result="ok",verb="prioritize"})"), 4000);
  EXPECT_EQ(m.value(R"(gpufair_reclaim_evictions_total{queue="team-a"})"), 4000);
}

TEST(MetricsServer, ServesMetricsOverHttpOnAFreePort) {
  Metrics metrics([] { return smallCluster(); });
  metrics.requestObserved("filter", "ok", 0.01);
  auto server = MetricsServer::start(metrics, "127.0.0.1:0");
  ASSERT_TRUE(server) << server.error();
  ASSERT_GT((*server)->port(), 0);
  const auto reply = testsupport::httpGet("127.0.0.1", (*server)->port(), "/metrics");
  EXPECT_EQ(reply.status, 200);
  const auto m = parseExposition(reply.body);
  EXPECT_EQ(m.value(R"(gpufair_cluster_gpus{state="total"})"), 12);
  EXPECT_EQ(m.value(R"(gpufair_extender_requests_total{result="ok",verb="filter"})"), 1);
}

TEST(MetricsServer, RefusesBadAddresses) {
  Metrics metrics([] { return smallCluster(); });
  auto first = MetricsServer::start(metrics, "127.0.0.1:0");
  ASSERT_TRUE(first) << first.error();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  struct Case {
    std::string listen;
    std::string want;
  };
  const Case cases[] = {
      {"9090", "is not HOST:PORT"},
      {"localhost:http", "port must be 0..65535"},
      {"127.0.0.1:70000", "port must be 0..65535"},
      {"::1:9090", "write IPv6 hosts as [ADDR]:PORT"},
      {taken, "cannot serve metrics on " + taken},
  };
  for (const auto& c : cases) {
    auto server = MetricsServer::start(metrics, c.listen);
    ASSERT_FALSE(server) << c.listen;
    EXPECT_NE(server.error().find(c.want), std::string::npos) << c.listen << ": " << server.error();
  }
}

}  // namespace
}  // namespace gpufair::metrics
