// Merging the quotas of several ConfigMaps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/config/quota.h"

namespace gpufair::config {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

QueueQuota queue(std::string name, std::vector<std::string> namespaces, MilliGpu deserved) {
  return QueueQuota{std::move(name), std::move(namespaces), GpuQuota{deserved, std::nullopt, 1.0},
                    0s};
}

QuotaConfig withQueues(std::vector<QueueQuota> queues) {
  QuotaConfig config;
  config.queues = std::move(queues);
  return config;
}

TEST(QuotaMerge, ConcatenatesQueuesSortedByName) {
  auto merged = mergeQuotaSources({
      {"cm-1", withQueues({queue("zeta", {"z"}, 1'000), queue("beta", {"b"}, 2'000)}), false},
      {"cm-2", withQueues({queue("alpha", {"a", "a-dev"}, 3'000)}), false},
  });
  ASSERT_TRUE(merged.ok()) << merged.error();
  ASSERT_EQ(merged->queues.size(), 3u);
  EXPECT_EQ(merged->queues[0], queue("alpha", {"a", "a-dev"}, 3'000));
  EXPECT_EQ(merged->queues[1], queue("beta", {"b"}, 2'000));
  EXPECT_EQ(merged->queues[2], queue("zeta", {"z"}, 1'000));
  EXPECT_EQ(merged->defaultQueue, QuotaConfig{}.defaultQueue);
}

TEST(QuotaMerge, TakesDefaultQueueFromTheOneSourceThatSetsIt) {
  QuotaConfig withDefault;
  withDefault.defaultQueue.gpu = GpuQuota{2'000, 4'000, 0.5};
  withDefault.defaultQueue.reclaimMinRuntime = 60s;
  auto merged = mergeQuotaSources({
      {"cm-1", withQueues({queue("a", {"a"}, 1'000)}), false},
      {"cm-2", withDefault, true},
  });
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->defaultQueue, (QueueQuota{"default", {}, GpuQuota{2'000, 4'000, 0.5}, 60s}));
}

TEST(QuotaMerge, NoSourcesGiveTheDefaultConfig) {
  auto merged = mergeQuotaSources({});
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(*merged, QuotaConfig{});
}

struct ConflictCase {
  const char* name;
  std::vector<QuotaSource> sources;
  std::vector<std::string> errors;  // each a line of the failure message
};

void PrintTo(const ConflictCase& c, std::ostream* os) {
  *os << c.name;
}

class QuotaMergeConflict : public ::testing::TestWithParam<ConflictCase> {};

TEST_P(QuotaMergeConflict, NamesBothSources) {
  auto merged = mergeQuotaSources(GetParam().sources);
  ASSERT_FALSE(merged.ok());
  std::string expected;
  for (const auto& e : GetParam().errors) expected += (expected.empty() ? "" : "\n") + e;
  EXPECT_EQ(merged.error(), expected);
}

INSTANTIATE_TEST_SUITE_P(
    Conflicts, QuotaMergeConflict,
    ::testing::Values(
        ConflictCase{"DuplicateQueue",
                     {{"cm-1", withQueues({queue("team-a", {"a"}, 1'000)}), false},
                      {"cm-2", withQueues({queue("team-a", {"b"}, 1'000)}), false}},
                     {"queue \"team-a\" is defined in both cm-1 and cm-2"}},
        ConflictCase{"NamespaceInTwoQueues",
                     {{"cm-1", withQueues({queue("team-a", {"shared"}, 1'000)}), false},
                      {"cm-2", withQueues({queue("team-b", {"b", "shared"}, 1'000)}), false}},
                     {"namespace \"shared\" is in queue \"team-a\" (cm-1) and in queue "
                      "\"team-b\" (cm-2)"}},
        ConflictCase{"TwoDefaultQueues",
                     {{"cm-1", QuotaConfig{}, true},
                      {"cm-2", withQueues({}), false},
                      {"cm-3", QuotaConfig{}, true}},
                     {"defaultQueue is set in both cm-1 and cm-3; set it in one place only"}},
        ConflictCase{"AllConflictsAtOnce",
                     {{"cm-1", withQueues({queue("a", {"x"}, 0), queue("b", {"y"}, 0)}), true},
                      {"cm-2", withQueues({queue("a", {}, 0), queue("c", {"y"}, 0)}), true}},
                     {"queue \"a\" is defined in both cm-1 and cm-2",
                      "namespace \"y\" is in queue \"b\" (cm-1) and in queue \"c\" (cm-2)",
                      "defaultQueue is set in both cm-1 and cm-2; set it in one place only"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(QuotaMerge, PairsInferWhetherDefaultQueueIsSet) {
  QuotaConfig custom;
  custom.defaultQueue.gpu.deserved = 1'000;
  auto conflict = mergeQuotaConfigs({{"cm-1", custom}, {"cm-2", custom}});
  ASSERT_FALSE(conflict.ok());
  EXPECT_THAT(conflict.error(), HasSubstr("defaultQueue is set in both cm-1 and cm-2"));

  auto merged = mergeQuotaConfigs(
      {{"cm-1", withQueues({queue("b", {"b"}, 0)})}, {"cm-2", custom}, {"cm-3", QuotaConfig{}}});
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->defaultQueue.gpu.deserved, 1'000);
  ASSERT_EQ(merged->queues.size(), 1u);
  EXPECT_EQ(merged->queues[0].name, "b");
}

TEST(QuotaMerge, ParsedSourcesMerge) {
  auto first = parseQuotaSource("queues:\n- name: b\n  namespaces: [b]\n", "cm-b");
  auto second = parseQuotaSource(
      "queues:\n- name: a\n  namespaces: [a]\ndefaultQueue: {gpu: {deserved: 1}}\n", "cm-a");
  ASSERT_TRUE(first.ok() && second.ok());
  auto merged = mergeQuotaSources({*first, *second});
  ASSERT_TRUE(merged.ok()) << merged.error();
  ASSERT_EQ(merged->queues.size(), 2u);
  EXPECT_EQ(merged->queues[0].name, "a");
  EXPECT_EQ(merged->queues[1].name, "b");
  EXPECT_EQ(merged->defaultQueue.gpu.deserved, 1'000);
}

}  // namespace
}  // namespace gpufair::config
