// gpufair top and explain as text, the JSON log format and the batched log sink, without a server.
#include "views.h"

#include <cstdio>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/details/log_msg.h>
#include <unistd.h>

#include "logging.h"

namespace gpufair::app {
namespace {

using nlohmann::json;

json snapshotDoc() {
  return json::parse(R"json({
    "generation": 9,
    "cluster": {"nodes": 3, "capacity": 12, "allocated": 5.5, "free": 2.5,
                "largestFreeBlock": 2.5, "pendingPods": 3},
    "nodes": [
      {"name": "a100-1", "allocatable": 8, "used": 5.5, "free": 2.5, "unschedulable": false,
       "deleting": false, "pods": ["t/x", "t/y"]},
      {"name": "a100-2", "allocatable": 4, "used": 0, "free": 4, "unschedulable": true,
       "deleting": false, "pods": []},
      {"name": "big", "allocatable": 40, "used": 10, "free": 30, "unschedulable": false,
       "deleting": false, "pods": ["t/z"]}],
    "pods": [],
    "pending": [
      {"namespace": "team-a", "name": "p1", "queue": "team-a", "gpus": 4},
      {"namespace": "team-a", "name": "p2", "queue": "team-a", "gpus": 0.5},
      {"namespace": "team-b", "name": "p3", "queue": "team-b", "gpus": 1}],
    "queues": [
      {"name": "team-a", "deserved": 4, "limit": 6, "overQuotaWeight": 1, "allocated": 5.5,
       "overQuota": 1.5, "fairShare": 5.5, "pending": 4.5, "pendingPods": 2, "runningPods": 2},
      {"name": "default", "deserved": 0, "limit": null, "overQuotaWeight": 1, "allocated": 0,
       "overQuota": 0, "fairShare": 0, "pending": 0, "pendingPods": 0, "runningPods": 0}]})json");
}

TEST(RenderTop, NodesQueuesAndPendingPods) {
  TopOptions options;
  options.maxPending = 2;
  options.title = "gpufair top - test";
  const std::string out = renderTop(
      snapshotDoc(), {{"team-a/p1", "no node fits: 2 nodes: fewer than 4 GPUs free"}}, options);
  const char* expected[] = {
      "gpufair top - test\n",
      ("cluster: 3 nodes, 12 GPUs, 5.5 allocated, 2.5 free, largest free block 2.5, 3 pending pods "
       "(generation 9)\n"),  // one line, split here (parentheses: clang's -Wstring-concatenation)
      // 8 cells for 8 GPUs: 5 used, the sixth half used.
      "a100-1  [#####+..]                     5.5/8    2.5     2\n",
      "a100-2  [....]                           0/4      4     0  (cordoned)\n",
      // 40 GPUs in 20 cells of 2: 10 used fills 5.
      "big     [#####...............]         10/40     30     1\n",
      "team-a         5.5         4         5.5      6       1.5      4.5      100%\n",
      "default          0         0           0      -         0        0         -\n",
      "team-a/p1    team-a     4  no node fits: 2 nodes: fewer than 4 GPUs free\n",
      "team-a/p2    team-a   0.5  -\n",
      "... and 1 more pending pods\n",
  };
  for (const char* line : expected) {
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << out;
  }
  EXPECT_EQ(out.find("team-b/p3"), std::string::npos) << out;
}

TEST(RenderTop, QueueTreesIndentedChildrenAfterTheirParent) {
  json doc = snapshotDoc();
  auto queue = [](const char* name, const char* parent, double allocated) {
    json q = {{"name", name},         {"deserved", 2},          {"limit", nullptr},
              {"overQuotaWeight", 1}, {"allocated", allocated}, {"overQuota", 0},
              {"fairShare", 2},       {"pending", 0},           {"pendingPods", 0},
              {"runningPods", 1}};
    if (*parent != '\0') q["parent"] = parent;
    return q;
  };
  // Merged configs sort queues by name: children may come before their parent.
  doc["queues"] =
      json::array({queue("a-team", "research", 1), queue("ops", "", 2), queue("research", "", 3),
                   queue("b-team", "research", 2), queue("sub", "b-team", 2)});
  const std::string out = renderTop(doc, {}, {});
  const std::size_t at = out.find("QUEUE");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string expected =
      "QUEUE     ALLOCATED  DESERVED  FAIR SHARE  LIMIT  BORROWED  PENDING  USE/FAIR\n"
      "ops               2         2           2      -         0        0      100%\n"
      "research          3         2           2      -         0        0      150%\n"
      "  a-team          1         2           2      -         0        0       50%\n"
      "  b-team          2         2           2      -         0        0      100%\n"
      "    sub           2         2           2      -         0        0      100%\n";
  EXPECT_EQ(out.substr(at, expected.size()), expected) << out;
}

TEST(RenderTop, NothingPending) {
  json doc = snapshotDoc();
  doc["pending"] = json::array();
  EXPECT_NE(renderTop(doc, {}, {}).find("no pending pods\n"), std::string::npos);
}

TEST(RenderTop, AMalformedDocumentThrowsAJsonError) {
  json doc = snapshotDoc();
  doc.erase("cluster");
  EXPECT_THROW(renderTop(doc, {}, {}), json::exception);
}

TEST(RenderExplain, VerdictsNodeByNode) {
  const json doc = json::parse(R"json({
    "pod": "team-a/p1", "uid": "u", "queue": "team-a", "gpus": 4, "state": "pending", "node": "",
    "admission": {"admitted": true, "overQuota": true, "reason": ""},
    "feasibleNodes": 1, "totalNodes": 3,
    "nodes": [
      {"name": "n1", "fits": true, "score": 9, "reason": "", "free": 8, "allocatable": 8},
      {"name": "n2", "fits": false, "score": null, "reason": "fewer than 4 GPUs free",
       "free": 1.5, "allocatable": 8},
      {"name": "n3", "fits": false, "score": null, "reason": "node n3 is unschedulable (cordoned)",
       "free": 8, "allocatable": 8}],
    "summary": "it fits now, best on n1 (score 9 of 10; 1 of 3 nodes fit); waiting for kube-scheduler to retry it"
})json");
  EXPECT_EQ(renderExplain(doc, 2),
            "pod team-a/p1 (queue team-a, 4 GPUs): pending\n"
            "queue: admits it as borrowed (beyond deserved, from idle GPUs)\n"
            "it fits now, best on n1 (score 9 of 10; 1 of 3 nodes fit); waiting for kube-scheduler "
            "to retry it\n"
            "\n"
            "NODE  FREE/GPUS  VERDICT\n"
            "n1    8/8        fits, score 9 of 10\n"
            "n2    1.5/8      fewer than 4 GPUs free\n"
            "... and 1 more nodes (--nodes N shows more)\n");
}

