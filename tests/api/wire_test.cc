// Extender wire codecs against golden requests shaped as kube-scheduler sends them.
#include "gpufair/api/wire.h"

#include <limits>

#include <gtest/gtest.h>

#include "test_support.h"

namespace gpufair::api {
namespace {

using testsupport::parseJson;
using testsupport::readTestdata;

class WireTest : public ::testing::Test {
 protected:
  simdjson::dom::element parse(const std::string& name) {
    text_ = simdjson::padded_string(readTestdata(name));
    simdjson::dom::element root;
    EXPECT_EQ(parser_.parse(text_).get(root), simdjson::SUCCESS) << name;
    return root;
  }
  simdjson::dom::element parseText(std::string_view json) {
    text_ = simdjson::padded_string(json);
    simdjson::dom::element root;
    EXPECT_EQ(parser_.parse(text_).get(root), simdjson::SUCCESS) << json;
    return root;
  }

  simdjson::dom::parser parser_;
  simdjson::padded_string text_;
};

TEST_F(WireTest, FilterArgsWithNodeNamesDecodePodAndNames) {
  ExtenderArgs args;
  ASSERT_TRUE(decodeExtenderArgs(parse("filter_node_names.json"), args).isOk());
  EXPECT_FALSE(args.nodesMode);
  EXPECT_EQ(args.pod.ns, "team-a");
  EXPECT_EQ(args.pod.name, "train-1");
  EXPECT_EQ(args.pod.uid, testsupport::kTrainUid);
  EXPECT_EQ(args.pod.schedulerName, "gpufair");
  // trainer requests 3, the sidecar only limits 1 (request defaults to it), init container 2.
  EXPECT_EQ(args.pod.gpus, 4 * kMilliPerGpu);
  EXPECT_EQ(args.pod.labels.at("app"), "resnet");
  EXPECT_TRUE(args.pod.nodeName.empty());
  EXPECT_EQ(args.candidates,
            (std::vector<std::string_view>{"gpu-node-1", "gpu-node-2", "gpu-node-3", "cpu-node-1",
                                           "ghost-node"}));
}

TEST_F(WireTest, FilterArgsWithNodesDecodeEveryNodeObject) {
  ExtenderArgs args;
  ASSERT_TRUE(decodeExtenderArgs(parse("filter_nodes.json"), args).isOk());
  EXPECT_TRUE(args.nodesMode);
  ASSERT_EQ(args.nodes.size(), 4u);
  ASSERT_EQ(args.nodeObjects.size(), 4u);
  EXPECT_EQ(args.nodes[0].name, "gpu-node-1");
  EXPECT_EQ(args.nodes[0].allocatable, 8 * kMilliPerGpu);
  EXPECT_FALSE(args.nodes[0].unschedulable);
  EXPECT_EQ(args.nodes[2].name, "gpu-node-3");
  EXPECT_TRUE(args.nodes[2].unschedulable);
  EXPECT_EQ(args.nodes[3].name, "cpu-node-1");
  EXPECT_EQ(args.nodes[3].allocatable, 0);
  EXPECT_EQ(args.candidates, (std::vector<std::string_view>{"gpu-node-1", "gpu-node-2",
                                                            "gpu-node-3", "cpu-node-1"}));
}

TEST_F(WireTest, KeysOfAnyCaseAndNullsAreAccepted) {
  ExtenderArgs args;
  ASSERT_TRUE(decodeExtenderArgs(parse("filter_odd_case.json"), args).isOk());
  EXPECT_EQ(args.pod.key(), "team-a/odd-1");
  EXPECT_FALSE(args.nodesMode);  // "NODES": null is absent
  EXPECT_EQ(args.candidates, (std::vector<std::string_view>{"gpu-node-1", "gpu-node-2"}));

  BindingArgs bind;
  ASSERT_TRUE(decodeBindingArgs(parse("bind_odd_case.json"), bind).isOk());
  EXPECT_EQ(bind.podName, "train-1");
  EXPECT_EQ(bind.podNamespace, "team-a");
  EXPECT_EQ(bind.podUid, testsupport::kTrainUid);
  EXPECT_EQ(bind.node, "gpu-node-1");
}

TEST_F(WireTest, NullNodeNamesWithNodesUsesNodesAndEmptyNodeListIsValid) {
  ExtenderArgs args;
  ASSERT_TRUE(decodeExtenderArgs(
                  parseText(R"({"Pod":{"metadata":{"name":"p","namespace":"n"}},"NodeNames":null,
                               "Nodes":{"metadata":{},"items":null}})"),
                  args)
                  .isOk());
  EXPECT_TRUE(args.nodesMode);
  EXPECT_TRUE(args.candidates.empty());
}

struct BadArgsCase {
  const char* name;
  const char* json;
  const char* error;
};

class BadExtenderArgsTest : public WireTest, public ::testing::WithParamInterface<BadArgsCase> {};

TEST_P(BadExtenderArgsTest, SaysWhatIsWrong) {
  ExtenderArgs args;
  const Status status = decodeExtenderArgs(parseText(GetParam().json), args);
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.reason(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadExtenderArgsTest,
    ::testing::Values(
        BadArgsCase{"NotAnObject", R"([1,2])", "request body: expected a JSON object, got array"},
        BadArgsCase{"MissingPod", R"({"NodeNames":["a"]})", "missing Pod"},
        BadArgsCase{"NullPod", R"({"Pod":null,"NodeNames":["a"]})", "missing Pod"},
        BadArgsCase{"PodIsString", R"({"Pod":"train-1","NodeNames":["a"]})",
                    "Pod: expected an object, got string"},
        BadArgsCase{"NodeNamesNotArray", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":"a"})",
                    "NodeNames: expected an array, got string"},
        BadArgsCase{"NodeNameNotString", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["a",7]})",
                    "NodeNames[1]: expected a string, got number"},
        BadArgsCase{"NodesNotObject", R"({"Pod":{"metadata":{"name":"p"}},"Nodes":[]})",
                    "Nodes: expected an object, got array"},
        BadArgsCase{"NodeItemNotObject",
                    R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[true]}})",
                    "Nodes.items[0]: expected an object, got boolean"},
        BadArgsCase{"NodeWithoutName",
                    R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[{"metadata":{}}]}})",
                    "Nodes.items[0]: node has no metadata.name"},
        BadArgsCase{"NoCandidates", R"({"Pod":{"metadata":{"name":"p"}}})",
                    "neither NodeNames nor Nodes given"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(WireTest, PodErrorsNameThePodField) {
  ExtenderArgs args;
  const Status status = decodeExtenderArgs(
      parseText(R"({"Pod":{"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[
                  {"name":"c","resources":{"requests":{"nvidia.com/gpu":"1.5"}}}]}},
                  "NodeNames":[]})"),
      args);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.reason().rfind("Pod: ", 0), 0u) << status.reason();
}

