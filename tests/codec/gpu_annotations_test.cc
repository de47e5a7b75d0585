// Fractional GPUs, GPU index and models from annotations; cpu and memory requests; node model,
// cpu and memory.
#include <string>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"

#include "codec_testing.h"

namespace gpufair::codec {
namespace {

using testing::failsWith;

std::string pod(const std::string& annotations, const std::string& resources = "{}") {
  return R"({"metadata":{"name":"p","namespace":"ns","annotations":)" + annotations +
         R"(},"spec":{"containers":[{"name":"main","resources":)" + resources + "}]}}";
}

struct ShareCase {
  std::string name;
  std::string annotations;
  MilliGpu gpus;
  MilliGpu share;
};
void PrintTo(const ShareCase& c, std::ostream* os) {
  *os << c.name;
}
class DecodeGpuShare : public ::testing::TestWithParam<ShareCase> {};

TEST_P(DecodeGpuShare, Reads) {
  Result<policy::Pod> r = decodePodJson(pod(GetParam().annotations));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpus, GetParam().gpus);
  EXPECT_EQ(r->gpuShare, GetParam().share);
}

INSTANTIATE_TEST_SUITE_P(
    All, DecodeGpuShare,
    ::testing::Values(
        ShareCase{"Fraction", R"({"gpufair.io/gpu-fraction":"0.5"})", 500, 500},
        ShareCase{"FractionMilliSuffix", R"({"gpufair.io/gpu-fraction":"250m"})", 250, 250},
        ShareCase{"FractionSpaces", R"({"gpufair.io/gpu-fraction":" 0.25 "})", 250, 250},
        ShareCase{"Milli", R"({"gpufair.io/gpu-milli":"220"})", 220, 220},
        ShareCase{"OneIsAWholeGpu", R"({"gpufair.io/gpu-fraction":"1"})", 1000, 0},
        ShareCase{"ThousandMilliIsAWholeGpu", R"({"gpufair.io/gpu-milli":"1000"})", 1000, 0},
        ShareCase{"None", R"({})", 0, 0}),
    [](const auto& info) { return info.param.name; });

struct BadCase {
  std::string name;
  std::string json;
  std::vector<std::string> parts;
};
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}
class DecodeGpuShareErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(DecodeGpuShareErrors, NameTheAnnotation) {
  Result<policy::Pod> r = decodePodJson(GetParam().json);
  ASSERT_FALSE(r.ok());
  for (const auto& part : GetParam().parts) {
    EXPECT_NE(r.error().find(part), std::string::npos) << r.error() << " lacks " << part;
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, DecodeGpuShareErrors,
    ::testing::Values(
        BadCase{"Both",
                pod(R"({"gpufair.io/gpu-fraction":"0.5","gpufair.io/gpu-milli":"500"})"),
                {"pod ns/p", "gpufair.io/gpu-fraction", "gpufair.io/gpu-milli", "both"}},
        BadCase{"WithGpuRequest",
                pod(R"({"gpufair.io/gpu-fraction":"0.5"})", R"({"limits":{"nvidia.com/gpu":"1"}})"),
                {"gpufair.io/gpu-fraction", "nvidia.com/gpu"}},
        BadCase{"Zero",
                pod(R"({"gpufair.io/gpu-fraction":"0"})"),
                {"gpufair.io/gpu-fraction", "out of range"}},
        BadCase{"AboveOne",
                pod(R"({"gpufair.io/gpu-fraction":"1.5"})"),
                {"gpufair.io/gpu-fraction", "\"1.5\"", "out of range"}},
        BadCase{"Negative",
                pod(R"({"gpufair.io/gpu-fraction":"-0.5"})"),
                {"gpufair.io/gpu-fraction", "out of range"}},
        BadCase{"NotANumber",
                pod(R"({"gpufair.io/gpu-fraction":"half"})"),
                {"gpufair.io/gpu-fraction"}},
        BadCase{"MilliAbove",
                pod(R"({"gpufair.io/gpu-milli":"1001"})"),
                {"gpufair.io/gpu-milli", "out of range"}},
        BadCase{"MilliNotWhole",
                pod(R"({"gpufair.io/gpu-milli":"0.5"})"),
                {"gpufair.io/gpu-milli", "not a whole number"}},
        BadCase{"MilliZero",
                pod(R"({"gpufair.io/gpu-milli":"0"})"),
                {"gpufair.io/gpu-milli", "out of range"}}),
    [](const auto& info) { return info.param.name; });

// The extended resource gpufair.io/gpu-milli asks for the same as the gpu-milli annotation; it is
// how a fractional pod reaches the extender when managedResources lists it.
TEST(DecodeGpuMilliResource, IsAShareOfOneGpu) {
  struct Case {
    std::string name;
    std::string annotations;
    std::string resources;
    MilliGpu share;
  };
  const Case cases[] = {
      {"Limit", "{}", R"({"limits":{"gpufair.io/gpu-milli":"500"}})", 500},
      {"Request", "{}", R"({"requests":{"gpufair.io/gpu-milli":"250"}})", 250},
      {"AgreesWithAnnotation", R"({"gpufair.io/gpu-fraction":"0.5"})",
       R"({"limits":{"gpufair.io/gpu-milli":"500"}})", 500},
      {"ThousandIsAWholeGpu", "{}", R"({"limits":{"gpufair.io/gpu-milli":"1000"}})", 0},
  };
  for (const Case& c : cases) {
    Result<policy::Pod> r = decodePodJson(pod(c.annotations, c.resources));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.error();
    EXPECT_EQ(r->gpuShare, c.share) << c.name;
    EXPECT_EQ(r->gpus, c.share == 0 ? 1000 : c.share) << c.name;
  }
  // Init containers count as Kubernetes counts them: the largest, not the sum, when sequential.
  Result<policy::Pod> init = decodePodJson(
      R"({"metadata":{"name":"p","namespace":"ns"},"spec":{"initContainers":[{"name":"i",)"
      R"("resources":{"limits":{"gpufair.io/gpu-milli":"300"}}}],"containers":[{"name":"m",)"
      R"("resources":{"limits":{"gpufair.io/gpu-milli":"200"}}}]}})");
  ASSERT_TRUE(init.ok()) << init.error();
  EXPECT_EQ(init->gpuShare, 300);
}

TEST(DecodeGpuMilliResource, ErrorsNameTheResource) {
  struct Case {
    std::string name;
    std::string annotations;
    std::string resources;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {"AboveOneGpu",
       "{}",
       R"({"limits":{"gpufair.io/gpu-milli":"1500"}})",
       {"resource gpufair.io/gpu-milli", "out of range", "nvidia.com/gpu"}},
      {"NotWhole",
       "{}",
       R"({"limits":{"gpufair.io/gpu-milli":"0.5"}})",
       {"gpufair.io/gpu-milli", "whole number of milli-GPUs"}},
      {"Negative",
       "{}",
       R"({"limits":{"gpufair.io/gpu-milli":"-5"}})",
       {"gpufair.io/gpu-milli", "whole number of milli-GPUs"}},
      {"WithWholeGpus",
       "{}",
       R"({"limits":{"gpufair.io/gpu-milli":"500","nvidia.com/gpu":"1"}})",
       {"resource gpufair.io/gpu-milli", "nvidia.com/gpu", "use one or the other"}},
      {"DisagreesWithAnnotation",
       R"({"gpufair.io/gpu-fraction":"0.25"})",
       R"({"limits":{"gpufair.io/gpu-milli":"500"}})",
       {"gpufair.io/gpu-fraction", "(0.25)", "(500)", "disagree"}},
  };
  for (const Case& c : cases) {
    Result<policy::Pod> r = decodePodJson(pod(c.annotations, c.resources));
    ASSERT_FALSE(r.ok()) << c.name;
    for (const auto& part : c.parts) {
      EXPECT_NE(r.error().find(part), std::string::npos) << c.name << ": " << r.error();
    }
  }
}

TEST(DecodeGpuAnnotations, IndexAndModels) {
  Result<policy::Pod> r = decodePodJson(pod(
      R"({"gpufair.io/gpu-milli":"500","gpufair.io/gpu-index":"3",
          "gpufair.io/gpu-models":"V100M16| V100M32||"})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpuIndex, 3);
  EXPECT_EQ(r->gpuModels, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_TRUE(r->isFractional());
  for (const char* bad : {"x", "-1", "1.5", ""}) {
    r = decodePodJson(pod(std::string(R"({"gpufair.io/gpu-index":")") + bad + "\"}"));
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->gpuIndex, -1) << bad;  // unreadable: unknown, never an error
  }
}

