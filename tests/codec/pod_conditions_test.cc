// What gpufair reads of a pod's status.conditions: whether kube-scheduler failed to place it.
#include "gpufair/codec/pod_conditions.h"

#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace gpufair::codec {
namespace {

TEST(PodConditions, SchedulingFailedOnlyWhenPodScheduledIsFalse) {
  const std::pair<const char*, bool> cases[] = {
      {R"([{"type":"PodScheduled","status":"False","reason":"Unschedulable"}])", true},
      {R"([{"type":"Initialized","status":"True"},{"type":"PodScheduled","status":"False"}])",
       true},
      {R"([{"type":"PodScheduled","status":"True"}])", false},
      {R"([{"type":"Ready","status":"False"}])", false},
      {R"([])", false},
      {R"(null)", false},
      {R"("PodScheduled")", false},                              // malformed: ignored
      {R"([7,{"type":"PodScheduled","status":false}])", false},  // malformed entries: skipped
  };
  for (const auto& [conditions, want] : cases) {
    bool failed = !want;
    Result<policy::Pod> r = decodePodJson(
        std::string(R"({"metadata":{"name":"p"},"status":{"phase":"Pending","conditions":)") +
            conditions + "}}",
        failed);
    ASSERT_TRUE(r.ok()) << conditions << ": " << r.error();
    EXPECT_EQ(failed, want) << conditions;
  }
  bool failed = true;
  ASSERT_TRUE(decodePodJson(R"({"metadata":{"name":"p"}})", failed).ok());
  EXPECT_FALSE(failed) << "no status";
}

TEST(PodConditions, ReadFromAParsedPod) {
  simdjson::dom::parser parser;
  simdjson::dom::element pod;
  const std::string text =
      R"({"metadata":{"name":"p"},"status":{"conditions":[{"type":"PodScheduled","status":"False"}]}})";
  ASSERT_EQ(parser.parse(text).get(pod), simdjson::SUCCESS);
  EXPECT_TRUE(schedulingFailed(pod));
  ASSERT_EQ(parser.parse(std::string("[1,2]")).get(pod), simdjson::SUCCESS);
  EXPECT_FALSE(schedulingFailed(pod)) << "not an object";
}

}  // namespace
}  // namespace gpufair::codec