TEST(RenderExplain, ARefusingQueueAndABoundPod) {
  json refused = {
      {"pod", "team-c/x"},
      {"queue", "team-c"},
      {"gpus", 3},
      {"state", "pending"},
      {"node", ""},
      {"admission", {{"admitted", false}, {"reason", "queue team-c at 2/2 GPUs (limit)"}}},
      {"nodes", json::array()},
      {"summary", "its queue refuses it on every node: queue team-c at 2/2 GPUs (limit)"}};
  EXPECT_EQ(renderExplain(refused, 10),
            "pod team-c/x (queue team-c, 3 GPUs): pending\n"
            "queue: refuses it: queue team-c at 2/2 GPUs (limit)\n"
            "its queue refuses it on every node: queue team-c at 2/2 GPUs (limit)\n");
  json bound = {{"pod", "t/b"},
                {"queue", "t"},
                {"gpus", 1},
                {"state", "bound"},
                {"node", "n1"},
                {"nodes", json::array()},
                {"summary", "it is bound to node n1"}};
  EXPECT_EQ(renderExplain(bound, 10),
            "pod t/b (queue t, 1 GPUs): bound on n1\nit is bound to node n1\n");
}

TEST(JsonLogs, OneEscapedObjectPerLine) {
  JsonLogFormatter formatter;
  const std::string payload = "filter rejected \"team-a/x\"\n\ton all 3 nodes: \\ odd";
  spdlog::details::log_msg msg(spdlog::source_loc{}, "gpufair", spdlog::level::info, payload);
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  const std::string line(out.data(), out.size());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line only";
  const json entry = json::parse(line);
  EXPECT_EQ(entry.at("level"), "info");
  EXPECT_EQ(entry.at("msg"), payload);
  EXPECT_EQ(entry.at("logger"), "gpufair");
  EXPECT_TRUE(entry.at("thread").is_number());
  EXPECT_EQ(entry.at("ts").get<std::string>().size(), 24u);  // 2026-11-22T03:40:00.123Z
}