TEST(DecodePodRequests, CpuAndMemoryLikeGpus) {
  Result<policy::Pod> r = decodePodJson(R"({"metadata":{"name":"p"},"spec":{
    "containers":[{"name":"a","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}},
                  {"name":"b","resources":{"limits":{"cpu":"2","memory":"512Mi"}}}],
    "initContainers":[{"name":"i","resources":{"requests":{"cpu":"4","memory":"100Mi"}}}],
    "overhead":{"cpu":"100m"}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->cpuMilli, 4100);  // max(2.5, 4) + 0.1
  EXPECT_EQ(r->memoryBytes, 1536LL * 1024 * 1024);
  EXPECT_TRUE(failsWith(decodePodJson(pod("{}", R"({"requests":{"cpu":"-1"}})")),
                        {"cpu", "must not be negative"}));
}

TEST(DecodeNode, ModelCpuMemory) {
  Result<policy::Node> r = decodeNodeJson(
      R"({"metadata":{"name":"n1","labels":{"nvidia.com/gpu.product":"V100M32"}},
          "status":{"allocatable":{"nvidia.com/gpu":"8","cpu":"96","memory":"768Gi"}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpuModel, "V100M32");
  EXPECT_EQ(r->cpuMilli, 96000);
  EXPECT_EQ(r->memoryBytes, 768LL * 1024 * 1024 * 1024);
  EXPECT_EQ(r->gpuCount(), 8);
  r = decodeNodeJson(testing::testdata("node.json"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gpuModel, "NVIDIA-H100-80GB-HBM3");
}

}  // namespace
}  // namespace gpufair::codec
