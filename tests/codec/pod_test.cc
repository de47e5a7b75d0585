// decodePod / decodePodJson: a full Pod as kube-apiserver serves it, GPU request rules, and errors.
#include <chrono>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"
#include "gpufair/common/labels.h"

#include "codec_testing.h"

namespace gpufair::codec {
namespace {

using policy::PodPhase;
using testing::failsWith;
using testing::utc;

// A minimal pod around the given spec body (the text between the braces of "spec").
std::string podWithSpec(const std::string& spec) {
  return R"({"metadata":{"name":"p","namespace":"team-a"},"spec":{)" + spec + "}}";
}
// A pod with one container "main" whose resources object is the given text.
std::string podWithResources(const std::string& resources) {
  return podWithSpec(R"("containers":[{"name":"main","resources":)" + resources + "}]");
}

TEST(DecodePod, FullApiServerPod) {
  const std::string json = testing::testdata("pod.json");
  Result<policy::Pod> r = decodePodJson(json);
  ASSERT_TRUE(r.ok()) << r.error();
  const policy::Pod& pod = *r;
  EXPECT_EQ(pod.name, "train-llama-0");
  EXPECT_EQ(pod.ns, "team-a");
  EXPECT_EQ(pod.key(), "team-a/train-llama-0");
  EXPECT_EQ(pod.uid, "5f1c2b7e-8d3a-4c1e-9f0b-2a6d7e8f9a01");
  EXPECT_EQ(pod.nodeName, "gpu-node-17");
  EXPECT_EQ(pod.schedulerName, "gpufair");
  // 4 GPUs in the trainer plus the GPU sidecar (restartable init containers keep running);
  // the CPU-only init container needs none.
  EXPECT_EQ(pod.gpus, 5000);
  EXPECT_EQ(pod.phase, PodPhase::kRunning);
  EXPECT_FALSE(pod.terminating);
  EXPECT_TRUE(pod.overQuota);
  // The Job that recreates it (ownerReferences, controller: true): consolidation steers its
  // replacement.
  EXPECT_EQ(pod.controller, "0b7e4f9c-1a2b-4c3d-8e9f-001122334455");
  EXPECT_TRUE(pod.holdsGpus());
  ASSERT_TRUE(pod.created.has_value());
  EXPECT_EQ(*pod.created, utc(2026, 11, 22, 9, 58, 12));
  ASSERT_TRUE(pod.started.has_value());
  EXPECT_EQ(*pod.started, utc(2026, 11, 22, 10, 0, 0));
  EXPECT_EQ(pod.labels.size(), 4u);
  EXPECT_EQ(pod.labels.at(kQueueLabel), "team-a");
  EXPECT_EQ(pod.annotations.size(), 2u);
  EXPECT_EQ(pod.annotations.at("kubectl.kubernetes.io/default-container"), "trainer");
  EXPECT_EQ(pod.queue, "");  // resolved later, by the mirror
}

TEST(DecodePod, ElementAndJsonEntryPointsAgree) {
  const std::string json = testing::testdata("pod.json");
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(json).get(root), simdjson::SUCCESS);
  Result<policy::Pod> a = decodePod(root);
  Result<policy::Pod> b = decodePodJson(json);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->key(), b->key());
  EXPECT_EQ(a->gpus, b->gpus);
  EXPECT_EQ(a->labels, b->labels);
  EXPECT_EQ(a->created, b->created);
}

struct GpuCase {
  std::string name;
  std::string spec;  // body of "spec"
  MilliGpu want;
};
// gtest prints the case name, not the bytes, when a case fails.
void PrintTo(const GpuCase& c, std::ostream* os) {
  *os << c.name;
}

class DecodePodGpus : public ::testing::TestWithParam<GpuCase> {};

TEST_P(DecodePodGpus, ComputesEffectiveRequest) {
  Result<policy::Pod> r = decodePodJson(podWithSpec(GetParam().spec));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpus, GetParam().want);
}