TEST_F(WireTest, PreemptionArgsWithFullVictimPodsBecomeUids) {
  PreemptionArgs args;
  ASSERT_TRUE(decodePreemptionArgs(parse("preempt_victims.json"), args).isOk());
  EXPECT_EQ(args.pod.key(), "team-a/train-1");
  ASSERT_EQ(args.victims.size(), 1u);
  EXPECT_EQ(args.victims[0].first, "gpu-node-2");
  EXPECT_EQ(args.victims[0].second.podUids,
            (std::vector<std::string>{"9a1b2c3d-0000-4f00-8e00-000000000007",
                                      "9a1b2c3d-0000-4f00-8e00-000000000008"}));
  EXPECT_EQ(args.victims[0].second.numPdbViolations, 1);
}

TEST_F(WireTest, PreemptionArgsWithMetaVictims) {
  PreemptionArgs args;
  ASSERT_TRUE(decodePreemptionArgs(parse("preempt_meta_victims.json"), args).isOk());
  ASSERT_EQ(args.victims.size(), 2u);
  EXPECT_EQ(args.victims[0].first, "gpu-node-2");
  EXPECT_EQ(args.victims[0].second.podUids.size(), 2u);
  EXPECT_EQ(args.victims[1].first, "gpu-node-1");
  EXPECT_TRUE(args.victims[1].second.podUids.empty());
}

TEST_F(WireTest, PreemptionArgsRejectWrongTypes) {
  PreemptionArgs args;
  const Status status = decodePreemptionArgs(
      parseText(
          R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToMetaVictims":{"n1":{"Pods":[],"NumPDBViolations":"2"}}})"),
      args);
  EXPECT_EQ(status.reason(),
            "NodeNameToMetaVictims[n1].NumPDBViolations: expected an integer, got string");
}

TEST_F(WireTest, BindingArgs) {
  BindingArgs args;
  ASSERT_TRUE(decodeBindingArgs(parse("bind.json"), args).isOk());
  EXPECT_EQ(args.podName, "train-1");
  EXPECT_EQ(args.podNamespace, "team-a");
  EXPECT_EQ(args.podUid, testsupport::kTrainUid);
  EXPECT_EQ(args.node, "gpu-node-1");

  EXPECT_EQ(decodeBindingArgs(parseText(R"({"PodName":"p","PodUID":"u"})"), args).reason(),
            "missing Node");
  EXPECT_EQ(decodeBindingArgs(parseText(R"({"PodName":"p","Node":1})"), args).reason(),
            "Node: expected a string, got number");
}

