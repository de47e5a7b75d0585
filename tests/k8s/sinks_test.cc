#include "gpufair/k8s/sinks.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::ManualClock;
using nlohmann::json;

std::string nodeJson(const std::string& name, const std::string& gpus, bool unschedulable = false) {
  json node = {{"kind", "Node"},
               {"apiVersion", "v1"},
               {"metadata", {{"name", name}, {"uid", "uid-" + name}}},
               {"spec", {{"unschedulable", unschedulable}}},
               {"status", {{"allocatable", {{"cpu", "96"}, {"nvidia.com/gpu", gpus}}}}}};
  return node.dump();
}

std::string podJson(const std::string& name, const std::string& gpus, const std::string& node,
                    const std::string& phase = "Running", bool terminating = false) {
  json meta = {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name}};
  if (terminating) meta["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  json resources = gpus.empty() ? json{{"requests", {{"cpu", "1"}}}}
                                : json{{"limits", {{"nvidia.com/gpu", gpus}}}};
  json pod = {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata", meta},
      {"spec",
       {{"nodeName", node}, {"containers", {{{"name", "main"}, {"resources", resources}}}}}},
      {"status", {{"phase", phase}}}};
  return pod.dump();
}

class SinksTest : public ::testing::Test {
 protected:
  MilliGpu used(const std::string& node) {
    const auto* state = mirror_.snapshot()->findNode(node);
    return state == nullptr ? -1 : state->used();
  }
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  state::Mirror mirror_{clock_};
  NodeSink nodes_{mirror_};
  PodSink pods_{mirror_};
};

TEST(ObjectMeta, PeeksAtNamesOfAnyObject) {
  ObjectMeta meta = peekMeta(R"({"metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":7})");
  EXPECT_EQ(meta.describe(), "ns/p");
  EXPECT_EQ(meta.uid, "u");
  EXPECT_EQ(peekMeta("not json").describe(), "(unnamed object)");
  EXPECT_EQ(peekMeta(R"({"metadata":{"name":"n"}})").describe(), "n");
}