TEST(LogFormat, Parse) {
  EXPECT_EQ(*parseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*parseLogFormat("json"), LogFormat::kJson);
  auto bad = parseLogFormat("JSON");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "--log-format must be text or json, not \"JSON\"");
}

// What reached the pipe's other end so far (the sink's stream is the write end).
std::string drain(int fd) {
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, chunk + n);
  return text;
}

TEST(BatchedStreamSink, InfoLinesWaitForTheIntervalWarningsAndFlushWriteAtOnce) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  std::FILE* stream = ::fdopen(fds[1], "w");
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(std::setvbuf(stream, nullptr, _IOFBF, 1 << 16), 0);
  const auto t0 = spdlog::log_clock::now();
  auto log = [](BatchedStreamSink& sink, spdlog::log_clock::time_point when,
                spdlog::level::level_enum level, std::string_view text) {
    sink.log(spdlog::details::log_msg(when, spdlog::source_loc{}, "", level, text));
  };
  {
    BatchedStreamSink sink(stream, std::chrono::seconds{1});
    sink.set_pattern("%v");
    log(sink, t0, spdlog::level::info, "first");  // nothing written before: at once
    EXPECT_EQ(drain(fds[0]), "first\n");
    log(sink, t0 + std::chrono::milliseconds{10}, spdlog::level::info, "bound a");
    log(sink, t0 + std::chrono::milliseconds{20}, spdlog::level::info, "bound b");
    EXPECT_EQ(drain(fds[0]), "") << "within a second of the last write: buffered";
    log(sink, t0 + std::chrono::milliseconds{30}, spdlog::level::warn, "failed");
    EXPECT_EQ(drain(fds[0]), "bound a\nbound b\nfailed\n") << "a warning writes, in order";
    log(sink, t0 + std::chrono::milliseconds{40}, spdlog::level::info, "bound c");
    EXPECT_EQ(drain(fds[0]), "");
    log(sink, t0 + std::chrono::milliseconds{1030}, spdlog::level::info, "bound d");
    EXPECT_EQ(drain(fds[0]), "bound c\nbound d\n") << "a second after the last write";
    log(sink, t0 + std::chrono::milliseconds{1040}, spdlog::level::info, "bound e");
    EXPECT_EQ(drain(fds[0]), "");
    sink.flush();  // what spdlog::flush_every does
    EXPECT_EQ(drain(fds[0]), "bound e\n");
    log(sink, t0 + std::chrono::milliseconds{1050}, spdlog::level::err, "error");
    EXPECT_EQ(drain(fds[0]), "error\n");
    log(sink, t0 + std::chrono::milliseconds{1060}, spdlog::level::info, "last");
    EXPECT_EQ(drain(fds[0]), "");
  }
  EXPECT_EQ(drain(fds[0]), "last\n") << "the destructor writes what is left";
  std::fclose(stream);
  ::close(fds[0]);
}

}  // namespace
}  // namespace gpufair::app
