// decodeNode / decodeConfigMap.
#include <string>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"

#include "codec_testing.h"

namespace gpufair::codec {
namespace {

using testing::failsWith;

std::string nodeWithStatus(const std::string& status) {
  return R"({"metadata":{"name":"n1"},"status":)" + status + "}";
}

TEST(DecodeNode, FullApiServerNode) {
  Result<policy::Node> r = decodeNodeJson(testing::testdata("node.json"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->name, "gpu-node-17");
  EXPECT_EQ(r->allocatable, 8000);
  EXPECT_FALSE(r->unschedulable);
  EXPECT_FALSE(r->deleting);
  EXPECT_TRUE(r->takesNewPods());
  EXPECT_EQ(r->labels.size(), 3u);
  EXPECT_EQ(r->labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
}

TEST(DecodeNode, AllocatableNotCapacity) {
  Result<policy::Node> r = decodeNodeJson(nodeWithStatus(
      R"({"capacity":{"nvidia.com/gpu":"8"},"allocatable":{"nvidia.com/gpu":"6"}})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->allocatable, 6000);
}

TEST(DecodeNode, MissingGpusMeanZero) {
  for (const std::string& json :
       {std::string(R"({"metadata":{"name":"n1"}})"), nodeWithStatus("{}"), nodeWithStatus("null"),
        nodeWithStatus(R"({"allocatable":null})"),
        nodeWithStatus(R"({"capacity":{"nvidia.com/gpu":"8"}})"),
        nodeWithStatus(R"({"allocatable":{"cpu":"4","memory":"16Gi"}})"),
        nodeWithStatus(R"({"allocatable":{"nvidia.com/gpu":"0"}})")}) {
    Result<policy::Node> r = decodeNodeJson(json);
    ASSERT_TRUE(r.ok()) << json << ": " << r.error();
    EXPECT_EQ(r->allocatable, 0) << json;
  }
}

TEST(DecodeNode, Unschedulable) {
  Result<policy::Node> r =
      decodeNodeJson(R"({"metadata":{"name":"n1"},"spec":{"unschedulable":true},
                                              "status":{"allocatable":{"nvidia.com/gpu":"4"}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->unschedulable);
  EXPECT_FALSE(r->takesNewPods());
  EXPECT_EQ(r->allocatable, 4000);

  r = decodeNodeJson(R"({"metadata":{"name":"n1"},"spec":{"unschedulable":false}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->unschedulable);
  r = decodeNodeJson(R"({"metadata":{"name":"n1"},"spec":{"unschedulable":null}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->unschedulable);
}

TEST(DecodeNode, DeletionTimestampMeansDeleting) {
  Result<policy::Node> r =
      decodeNodeJson(R"({"metadata":{"name":"n1","deletionTimestamp":"2026-11-22T10:00:00Z"}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->deleting);
  EXPECT_FALSE(r->takesNewPods());
}

TEST(DecodeNode, KeysMatchInAnyCase) {
  Result<policy::Node> r =
      decodeNodeJson(R"({"Metadata":{"NAME":"n1"},"SPEC":{"Unschedulable":true},
                                              "Status":{"ALLOCATABLE":{"nvidia.com/gpu":"2"}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->name, "n1");
  EXPECT_TRUE(r->unschedulable);
  EXPECT_EQ(r->allocatable, 2000);
}

TEST(DecodeNode, Errors) {
  EXPECT_TRUE(failsWith(decodeNodeJson("[1]"), {"Node must be a JSON object"}));
  EXPECT_TRUE(failsWith(decodeNodeJson("{"), {"Node is not valid JSON"}));
  EXPECT_TRUE(failsWith(decodeNodeJson("{}"), {"node has no metadata"}));
  EXPECT_TRUE(failsWith(decodeNodeJson(R"({"metadata":{}})"), {"node has no metadata.name"}));
  EXPECT_TRUE(failsWith(decodeNodeJson(R"({"metadata":{"name":["n1"]}})"),
                        {"metadata.name must be a string"}));
  EXPECT_TRUE(failsWith(decodeNodeJson(R"({"metadata":{"name":"n1","labels":{"a":1}}})"),
                        {"node n1", "metadata.labels[\"a\"] must be a string"}));
  for (const char* bad : {R"("true")", "1", "{}", "[]"}) {
    EXPECT_TRUE(failsWith(
        decodeNodeJson(std::string(R"({"metadata":{"name":"n1"},"spec":{"unschedulable":)") + bad +
                       "}}"),
        {"node n1", "spec.unschedulable must be true or false"}))
        << bad;
  }
  EXPECT_TRUE(failsWith(decodeNodeJson(R"({"metadata":{"name":"n1"},"spec":7})"),
                        {"node.spec must be an object"}));
  EXPECT_TRUE(failsWith(decodeNodeJson(nodeWithStatus(R"({"allocatable":"8"})")),
                        {"node n1", "status.allocatable must be an object"}));
  EXPECT_TRUE(
      failsWith(decodeNodeJson(nodeWithStatus(R"({"allocatable":{"nvidia.com/gpu":"eight"}})")),
                {"node n1", "status.allocatable[\"nvidia.com/gpu\"]", "\"eight\""}));
  EXPECT_TRUE(
      failsWith(decodeNodeJson(nodeWithStatus(R"({"allocatable":{"nvidia.com/gpu":"7.5"}})")),
                {"whole number", "7.5"}));
  EXPECT_TRUE(
      failsWith(decodeNodeJson(nodeWithStatus(R"({"allocatable":{"nvidia.com/gpu":"-8"}})")),
                {"must not be negative"}));
  // Every allocatable quantity is checked, not only the GPU count.
  EXPECT_TRUE(failsWith(decodeNodeJson(nodeWithStatus(R"({"allocatable":{"memory":"lots"}})")),
                        {"status.allocatable[\"memory\"]"}));
}

TEST(DecodeConfigMap, FullApiServerConfigMap) {
  Result<ConfigMap> r = decodeConfigMapJson(testing::testdata("configmap.json"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->name, "gpufair-quotas");
  EXPECT_EQ(r->ns, "gpufair-system");
  EXPECT_EQ(r->uid, "77aa88bb-99cc-4dd0-8ee1-ff0011223344");
  EXPECT_EQ(r->resourceVersion, "48200123");
  EXPECT_EQ(r->labels.at("app.kubernetes.io/part-of"), "gpufair");
  ASSERT_EQ(r->data.size(), 2u);  // binaryData is not data
  EXPECT_EQ(r->data.at("queues.yaml"),
            "queues:\n- name: team-a\n  namespaces: [team-a]\n  gpu: {deserved: 20, limit: 30}\n");
  EXPECT_EQ(r->data.at("note"), "\xc3\xa9t\xc3\xa9 \"quoted\"");  // JSON escapes decoded
}

TEST(DecodeConfigMap, OptionalParts) {
  Result<ConfigMap> r = decodeConfigMapJson(R"({"metadata":{"name":"cm"}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->ns, "default");
  EXPECT_TRUE(r->data.empty());
  EXPECT_TRUE(r->labels.empty());

  r = decodeConfigMapJson(
      R"({"Metadata":{"Name":"cm","NAMESPACE":"x"},"DATA":{"k":""},"data2":1})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->ns, "x");
  ASSERT_EQ(r->data.count("k"), 1u);
  EXPECT_EQ(r->data.at("k"), "");

  r = decodeConfigMapJson(R"({"metadata":{"name":"cm","labels":null},"data":null})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->data.empty());
}

TEST(DecodeConfigMap, Errors) {
  EXPECT_TRUE(failsWith(decodeConfigMapJson("\"cm\""), {"ConfigMap must be a JSON object"}));
  EXPECT_TRUE(failsWith(decodeConfigMapJson("{\"a\":}"), {"ConfigMap is not valid JSON"}));
  EXPECT_TRUE(failsWith(decodeConfigMapJson(R"({"data":{}})"), {"configmap has no metadata"}));
  EXPECT_TRUE(failsWith(decodeConfigMapJson(R"({"metadata":{"namespace":"x"}})"),
                        {"configmap has no metadata.name"}));
  EXPECT_TRUE(
      failsWith(decodeConfigMapJson(R"({"metadata":{"name":"cm","namespace":"x"},"data":{"n":5}})"),
                {"configmap x/cm", "configmap.data[\"n\"] must be a string"}));
  EXPECT_TRUE(failsWith(decodeConfigMapJson(R"({"metadata":{"name":"cm"},"data":["a"]})"),
                        {"configmap.data must be an object"}));
  EXPECT_TRUE(failsWith(decodeConfigMapJson(R"({"metadata":{"name":"cm","resourceVersion":1}})"),
                        {"metadata.resourceVersion must be a string"}));
}

}  // namespace
}  // namespace gpufair::codec