TEST_F(SinksTest, NodeListReplacesNodesAndSkipsBadOnes) {
  nodes_.replace({nodeJson("node-1", "8"), nodeJson("node-2", "4"), nodeJson("node-bad", "lots")});
  auto snapshot = mirror_.snapshot();
  EXPECT_EQ(snapshot->nodes().size(), 2u);
  EXPECT_EQ(snapshot->capacity(), 12'000);
  EXPECT_EQ(nodes_.decodeErrors(), 1u);

  nodes_.replace({nodeJson("node-2", "4")});  // node-1 was deleted while the watch was down
  EXPECT_EQ(mirror_.snapshot()->findNode("node-1"), nullptr);
}

TEST_F(SinksTest, NodeEventsUpdateTheMirror) {
  nodes_.added(nodeJson("node-1", "8"));
  EXPECT_EQ(mirror_.snapshot()->capacity(), 8'000);
  nodes_.modified(nodeJson("node-1", "8", /*unschedulable=*/true));
  auto cordoned = mirror_.snapshot()->findNode("node-1");
  ASSERT_NE(cordoned, nullptr);
  EXPECT_FALSE(cordoned->node().takesNewPods());
  EXPECT_EQ(mirror_.snapshot()->capacity(), 0);

  nodes_.modified("{broken");  // logged, counted, nothing changes
  EXPECT_EQ(nodes_.decodeErrors(), 1u);
  EXPECT_NE(mirror_.snapshot()->findNode("node-1"), nullptr);

  nodes_.deleted(nodeJson("node-1", "8"));
  EXPECT_EQ(mirror_.snapshot()->findNode("node-1"), nullptr);
  nodes_.deleted("{}");
  EXPECT_EQ(nodes_.decodeErrors(), 2u);
}

TEST_F(SinksTest, PodsHoldGpusUntilFinishedOrDeleted) {
  nodes_.added(nodeJson("node-1", "8"));
  pods_.replace({podJson("a", "2", "node-1"), podJson("b", "3", "node-1", "Pending"),
                 podJson("cpu-only", "", "node-1"), podJson("bad", "-1", "node-1")});
  EXPECT_EQ(used("node-1"), 5'000);  // a Pending pod bound to the node holds its GPUs too
  EXPECT_EQ(pods_.decodeErrors(), 1u);
  EXPECT_EQ(mirror_.findPod("uid-cpu-only"), nullptr);  // no GPUs: not mirrored

  pods_.modified(podJson("a", "2", "node-1", "Running", /*terminating=*/true));
  EXPECT_EQ(used("node-1"), 5'000);  // terminating still holds
  pods_.modified(podJson("a", "2", "node-1", "Succeeded", true));
  EXPECT_EQ(used("node-1"), 3'000);
  pods_.deleted(podJson("b", "3", "node-1"));
  EXPECT_EQ(used("node-1"), 0);
  EXPECT_EQ(mirror_.findPod("uid-b"), nullptr);
}

TEST_F(SinksTest, PendingPodsAreDemandAndDeletesWorkWithoutAFullObject) {
  nodes_.added(nodeJson("node-1", "8"));
  pods_.added(podJson("waiting", "4", ""));
  auto snapshot = mirror_.snapshot();
  ASSERT_EQ(snapshot->pending().size(), 1u);
  EXPECT_EQ(snapshot->pending()[0]->uid, "uid-waiting");

  pods_.deleted(
      R"({"metadata":{"name":"waiting","namespace":"team-a","uid":"uid-waiting"},"spec":"?"})");
  EXPECT_TRUE(mirror_.snapshot()->pending().empty());
  pods_.deleted("null");
  EXPECT_EQ(pods_.decodeErrors(), 1u);
}

TEST_F(SinksTest, APodThatNoLongerWantsGpusLeavesTheMirror) {
  pods_.added(podJson("p", "1", ""));
  ASSERT_NE(mirror_.findPod("uid-p"), nullptr);
  pods_.modified(podJson("p", "", ""));
  EXPECT_EQ(mirror_.findPod("uid-p"), nullptr);
}

// A watch event's object comes parsed by the reflector (changed()): it acts as its text does,
// without a second parse.
TEST_F(SinksTest, ParsedWatchObjectsActAsTheirText) {
  using Change = ReflectorSink::Change;
  simdjson::dom::parser parser;
  auto apply = [&](ReflectorSink& sink, Change change, const std::string& text) {
    simdjson::dom::element parsed;
    ASSERT_EQ(parser.parse(text).get(parsed), simdjson::SUCCESS) << text;
    sink.changed(change, text, parsed);
  };
  apply(nodes_, Change::kAdded, nodeJson("node-1", "8", /*unschedulable=*/true));
  EXPECT_EQ(mirror_.snapshot()->capacity(), 0);
  apply(nodes_, Change::kModified, nodeJson("node-1", "8"));
  EXPECT_EQ(mirror_.snapshot()->capacity(), 8'000);
  apply(pods_, Change::kAdded, podJson("a", "2", "node-1"));
  apply(pods_, Change::kAdded, podJson("b", "3", "node-1"));
  EXPECT_EQ(used("node-1"), 5'000);
  apply(pods_, Change::kModified, podJson("a", "2", "node-1", "Succeeded"));
  EXPECT_EQ(used("node-1"), 3'000);
  apply(pods_, Change::kModified, podJson("b", "-1", "node-1"));  // logged, counted, kept
  EXPECT_EQ(pods_.decodeErrors(), 1u);
  EXPECT_EQ(used("node-1"), 3'000);
  apply(pods_, Change::kDeleted, podJson("b", "3", "node-1"));
  EXPECT_EQ(mirror_.findPod("uid-b"), nullptr);
  EXPECT_EQ(used("node-1"), 0);
  apply(nodes_, Change::kModified, nodeJson("node-1", "many"));
  EXPECT_EQ(nodes_.decodeErrors(), 1u);
  apply(nodes_, Change::kDeleted, nodeJson("node-1", "8"));
  EXPECT_EQ(mirror_.snapshot()->findNode("node-1"), nullptr);
}

TEST_F(SinksTest, AllPodsCanBeKept) {
  PodSink all(mirror_, PodSinkOptions{false, nullptr});
  all.added(podJson("cpu-only", "", "node-1"));
  EXPECT_NE(mirror_.findPod("uid-cpu-only"), nullptr);
}

// kube-scheduler's failed cycles (PodScheduled False), for the requeuer: from a list (which
// replaces them), from watch events as text or parsed; gone with the pod.
TEST_F(SinksTest, PodsKubeSchedulerFailedToPlaceAreTracked) {
  auto failures = std::make_shared<SchedulingFailures>();
  PodSink sink(mirror_, PodSinkOptions{true, failures});
  auto scheduled = [](const std::string& text, const char* status) {
    json pod = json::parse(text);
    pod["status"]["conditions"] = {
        {{"type", "PodScheduled"}, {"status", status}, {"reason", "Unschedulable"}}};
    return pod.dump();
  };
  failures->set("uid-gone-meanwhile", true);
  sink.replace({scheduled(podJson("parked", "1", "", "Pending"), "False"),
                podJson("new", "1", "", "Pending"),
                scheduled(podJson("cpu-only", "", "", "Pending"), "False")});
  EXPECT_TRUE(failures->contains("uid-parked"));
  EXPECT_FALSE(failures->contains("uid-new")) << "not tried yet";
  EXPECT_FALSE(failures->contains("uid-cpu-only")) << "no GPUs: not in the mirror";
  EXPECT_FALSE(failures->contains("uid-gone-meanwhile")) << "a list replaces what was known";
  EXPECT_EQ(failures->size(), 1u);

  sink.modified(scheduled(podJson("new", "1", "", "Pending"), "False"));
  EXPECT_TRUE(failures->contains("uid-new"));
  simdjson::dom::parser parser;
  simdjson::dom::element parsed;
  const std::string bound = scheduled(podJson("parked", "1", "node-1", "Pending"), "True");
  ASSERT_EQ(parser.parse(bound).get(parsed), simdjson::SUCCESS);
  sink.changed(ReflectorSink::Change::kModified, bound, parsed);
  EXPECT_FALSE(failures->contains("uid-parked")) << "placed now";
  sink.deleted(podJson("new", "1", "", "Pending"));
  EXPECT_EQ(failures->size(), 0u);
}

}  // namespace
}  // namespace gpufair::k8s
