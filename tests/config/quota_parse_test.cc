// Valid queues.yaml documents parse to the exact typed values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/config/quota.h"

namespace gpufair::config {
namespace {

using namespace std::chrono_literals;

QuotaConfig parseOk(std::string_view text) {
  auto parsed = parseQuotaYaml(text, "queues.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return parsed.ok() ? *parsed : QuotaConfig{};
}

TEST(QuotaParse, DesignExampleRoundTripsToTypedValues) {
  QuotaConfig config = parseOk(R"(
queues:
- name: team-a
  namespaces: [team-a, team-a-dev]
  gpu: {deserved: 20, limit: 30, overQuotaWeight: 1}
  reclaimMinRuntime: 10m
- name: team-b
  namespaces:
  - team-b
  gpu:
    deserved: "2.5"
    overQuotaWeight: 0.5
defaultQueue: {gpu: {deserved: 0, overQuotaWeight: 1}}
)");
  QuotaConfig expected;
  expected.queues = {
      QueueQuota{"team-a", {"team-a", "team-a-dev"}, GpuQuota{20'000, 30'000, 1.0}, 600s},
      QueueQuota{"team-b", {"team-b"}, GpuQuota{2'500, std::nullopt, 0.5}, 0s},
  };
  expected.defaultQueue = QueueQuota{"default", {}, GpuQuota{0, std::nullopt, 1.0}, 0s};
  EXPECT_EQ(config, expected);
}

// Found by tests/fuzz/fuzz_quota_yaml: yaml-cpp 0.7's LoadAll never returned on a flow entry at
// document level and allocated until the process ran out of memory. Now a syntax error.
TEST(QuotaParse, StreamsYamlCppCannotFinishAreSyntaxErrors) {
  for (const char* text : {"\"\",", "'x',", "[],", "{},", "\"x\",y", "--- \"x\","}) {
    auto quota = parseQuotaYaml(text, "q.yaml");
    ASSERT_FALSE(quota.ok()) << text;
    EXPECT_THAT(quota.error(), ::testing::HasSubstr("YAML syntax error")) << text;
  }
  // Many documents still load: the bound is the number of document markers.
  auto source = parseQuotaSource("---\nqueues: []\n...\n", "q.yaml");
  EXPECT_TRUE(source.ok()) << source.error();
}

TEST(QuotaParse, QueuesKeepDocumentOrder) {
  QuotaConfig config = parseOk("queues:\n- name: zeta\n- name: alpha\n- name: mid\n");
  ASSERT_EQ(config.queues.size(), 3u);
  EXPECT_EQ(config.queues[0].name, "zeta");
  EXPECT_EQ(config.queues[1].name, "alpha");
  EXPECT_EQ(config.queues[2].name, "mid");
}

TEST(QuotaParse, DefaultsWhenFieldsAreOmitted) {
  QuotaConfig config = parseOk("queues:\n- name: solo\n");
  ASSERT_EQ(config.queues.size(), 1u);
  EXPECT_EQ(config.queues[0], (QueueQuota{"solo", {}, GpuQuota{0, std::nullopt, 1.0}, 0s}));
  EXPECT_EQ(config.defaultQueue, QuotaConfig{}.defaultQueue);
}

TEST(QuotaParse, NullValuesMeanAbsent) {
  QuotaConfig config =
      parseOk("queues:\n- name: a\n  namespaces:\n  gpu: {deserved: 4, limit: null}\n");
  ASSERT_EQ(config.queues.size(), 1u);
  EXPECT_TRUE(config.queues[0].namespaces.empty());
  EXPECT_EQ(config.queues[0].gpu.deserved, 4'000);
  EXPECT_FALSE(config.queues[0].gpu.limit.has_value());
}

TEST(QuotaParse, OnlyDefaultQueue) {
  auto parsed = parseQuotaSource(
      "defaultQueue:\n  gpu: {deserved: 3, limit: 8}\n"
      "  reclaimMinRuntime: 90s\n",
      "q");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->setsDefaultQueue);
  EXPECT_TRUE(parsed->config.queues.empty());
  EXPECT_EQ(parsed->config.defaultQueue,
            (QueueQuota{"default", {}, GpuQuota{3'000, 8'000, 1.0}, 90s}));
}

TEST(QuotaParse, SourceWithoutDefaultQueueDoesNotSetIt) {
  auto parsed = parseQuotaSource("queues: []\n", "q");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_FALSE(parsed->setsDefaultQueue);
  EXPECT_EQ(parsed->source, "q");
}

struct AmountCase {
  const char* yaml;  // the value of gpu.deserved
  MilliGpu milli;
};

class QuotaGpuAmount : public ::testing::TestWithParam<AmountCase> {};

TEST_P(QuotaGpuAmount, NumbersAndQuantitiesBecomeMilliGpus) {
  QuotaConfig config =
      parseOk("queues:\n- name: q\n  gpu: {deserved: " + std::string(GetParam().yaml) + "}\n");
  ASSERT_EQ(config.queues.size(), 1u);
  EXPECT_EQ(config.queues[0].gpu.deserved, GetParam().milli);
}

INSTANTIATE_TEST_SUITE_P(Forms, QuotaGpuAmount,
                         ::testing::Values(AmountCase{"0", 0}, AmountCase{"20", 20'000},
                                           AmountCase{"\"20\"", 20'000}, AmountCase{"2.5", 2'500},
                                           AmountCase{"'2.5'", 2'500}, AmountCase{"500m", 500},
                                           AmountCase{"0.25", 250}, AmountCase{"1e2", 100'000},
                                           AmountCase{"1k", 1'000'000}));

struct WeightCase {
  const char* yaml;
  double weight;
};

class QuotaWeight : public ::testing::TestWithParam<WeightCase> {};

TEST_P(QuotaWeight, NonNegativeNumbers) {
  QuotaConfig config = parseOk(
      "queues:\n- name: q\n  gpu: {overQuotaWeight: " + std::string(GetParam().yaml) + "}\n");
  ASSERT_EQ(config.queues.size(), 1u);
  EXPECT_DOUBLE_EQ(config.queues[0].gpu.overQuotaWeight, GetParam().weight);
}

INSTANTIATE_TEST_SUITE_P(Forms, QuotaWeight,
                         ::testing::Values(WeightCase{"0", 0.0}, WeightCase{"1", 1.0},
                                           WeightCase{"2.5", 2.5}, WeightCase{"\"3\"", 3.0},
                                           WeightCase{"+4", 4.0}, WeightCase{"1e1", 10.0}));

TEST(QuotaParse, DnsLabels) {
  EXPECT_TRUE(isDns1123Label("team-a"));
  EXPECT_TRUE(isDns1123Label("a"));
  EXPECT_TRUE(isDns1123Label("0abc9"));
  EXPECT_TRUE(isDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(isDns1123Label(std::string(64, 'a')));
  EXPECT_FALSE(isDns1123Label(""));
  EXPECT_FALSE(isDns1123Label("Team-A"));
  EXPECT_FALSE(isDns1123Label("-team"));
  EXPECT_FALSE(isDns1123Label("team-"));
  EXPECT_FALSE(isDns1123Label("team_a"));
  EXPECT_FALSE(isDns1123Label("team.a"));
}

}  // namespace
}  // namespace gpufair::config