#define CONTAINER(res) R"({"name":"c","resources":)" res "}"
INSTANTIATE_TEST_SUITE_P(
    All, DecodePodGpus,
    ::testing::Values(
        GpuCase{"NoContainers", "", 0}, GpuCase{"NoResources", R"("containers":[{"name":"c"}])", 0},
        GpuCase{"EmptyResources", R"("containers":[)" CONTAINER("{}") "]", 0},
        GpuCase{"CpuOnly", R"("containers":[)" CONTAINER(R"({"requests":{"cpu":"8"}})") "]", 0},
        GpuCase{"RequestOnly",
                R"("containers":[)" CONTAINER(R"({"requests":{"nvidia.com/gpu":"2"}})") "]", 2000},
        GpuCase{"LimitOnlyDefaultsRequest",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"4"}})") "]", 4000},
        GpuCase{"RequestWinsOverLimit",
                R"("containers":[)" CONTAINER(
                    R"({"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"3"}})") "]",
                1000},
        GpuCase{"ExplicitZeroRequestIsKept",
                R"("containers":[)" CONTAINER(
                    R"({"requests":{"nvidia.com/gpu":"0"},"limits":{"nvidia.com/gpu":"3"}})") "]",
                0},
        GpuCase{"GpuOnlyInLimitsOtherInRequests",
                R"("containers":[)" CONTAINER(
                    R"({"requests":{"cpu":"1"},"limits":{"nvidia.com/gpu":"2"}})") "]",
                2000},
        GpuCase{"NullRequestsFallBackToLimit",
                R"("containers":[)" CONTAINER(
                    R"({"requests":null,"limits":{"nvidia.com/gpu":"2"}})") "]",
                2000},
        GpuCase{"JsonInteger",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":2}})") "]", 2000},
        GpuCase{"JsonWholeDouble",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":2.0}})") "]", 2000},
        GpuCase{"MilliSuffixWhole",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"2000m"}})") "]",
                2000},
        GpuCase{"ExponentForm",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1e1"}})") "]", 10000},
        GpuCase{"ResourceNamesAreCaseSensitive",
                R"("containers":[)" CONTAINER(R"({"limits":{"NVIDIA.COM/GPU":"2"}})") "]", 0},
        GpuCase{"ContainersAdd",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1"}})") "," CONTAINER(
                    R"({"requests":{"nvidia.com/gpu":"2"}})") "]",
                3000},
        GpuCase{"InitContainerPeak",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1"}})") R"(],
                   "initContainers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"3"}})") "]",
                3000},
        GpuCase{"LimitOnlySidecarAdds",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1"}})") R"(],
                   "initContainers":[{"name":"s","restartPolicy":"Always",
                                      "resources":{"limits":{"nvidia.com/gpu":"2"}}}])",
                3000},
        GpuCase{"OtherRestartPolicyIsNotASidecar",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1"}})") R"(],
                   "initContainers":[{"name":"s","restartPolicy":"OnFailure",
                                      "resources":{"limits":{"nvidia.com/gpu":"2"}}}])",
                2000},
        GpuCase{"OverheadAdds",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1"}})") R"(],
                   "overhead":{"cpu":"250m","nvidia.com/gpu":"1"})",
                2000},
        GpuCase{"OverheadWithoutGpu",
                R"("containers":[)" CONTAINER(R"({"limits":{"nvidia.com/gpu":"1"}})") R"(],
                   "overhead":{"cpu":"250m"})",
                1000}),
    [](const auto& info) { return info.param.name; });
#undef CONTAINER

struct ErrorCase {
  std::string name;
  std::string json;
  std::vector<std::string> parts;  // each must appear in the error
};
void PrintTo(const ErrorCase& c, std::ostream* os) {
  *os << c.name;
}

class DecodePodErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(DecodePodErrors, NamesTheProblem) {
  Result<policy::Pod> r = decodePodJson(GetParam().json);
  ASSERT_FALSE(r.ok()) << "decoded " << r->key() << " with " << r->gpus << "m GPUs";
  for (const auto& part : GetParam().parts) {
    EXPECT_NE(r.error().find(part), std::string::npos)
        << "\"" << r.error() << "\" lacks \"" << part << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, DecodePodErrors,
    ::testing::Values(
        ErrorCase{"NotJson", "{\"metadata\":", {"not valid JSON"}},
        ErrorCase{"Array", "[]", {"Pod must be a JSON object"}},
        ErrorCase{"Number", "42", {"Pod must be a JSON object"}},
        ErrorCase{"Null", "null", {"Pod must be a JSON object"}},
        ErrorCase{"NoMetadata", R"({"spec":{}})", {"no metadata"}},
        ErrorCase{"NullMetadata", R"({"metadata":null})", {"no metadata"}},
        ErrorCase{"MetadataNotObject", R"({"metadata":[]})", {"pod.metadata must be an object"}},
        ErrorCase{"NoName", R"({"metadata":{"namespace":"a"}})", {"no metadata.name"}},
        ErrorCase{"EmptyName", R"({"metadata":{"name":""}})", {"no metadata.name"}},
        ErrorCase{
            "NameNotString", R"({"metadata":{"name":5}})", {"metadata.name must be a string"}},
        ErrorCase{"LabelNotString",
                  R"({"metadata":{"name":"p","labels":{"tier":1}}})",
                  {"metadata.labels[\"tier\"] must be a string"}},
        ErrorCase{"LabelsNotObject",
                  R"({"metadata":{"name":"p","labels":["a"]}})",
                  {"metadata.labels must be an object"}},
        ErrorCase{"AnnotationNotString",
                  R"({"metadata":{"name":"p","annotations":{"a":true}}})",
                  {"metadata.annotations[\"a\"] must be a string"}},
        ErrorCase{"BadCreationTimestamp",
                  R"({"metadata":{"name":"p","namespace":"ns","creationTimestamp":"yesterday"}})",
                  {"pod ns/p", "metadata.creationTimestamp", "RFC 3339"}},
        ErrorCase{"SpecNotObject",
                  R"({"metadata":{"name":"p"},"spec":"x"})",
                  {"pod default/p", "pod.spec must be an object"}},
        ErrorCase{"ContainersNotArray",
                  podWithSpec(R"("containers":{"name":"c"})"),
                  {"pod team-a/p", "spec.containers must be an array"}},
        ErrorCase{"ContainerNotObject",
                  podWithSpec(R"("containers":["c"])"),
                  {"spec.containers[0] must be an object"}},
        ErrorCase{"InitContainersNotArray",
                  podWithSpec(R"("initContainers":"x")"),
                  {"spec.initContainers must be an array"}},
        ErrorCase{"BadGpuQuantity",
                  podWithResources(R"({"requests":{"nvidia.com/gpu":"4x"}})"),
                  {"pod team-a/p", "container main", "nvidia.com/gpu", "\"4x\""}},
        ErrorCase{"BadCpuQuantity",
                  podWithResources(R"({"limits":{"cpu":"8 cores"}})"),
                  {"container main", "resources.limits", "cpu", "\"8 cores\""}},
        ErrorCase{
            "BadQuantityInUnnamedContainer",
            podWithSpec(R"("containers":[{"name":"a"},{"resources":{"limits":{"memory":"x"}}}])"),
            {"spec.containers[1]", "memory"}},
        ErrorCase{
            "BadQuantityInInitContainer",
            podWithSpec(
                R"("initContainers":[{"name":"init","resources":{"requests":{"nvidia.com/gpu":"1Q"}}}])"),
            {"init container init", "nvidia.com/gpu", "\"1Q\""}},
        ErrorCase{"QuantityNotStringOrNumber",
                  podWithResources(R"({"limits":{"nvidia.com/gpu":true}})"),
                  {"nvidia.com/gpu", "string or a number"}},
        ErrorCase{"NegativeGpu",
                  podWithResources(R"({"limits":{"nvidia.com/gpu":"-1"}})"),
                  {"container main", "nvidia.com/gpu", "must not be negative"}},
        ErrorCase{"FractionalGpu",
                  podWithResources(R"({"requests":{"nvidia.com/gpu":"0.5"}})"),
                  {"container main", "nvidia.com/gpu", "whole number", "0.5"}},
        ErrorCase{"MilliGpu",
                  podWithResources(R"({"limits":{"nvidia.com/gpu":"1500m"}})"),
                  {"whole number", "1500m"}},
        ErrorCase{"FractionalJsonNumber",
                  podWithResources(R"({"limits":{"nvidia.com/gpu":0.1}})"),
                  {"whole number", "(got 0.1)"}},  // as written, not 0.10000000000000001
        ErrorCase{"ResourcesNotObject",
                  podWithResources("[]"),
                  {"container main.resources must be an object"}},
        ErrorCase{"RequestsNotObject",
                  podWithResources(R"({"requests":"4"})"),
                  {"container main.resources.requests must be an object"}},
        ErrorCase{"BadOverhead",
                  podWithSpec(R"("overhead":{"nvidia.com/gpu":"lots"})"),
                  {"spec.overhead", "nvidia.com/gpu"}},
        ErrorCase{"RestartPolicyNotString",
                  podWithSpec(R"("initContainers":[{"name":"s","restartPolicy":1}])"),
                  {"init container s.restartPolicy must be a string"}},
        ErrorCase{"NodeNameNotString",
                  podWithSpec(R"("nodeName":7)"),
                  {"spec.nodeName must be a string"}},
        ErrorCase{"GpuSumOverflows",
                  podWithSpec(R"("containers":[{"resources":{"limits":{"nvidia.com/gpu":"10E"}}},
                                               {"resources":{"limits":{"nvidia.com/gpu":"10E"}}}])"),
                  {"pod team-a/p", "add up to more than"}},
        ErrorCase{"PhaseNotString",
                  R"({"metadata":{"name":"p"},"status":{"phase":1}})",
                  {"status.phase must be a string"}},
        ErrorCase{"BadStartTime",
                  R"({"metadata":{"name":"p"},"status":{"startTime":"2026-02-30T00:00:00Z"}})",
                  {"status.startTime", "2026-02-30T00:00:00Z"}}),
    [](const auto& info) { return info.param.name; });