TEST(WireEncodeTest, StringsAreEscaped) {
  std::string out;
  appendJsonString(out, "a\"b\\c\nd\x01\xc3\xa9");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\u0001\xc3\xa9\"");
  EXPECT_EQ(parseJson(out).get<std::string>(), "a\"b\\c\nd\x01\xc3\xa9");
}

TEST(WireEncodeTest, EveryAsciiCharacterAtEveryPositionRoundTrips) {
  for (int c = 0; c < 0x80; ++c) {
    for (std::size_t position = 0; position < 20; ++position) {
      std::string text = "gpu-node-0123456789x";
      text[position] = static_cast<char>(c);
      std::string out;
      appendJsonString(out, text);
      EXPECT_EQ(parseJson(out).get<std::string>(), text) << "char " << c << " at " << position;
    }
  }
}

TEST(WireEncodeTest, FilterResultInNodeNamesMode) {
  ExtenderArgs args;
  args.candidates = {"n1", "n2", "n3"};
  policy::FilterResult result;
  result.feasible = {args.candidates[0]};
  result.failed = {{args.candidates[1], "node n2 has 1 of 8 GPUs free; pod needs \"4\""}};
  result.unresolvable = {{args.candidates[2], "cordoned"}};
  std::string out;
  encodeFilterResult(args, result, "", out);
  const auto json = parseJson(out);
  EXPECT_TRUE(json.at("Nodes").is_null());
  EXPECT_EQ(json.at("NodeNames"), nlohmann::json::array({"n1"}));
  EXPECT_EQ(json.at("FailedNodes"),
            (nlohmann::json{{"n2", "node n2 has 1 of 8 GPUs free; pod needs \"4\""}}));
  EXPECT_EQ(json.at("FailedAndUnresolvableNodes"), (nlohmann::json{{"n3", "cordoned"}}));
  EXPECT_EQ(json.at("Error"), "");
}

TEST(WireEncodeTest, HostPriorityListAndPreemptionResult) {
  std::vector<policy::NodeScore> scores{{"n1", 10}, {"n2", 0}};
  std::string out;
  encodeHostPriorityList(scores, out);
  EXPECT_EQ(parseJson(out), nlohmann::json::parse(R"([{"Host":"n1","Score":10},
                                                      {"Host":"n2","Score":0}])"));
  out.clear();
  encodeHostPriorityList({}, out);
  EXPECT_EQ(out, "[]");

  std::vector<std::pair<std::string, MetaVictims>> victims{{"n1", {{"u1", "u2"}, 3}}};
  out.clear();
  encodePreemptionResult(victims, out);
  EXPECT_EQ(parseJson(out), nlohmann::json::parse(R"({"NodeNameToMetaVictims":{"n1":
      {"Pods":[{"UID":"u1"},{"UID":"u2"}],"NumPDBViolations":3}}})"));
}

// The long lists are written into room made once; a name that needs escaping (hostile bodies)
// switches the rest to the general way. Every position of such a name, scores of any size.
TEST(WireEncodeTest, ListsWithNamesToEscapeAnywhereRoundTrip) {
  for (std::size_t odd = 0; odd <= 4; ++odd) {
    std::vector<std::string> names{"gpu-node-1", "", "n\"2", "gpu-node-3.example", "x"};
    if (odd < names.size()) names[odd] = "odd \"\\\n\x01 name";
    ExtenderArgs args;
    args.candidates.assign(names.begin(), names.end());
    policy::FilterResult result;
    result.feasible = args.candidates;
    std::string out = "prefix";  // appended after what the string held
    encodeFilterResult(args, result, "", out);
    ASSERT_EQ(out.substr(0, 6), "prefix");
    EXPECT_EQ(parseJson(out.substr(6)).at("NodeNames"), nlohmann::json(names)) << odd;

    std::vector<policy::NodeScore> scores;
    nlohmann::json expected = nlohmann::json::array();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const int score = i == 0 ? std::numeric_limits<int>::min() : static_cast<int>(i) * 7 - 9;
      scores.push_back({args.candidates[i], score});
      expected.push_back({{"Host", names[i]}, {"Score", score}});
    }
    out = "[";
    encodeHostPriorityList(scores, out);
    EXPECT_EQ(parseJson(out.substr(1)), expected) << odd;
  }
}

}  // namespace
}  // namespace gpufair::api
