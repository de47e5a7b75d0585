// End to end: `gpufair serve` on the example cluster (file mode, ports 0, JSON logs at debug
// level); /metrics checked against /debug/snapshot and the known cluster, the Grafana dashboard
// against what /metrics exposes, `top --once` and `explain` output, and the log lines.
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exposition.h"
#include "promql_names.h"
#include "serve_process.h"

namespace gpufair::metrics {
namespace {

using nlohmann::json;
using namespace testsupport;

const std::string kBinary = GPUFAIR_BINARY;
const std::string kSource = GPUFAIR_SOURCE_DIR;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server =
        new ServeProcess({kBinary, "serve", "--cluster", kSource + "/examples/cluster-4x10.yaml",
                          "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                          "--log-format", "json", "--log-level", "debug"});
    const std::regex serving(
        R"(serving the extender webhooks on http://127\.0\.0\.1:(\d+); metrics on http://127\.0\.0\.1:(\d+)/metrics)");
    const std::string line =
        server->waitFor([&](const std::string& l) { return std::regex_search(l, serving); });
    std::smatch m;
    if (std::regex_search(line, m, serving)) {
      webhookPort = std::stoi(m[1]);
      metricsPort = std::stoi(m[2]);
    }
    // kube-scheduler offers a pod that fits (team-b/train-bert, 4 GPUs) and one that cannot fit
    // anywhere (11 GPUs on 10-GPU nodes).
    if (webhookPort > 0) {
      httpRequest("POST", "127.0.0.1", webhookPort, "/filter",
                  readFile(kSource + "/examples/filter-request.json"));
      json tooBig = json::parse(readFile(kSource + "/examples/filter-request.json"));
      tooBig["Pod"]["metadata"]["name"] = "too-big";
      tooBig["Pod"]["metadata"]["uid"] = "uid-too-big";
      tooBig["Pod"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "11";
      tooBig["Pod"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "11";
      httpRequest("POST", "127.0.0.1", webhookPort, "/filter", tooBig.dump());
    }
  }
  static void TearDownTestSuite() {
    delete server;
    server = nullptr;
  }
  void SetUp() override {
    ASSERT_GT(webhookPort, 0) << "gpufair serve did not start; its output:\n"
                              << [] {
                                   std::string all;
                                   for (const auto& l : server->lines()) all += l + "\n";
                                   return all;
                                 }();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(webhookPort); }
  Exposition scrape() const {
    const HttpReply reply = httpGet("127.0.0.1", metricsPort, "/metrics");
    EXPECT_EQ(reply.status, 200);
    return parseExposition(reply.body);
  }
  json snapshot() const {
    return json::parse(httpGet("127.0.0.1", webhookPort, "/debug/snapshot").body);
  }

  static inline ServeProcess* server = nullptr;
  static inline int webhookPort = 0;
  static inline int metricsPort = 0;
};

double gpus(const json& amount) {
  return amount.get<double>();
}

TEST_F(ServeTest, MetricsMatchTheSnapshotOfTheExampleCluster) {
  const json snap = snapshot();
  const Exposition m = scrape();
  // The known cluster: 4 nodes of 10 GPUs, team-a holds 2 on gpu-node-1, team-b/train-bert and
  // team-b/too-big pending.
  EXPECT_EQ(m.value(R"(gpufair_cluster_gpus{state="total"})"), 40);
  EXPECT_EQ(m.value(R"(gpufair_cluster_gpus{state="allocated"})"), 2);
  EXPECT_EQ(m.value(R"(gpufair_cluster_gpus{state="free"})"), 38);
  EXPECT_EQ(m.value("gpufair_largest_free_block_gpus"), 10);
  EXPECT_EQ(m.value(R"(gpufair_schedulable_jobs{gpus="8"})"), 4);
  EXPECT_EQ(m.value(R"(gpufair_schedulable_jobs{gpus="4"})"), 8);
  EXPECT_EQ(m.value(R"(gpufair_schedulable_jobs{gpus="2"})"), 19);
  EXPECT_EQ(m.value(R"(gpufair_schedulable_jobs{gpus="1"})"), 38);
  EXPECT_EQ(m.value("gpufair_pending_pods"), 2);
  EXPECT_EQ(m.value(R"(gpufair_queue_pending_gpus{queue="team-b"})"), 15);

  // And every value as the snapshot has it.
  const json& cluster = snap.at("cluster");
  EXPECT_EQ(m.value(R"(gpufair_cluster_gpus{state="allocated"})"), gpus(cluster.at("allocated")));
  EXPECT_EQ(m.value(R"(gpufair_cluster_gpus{state="free"})"), gpus(cluster.at("free")));
  EXPECT_EQ(m.value("gpufair_largest_free_block_gpus"), gpus(cluster.at("largestFreeBlock")));
  EXPECT_EQ(m.value("gpufair_snapshot_generation"), snap.at("generation").get<double>());
  ASSERT_EQ(snap.at("nodes").size(), 4u);
  for (const auto& node : snap.at("nodes")) {
    const std::string label = "{node=\"" + node.at("name").get<std::string>() + "\"}";
    EXPECT_EQ(m.value("gpufair_node_free_gpus" + label), gpus(node.at("free"))) << label;
    EXPECT_EQ(m.value("gpufair_node_allocatable_gpus" + label), gpus(node.at("allocatable")));
  }
  EXPECT_EQ(m.series("gpufair_node_free_gpus").size(), 4u);
  ASSERT_EQ(snap.at("queues").size(), 3u);  // team-a, team-b, default
  for (const auto& q : snap.at("queues")) {
    const std::string label = "{queue=\"" + q.at("name").get<std::string>() + "\"}";
    EXPECT_EQ(m.value("gpufair_queue_deserved_gpus" + label), gpus(q.at("deserved"))) << label;
    EXPECT_EQ(m.value("gpufair_queue_allocated_gpus" + label), gpus(q.at("allocated"))) << label;
    EXPECT_EQ(m.value("gpufair_queue_over_quota_gpus" + label), gpus(q.at("overQuota"))) << label;
    EXPECT_EQ(m.value("gpufair_queue_fair_share_gpus" + label), gpus(q.at("fairShare"))) << label;
    EXPECT_EQ(m.value("gpufair_queue_pending_gpus" + label), gpus(q.at("pending"))) << label;
    EXPECT_EQ(m.value("gpufair_queue_pending_pods" + label), q.at("pendingPods").get<double>());
    if (q.at("limit").is_null()) {
      EXPECT_FALSE(m.value("gpufair_queue_limit_gpus" + label).has_value()) << label;
    } else {
      EXPECT_EQ(m.value("gpufair_queue_limit_gpus" + label), gpus(q.at("limit"))) << label;
    }
    EXPECT_EQ(m.value("gpufair_reclaim_evictions_total" + label), 0) << label;
  }
  // Fragmentation against the workload the mirror learned from the four GPU pods it has seen (two
  // running 1-GPU pods, the 4-GPU and the 11-GPU pod, about a quarter each): no 10-GPU node can
  // take an 11-GPU pod, so that quarter finds all 38 free GPUs unusable; the other shapes fit in
  // whole free GPUs everywhere.
  EXPECT_NEAR(*m.value("gpufair_fragmentation_ratio"), 0.25, 0.01);
  EXPECT_NEAR(*m.value("gpufair_fragmented_gpus"), 38 * 0.25, 0.1);
  const double fairness = *m.value("gpufair_fairness_index");
  EXPECT_GT(fairness, 0);
  EXPECT_LE(fairness, 1);
}

TEST_F(ServeTest, RequestsAndRejectionsAreCounted) {
  const Exposition before = scrape();
  httpGet("127.0.0.1", webhookPort, "/healthz");
  httpGet("127.0.0.1", webhookPort, "/no-such-thing");
  const Exposition m = scrape();
  auto delta = [&](const std::string& series) {
    return m.value(series).value_or(0) - before.value(series).value_or(0);
  };
  EXPECT_EQ(delta(R"(gpufair_extender_requests_total{result="ok",verb="healthz"})"), 1);
  EXPECT_EQ(delta(R"(gpufair_extender_requests_total{result="not_found",verb="unknown"})"), 1);
  EXPECT_EQ(delta(R"(gpufair_extender_request_duration_seconds_count{verb="healthz"})"), 1);
  // The two filters of SetUpTestSuite: one passed, one left the pod no node for lack of GPUs.
  EXPECT_GE(m.value(R"(gpufair_extender_requests_total{result="ok",verb="filter"})"), 2);
  EXPECT_GE(m.value(R"(gpufair_filter_rejections_total{reason="insufficient_gpus"})"), 1);
  EXPECT_EQ(m.value(R"(gpufair_extender_request_duration_seconds_bucket{le="+Inf",verb="filter"})"),
            m.value(R"(gpufair_extender_request_duration_seconds_count{verb="filter"})"));
}

TEST(PromqlMetricNames, Table) {
  struct Case {
    std::string expr;
    std::set<std::string> want;
  };
  const Case cases[] = {
      {"gpufair_fairness_index", {"gpufair_fairness_index"}},
      {R"(gpufair_queue_allocated_gpus{queue=~"$queue"} / (gpufair_queue_fair_share_gpus > 0))",
       {"gpufair_queue_allocated_gpus", "gpufair_queue_fair_share_gpus"}},
      {R"(histogram_quantile(0.99, sum by (le, verb) (rate(x_bucket{verb=~"a|b"}[5m]))))",
       {"x_bucket"}},
      {R"(sum without (instance) (increase(y_total[$__rate_interval])) > 0)", {"y_total"}},
      {R"(a * on (node) group_left (zone) b offset 5m)", {"a", "b"}},
  };
  for (const auto& c : cases) EXPECT_EQ(promqlMetricNames(c.expr), c.want) << c.expr;
}

// Every expression of the dashboard (panels and variables) reads only metrics /metrics exposes.
TEST_F(ServeTest, TheDashboardReadsOnlyExposedMetrics) {
  const json dashboard =
      json::parse(readFile(kSource + "/deploy/grafana/gpufair-dashboard.json"), nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "the dashboard is not JSON";
  ASSERT_TRUE(dashboard.contains("panels"));

  std::set<std::string> exposed;
  for (const auto& [family, type] : scrape().type) {
    exposed.insert(family);
    if (type == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) exposed.insert(family + suffix);
    }
  }
  std::vector<std::string> expressions;
  std::function<void(const json&)> walk = [&](const json& node) {
    if (node.is_object()) {
      for (const auto& [key, value] : node.items()) {
        if (key == "expr" && value.is_string()) expressions.push_back(value);
        walk(value);
      }
    } else if (node.is_array()) {
      for (const auto& item : node) walk(item);
    }
  };
  walk(dashboard.at("panels"));
  ASSERT_GE(expressions.size(), 15u);
  std::set<std::string> used;
  for (const auto& expr : expressions) {
    const auto names = promqlMetricNames(expr);
    EXPECT_FALSE(names.empty()) << expr;
    for (const auto& name : names) {
      EXPECT_TRUE(exposed.count(name)) << name << " (in " << expr << ") is not exposed";
      used.insert(name);
    }
  }
  const std::regex labelValues(R"(label_values\((\w+),\s*(\w+)\))");
  for (const auto& variable : dashboard.at("templating").at("list")) {
    if (variable.value("type", "") != "query") continue;
    const std::string definition = variable.value("definition", "");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(definition, m, labelValues)) << definition;
    EXPECT_TRUE(exposed.count(m[1])) << definition;
    EXPECT_FALSE(scrape().series(m[1]).empty()) << definition;
  }
  // The panels the issue asks for are there.
  for (const char* wanted :
       {"gpufair_queue_allocated_gpus", "gpufair_queue_deserved_gpus",
        "gpufair_queue_fair_share_gpus", "gpufair_queue_over_quota_gpus",
        "gpufair_fragmentation_ratio", "gpufair_node_free_gpus",
        "gpufair_extender_request_duration_seconds_bucket", "gpufair_reclaim_evictions_total"}) {
    EXPECT_TRUE(used.count(wanted)) << wanted << " has no panel";
  }
  std::set<int> ids;
  for (const auto& panel : dashboard.at("panels")) {
    EXPECT_TRUE(ids.insert(panel.at("id").get<int>()).second) << "duplicate panel id";
  }
}

TEST_F(ServeTest, TopOnceShowsNodesQueuesAndPendingPods) {
  const CommandResult top = runCommand(kBinary + " top --once --url " + url());
  ASSERT_EQ(top.exitCode, 0) << top.output;
  const std::string& out = top.output;
  EXPECT_NE(out.find("cluster: 4 nodes, 40 GPUs, 2 allocated, 38 free, largest free block 10, "
                     "2 pending pods"),
            std::string::npos)
      << out;
  const std::regex node1(R"(gpu-node-1\s+\[##\.{8}\]\s+2/10\s+8\s+2\n)");
  const std::regex node2(R"(gpu-node-2\s+\[\.{10}\]\s+0/10\s+10\s+0\n)");
  EXPECT_TRUE(std::regex_search(out, node1)) << out;
  EXPECT_TRUE(std::regex_search(out, node2)) << out;
  const json snap = snapshot();
  for (const auto& q : snap.at("queues")) {
    if (q.at("name") == "default") continue;
    std::ostringstream row;  // QUEUE ALLOCATED DESERVED FAIR SHARE LIMIT
    row << q.at("name").get<std::string>() << R"(\s+)" << q.at("allocated").dump() << R"(\s+)"
        << q.at("deserved").dump() << R"(\s+)" << q.at("fairShare").dump() << R"(\s+)"
        << q.at("limit").dump() << R"(\s+)" << q.at("overQuota").dump() << R"(\s+)"
        << q.at("pending").dump() << R"(\s)";
    EXPECT_TRUE(std::regex_search(out, std::regex(row.str()))) << row.str() << "\n" << out;
  }
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(team-b/train-bert\s+team-b\s+4\s+it fits now, best on gpu-node-\d)")))
      << out;
  EXPECT_TRUE(std::regex_search(
      out,
      std::regex(
          R"(team-b/too-big\s+team-b\s+11\s+no node fits: 4 nodes: has 10 GPUs; pod needs 11 GPUs\n)")))
      << out;
}

TEST_F(ServeTest, TopRefreshesUntilStopped) {
  ServeProcess top({kBinary, "top", "--url", url(), "--interval", "100ms"});
  int frames = 0;
  const std::string second = top.waitFor([&](const std::string& line) {
    return line.rfind("\x1b[H\x1b[2Jgpufair top - " + url(), 0) == 0 && ++frames == 2;
  });
  EXPECT_FALSE(second.empty()) << "fewer than two frames";
  EXPECT_EQ(top.stop(), 0);  // SIGTERM ends it cleanly, like Ctrl-C
}

TEST_F(ServeTest, ExplainPrintsTheVerdictOfEveryNode) {
  CommandResult explain = runCommand(kBinary + " explain --url " + url() + " team-b/too-big");
  ASSERT_EQ(explain.exitCode, 0) << explain.output;
  EXPECT_NE(explain.output.find("pod team-b/too-big (queue team-b, 11 GPUs): pending"),
            std::string::npos)
      << explain.output;
  EXPECT_NE(explain.output.find("queue: admits it"), std::string::npos) << explain.output;
  for (int n = 1; n <= 4; ++n) {
    const std::string node = "gpu-node-" + std::to_string(n);
    EXPECT_TRUE(std::regex_search(explain.output, std::regex(node + R"(\s+\d+/10\s+node )" + node +
                                                             " has 10 GPUs; pod needs 11 GPUs")))
        << explain.output;
  }
  explain = runCommand(kBinary + " explain --url " + url() + " team-b/train-bert");
  ASSERT_EQ(explain.exitCode, 0) << explain.output;
  EXPECT_TRUE(std::regex_search(explain.output,
                                std::regex(R"(gpu-node-\d\s+\d+/10\s+fits, score \d+ of 10)")))
      << explain.output;

  explain = runCommand(kBinary + " explain --url " + url() + " team-z/nobody");
  EXPECT_EQ(explain.exitCode, 1);
  EXPECT_NE(explain.output.find("gpufair knows no pod team-z/nobody"), std::string::npos)
      << explain.output;
  explain = runCommand(kBinary + " explain --url http://127.0.0.1:1 team-b/x");
  EXPECT_EQ(explain.exitCode, 1);
  EXPECT_NE(explain.output.find("cannot GET http://127.0.0.1:1/debug/explain"), std::string::npos)
      << explain.output;
  explain = runCommand(kBinary + " explain --url " + url());
  EXPECT_EQ(explain.exitCode, 2) << explain.output;
}

TEST_F(ServeTest, LogsAreJsonLinesWithDecisionsAtDebugAndRejectionsAtInfo) {
  // Give the server a moment to write what the suite's requests made it log.
  server->waitFor(
      [](const std::string& l) { return l.find("filter rejected") != std::string::npos; });
  const auto lines = server->lines();
  ASSERT_FALSE(lines.empty());
  bool decision = false;
  bool rejection = false;
  for (const auto& line : lines) {
    const json entry = json::parse(line, nullptr, false);
    ASSERT_TRUE(entry.is_object()) << "not a JSON object: " << line;
    ASSERT_TRUE(entry.contains("ts") && entry.contains("level") && entry.contains("msg")) << line;
    EXPECT_TRUE(std::regex_match(entry.at("ts").get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << line;
    const std::string msg = entry.at("msg");
    if (entry.at("level") == "debug" && msg.rfind("filter team-b/train-bert", 0) == 0) {
      decision = true;
    }
    if (entry.at("level") == "info" && msg.rfind("filter rejected team-b/too-big", 0) == 0) {
      rejection = true;
      EXPECT_NE(msg.find("node gpu-node-1 has 10 GPUs; pod needs 11 GPUs"), std::string::npos)
          << msg;
    }
  }
  EXPECT_TRUE(decision) << "no debug line for the filter decision";
  EXPECT_TRUE(rejection) << "no info line for the rejection";
}

TEST(ServeFlags, BadMetricsAndLogFlagsAreUsageErrors) {
  struct Case {
    std::string flags;
    std::string want;
  };
  const Case cases[] = {
      {"--metrics-listen 9090", "--metrics-listen: metrics address \"9090\" is not HOST:PORT"},
      {"--log-format yaml", "--log-format must be text or json, not \"yaml\""},
  };
  for (const auto& c : cases) {
    const CommandResult result =
        runCommand(kBinary + " serve --cluster " + kSource +
                   "/examples/cluster-4x10.yaml --listen 127.0.0.1:0 " + c.flags);
    EXPECT_EQ(result.exitCode, 2) << c.flags << "\n" << result.output;
    EXPECT_NE(result.output.find(c.want), std::string::npos) << c.flags << "\n" << result.output;
  }
}

}  // namespace
}  // namespace gpufair::metrics