TEST(DecodePod, KeysMatchInAnyCase) {
  Result<policy::Pod> r = decodePodJson(R"({
    "METADATA": {"NAME": "p", "NameSpace": "team-b", "Labels": {"gpufair.io/over-quota": "true"}},
    "Spec": {"CONTAINERS": [{"Name": "c", "RESOURCES": {"Limits": {"nvidia.com/gpu": "2"}}}],
             "NODENAME": "n1", "schedulername": "gpufair"},
    "STATUS": {"Phase": "Running", "StartTime": "2026-11-22T10:00:00Z"}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->key(), "team-b/p");
  EXPECT_EQ(r->gpus, 2000);
  EXPECT_EQ(r->nodeName, "n1");
  EXPECT_EQ(r->schedulerName, "gpufair");
  EXPECT_EQ(r->phase, PodPhase::kRunning);
  EXPECT_TRUE(r->overQuota);
  EXPECT_TRUE(r->started.has_value());
}

TEST(DecodePod, NullStandsForAbsent) {
  Result<policy::Pod> r = decodePodJson(R"({
    "metadata": {"name": "p", "namespace": null, "uid": null, "labels": null, "annotations": null,
                 "creationTimestamp": null, "deletionTimestamp": null},
    "spec": {"containers": null, "initContainers": null, "nodeName": null, "overhead": null},
    "status": null})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->key(), "default/p");
  EXPECT_EQ(r->uid, "");
  EXPECT_TRUE(r->labels.empty());
  EXPECT_FALSE(r->created.has_value());
  EXPECT_FALSE(r->terminating);
  EXPECT_EQ(r->gpus, 0);
  EXPECT_EQ(r->nodeName, "");
  EXPECT_EQ(r->phase, PodPhase::kPending);
}

