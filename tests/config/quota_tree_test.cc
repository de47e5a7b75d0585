// Queue trees in queues.yaml: `parent:` and `priority:` parse, and invalid trees are refused with
// file:line, within one document and across merged ConfigMaps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/config/quota.h"

namespace gpufair::config {
namespace {

using ::testing::HasSubstr;

TEST(QuotaTree, ParsesParentAndPriority) {
  auto parsed = parseQuotaYaml(
      "queues:\n"
      "- name: research\n"
      "  gpu: {deserved: 30, limit: 30}\n"
      "  priority: 1\n"
      "- name: team-a\n"
      "  parent: research\n"
      "  namespaces: [team-a]\n"
      "  gpu: {deserved: 20}\n"
      "- name: team-b\n"
      "  parent: research\n"
      "  priority: -2\n"
      "  namespaces: [team-b]\n"
      "  gpu: {deserved: 10}\n",
      "queues.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_EQ(parsed->queues.size(), 3u);
  EXPECT_EQ(parsed->queues[0].parent, "");
  EXPECT_EQ(parsed->queues[0].priority, 1);
  EXPECT_EQ(parsed->queues[1].parent, "research");
  EXPECT_EQ(parsed->queues[1].priority, 0);
  EXPECT_EQ(parsed->queues[2].priority, -2);
}

struct BadTree {
  const char* name;
  const char* yaml;
  const char* error;  // the whole message (one line each)
};

void PrintTo(const BadTree& c, std::ostream* os) {
  *os << c.name;
}

class QuotaTreeInvalid : public ::testing::TestWithParam<BadTree> {};

TEST_P(QuotaTreeInvalid, RefusedWithFileLine) {
  auto parsed = parseQuotaYaml(GetParam().yaml, "q.yaml");
  ASSERT_FALSE(parsed.ok()) << "accepted:\n" << GetParam().yaml;
  EXPECT_EQ(parsed.error(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, QuotaTreeInvalid,
    ::testing::Values(
        BadTree{"UnknownParent", "queues:\n- name: research\n- name: team-a\n  parent: reserch\n",
                "q.yaml:4:11: queue \"team-a\": parent \"reserch\" is not a queue (did you mean "
                "\"research\"?); a parent must be one of the configured queues"},
        BadTree{
            "Cycle",
            "queues:\n- name: a\n  parent: b\n- name: b\n  parent: c\n- name: c\n  parent: a\n",
            "q.yaml:3:11: queue \"a\": parents form a cycle: a -> b -> c -> a; a queue tree has "
            "no cycles"},
        BadTree{"OwnParent", "queues:\n- name: a\n  parent: a\n",
                "q.yaml:3:11: queue \"a\": is its own parent (a cycle)"},
        BadTree{"DefaultIsNoParent", "queues:\n- name: a\n  parent: default\n",
                "q.yaml:3:11: queue \"a\": parent \"default\": the default queue cannot have "
                "children"},
        BadTree{"ChildrenDeserveMoreThanTheParent",
                "queues:\n"
                "- name: research\n"
                "  gpu: {deserved: 30}\n"
                "- name: team-a\n"
                "  parent: research\n"
                "  gpu: {deserved: 20}\n"
                "- name: team-b\n"
                "  parent: research\n"
                "  gpu: {deserved: 15}\n",
                "q.yaml:2:9: queue \"research\": its children deserve 35 GPUs (team-a 20, team-b "
                "15), more than its own gpu.deserved 30"},
        BadTree{"ParentWithNamespaces",
                "queues:\n- name: research\n  namespaces: [research]\n- name: team-a\n  parent: "
                "research\n",
                "q.yaml:2:9: queue \"research\": is the parent of team-a and lists namespaces; "
                "pods run in leaf queues: move its namespaces to a child queue"},
        BadTree{"PriorityNotAWholeNumber", "queues:\n- name: a\n  priority: high\n",
                "q.yaml:3:13: queue \"a\": priority must be a whole number (higher borrows "
                "first), found \"high\""}));

TEST(QuotaTree, ParentInAnotherConfigMapMerges) {
  auto parent = parseQuotaSource("queues:\n- name: research\n  gpu: {deserved: 8}\n", "cm-1");
  auto child = parseQuotaSource(
      "queues:\n- name: team-a\n  parent: research\n  gpu: {deserved: 8}\n", "cm-2");
  ASSERT_TRUE(parent.ok() && child.ok());
  auto merged = mergeQuotaSources({*parent, *child});
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->queues[1].parent, "research");
}

TEST(QuotaTree, MergeRefusesAnUnknownParentWithItsPlace) {
  auto child = parseQuotaSource(
      "queues:\n- name: team-a\n  parent: research\n  gpu: {deserved: 8}\n", "cm-2");
  ASSERT_TRUE(child.ok()) << child.error();  // the parent may come from another ConfigMap
  auto merged = mergeQuotaSources({*child});
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(merged.error(), HasSubstr("cm-2:3:11: queue \"team-a\": parent \"research\" is not "
                                        "a queue"));
}

TEST(QuotaTree, FlatConfigsAreUntouched) {
  QuotaConfig flat;
  flat.queues.push_back(QueueQuota{"a", {"a"}, GpuQuota{1'000, std::nullopt, 1.0}, {}});
  EXPECT_TRUE(validateQueueTree(flat).isOk());
}

}  // namespace
}  // namespace gpufair::config