TEST(DecodePod, MinimalPodDefaults) {
  Result<policy::Pod> r = decodePodJson(R"({"metadata":{"name":"p"}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->ns, "default");
  EXPECT_EQ(r->gpus, 0);
  EXPECT_EQ(r->phase, PodPhase::kPending);
  EXPECT_FALSE(r->overQuota);
  EXPECT_FALSE(r->holdsGpus());
  EXPECT_FALSE(r->started.has_value());
}

TEST(DecodePod, DeletionTimestampMeansTerminating) {
  Result<policy::Pod> r = decodePodJson(
      R"({"metadata":{"name":"p","deletionTimestamp":"2026-11-22T10:05:00Z",
                      "deletionGracePeriodSeconds":30},
          "spec":{"nodeName":"n1"},"status":{"phase":"Running"}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->terminating);
  EXPECT_TRUE(r->holdsGpus());  // still holds its GPUs until it is gone
}

TEST(DecodePod, TimestampsWithFractionsAndOffsets) {
  Result<policy::Pod> r = decodePodJson(
      R"({"metadata":{"name":"p","creationTimestamp":"2026-11-22T12:00:00.250+02:00"},
          "status":{"startTime":"2026-11-22T05:30:00-04:30"}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r->created, utc(2026, 11, 22, 10) + std::chrono::milliseconds(250));
  EXPECT_EQ(*r->started, utc(2026, 11, 22, 10));
}

TEST(DecodePod, Phases) {
  const std::pair<const char*, PodPhase> cases[] = {{"Pending", PodPhase::kPending},
                                                    {"Running", PodPhase::kRunning},
                                                    {"Succeeded", PodPhase::kSucceeded},
                                                    {"Failed", PodPhase::kFailed},
                                                    {"Unknown", PodPhase::kUnknown},
                                                    {"running", PodPhase::kUnknown},
                                                    {"", PodPhase::kPending}};
  for (const auto& [text, phase] : cases) {
    Result<policy::Pod> r = decodePodJson(
        std::string(R"({"metadata":{"name":"p"},"status":{"phase":")") + text + "\"}}");
    ASSERT_TRUE(r.ok()) << text << ": " << r.error();
    EXPECT_EQ(r->phase, phase) << text;
  }
}

TEST(DecodePod, OverQuotaOnlyForExactTrue) {
  for (const char* value : {"false", "True", "yes", ""}) {
    Result<policy::Pod> r = decodePodJson(
        std::string(R"({"metadata":{"name":"p","labels":{"gpufair.io/over-quota":")") + value +
        "\"}}}");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_FALSE(r->overQuota) << value;
  }
}

TEST(DecodePod, UnknownFieldsAreIgnored) {
  Result<policy::Pod> r = decodePodJson(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","futureField":{"x":[1,2,3]}},
          "spec":{"containers":[{"name":"c","newThing":null,"resources":{"limits":{"nvidia.com/gpu":"1"},
                                 "claims":[{"name":"gpu-claim"}]}}],"resourceClaims":[]},
          "extra":[null,true,1.5,"s"]})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpus, 1000);
}

TEST(Field, MatchesCaseInsensitivelyAndSkipsNull) {
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  ASSERT_EQ(parser.parse(std::string(R"({"NodeName":"n1","gone":null})")).get(obj),
            simdjson::SUCCESS);
  simdjson::dom::element e;
  ASSERT_TRUE(field(obj, "nodeName", e));
  EXPECT_EQ(std::string_view(e.get_string().value()), "n1");
  EXPECT_TRUE(field(obj, "NODENAME", e));
  EXPECT_FALSE(field(obj, "gone", e));
  EXPECT_FALSE(field(obj, "missing", e));
  EXPECT_FALSE(field(obj, "nodeNam", e));
}

}  // namespace
}  // namespace gpufair::codec
