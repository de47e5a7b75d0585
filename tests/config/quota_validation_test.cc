// Invalid queues.yaml documents: every problem is reported as "source:LINE:COL: what is wrong".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/config/quota.h"

namespace gpufair::config {
namespace {

using ::testing::StartsWith;

struct InvalidCase {
  const char* name;
  const char* yaml;
  // The whole message, or its beginning when the rest comes from another module (quantities).
  const char* error;
};

void PrintTo(const InvalidCase& c, std::ostream* os) {
  *os << c.name;
}

class QuotaValidation : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(QuotaValidation, ReportsLineColumnAndCause) {
  auto parsed = parseQuotaYaml(GetParam().yaml, "q.yaml");
  ASSERT_FALSE(parsed.ok()) << "accepted:\n" << GetParam().yaml;
  EXPECT_THAT(parsed.error(), StartsWith(GetParam().error));
  EXPECT_EQ(parsed.error().find('\n'), std::string::npos)
      << "expected one error: " << parsed.error();
}

const InvalidCase kInvalid[] = {
    {"SyntaxError", "queues:\n- name: a\n  gpu: {deserved: 1\n",
     "q.yaml:4:1: YAML syntax error: end of map flow not found"},
    {"EmptyDocument", "", "q.yaml: empty document: expected a map with keys queues, defaultQueue"},
    {"SecondDocument", "queues: []\n---\nqueues: []\n",
     "q.yaml:3:1: queues.yaml holds one document; found a second one (merge them into one)"},
    {"TopLevelList", "- a\n- b\n",
     "q.yaml:1:1: expected a map with keys queues, defaultQueue, found a list"},
    {"TopLevelScalar", "hello\n",
     "q.yaml:1:1: expected a map with keys queues, defaultQueue, found a scalar"},
    {"UnknownTopKey", "queues: []\nqueue: []\n",
     "q.yaml:2:1: unknown key \"queue\" in the top level (did you mean \"queues\"?); allowed keys: "
     "queues, defaultQueue"},
    {"UnknownQueueKey", "queues:\n- name: a\n  namespace: [a]\n",
     "q.yaml:3:3: unknown key \"namespace\" in queue \"a\" (did you mean \"namespaces\"?); allowed "
     "keys: name, namespaces, gpu, reclaimMinRuntime, parent, priority"},
    {"UnknownGpuKey", "queues:\n- name: a\n  gpu: {deserved: 1, burst: 2}\n",
     "q.yaml:3:22: unknown key \"burst\" in queue \"a\" gpu; allowed keys: deserved, limit, "
     "overQuotaWeight"},
    {"UnknownDefaultQueueKey", "defaultQueue: {name: x}\n",
     "q.yaml:1:16: unknown key \"name\" in defaultQueue; allowed keys: gpu, reclaimMinRuntime"},
    {"DuplicateKey", "queues:\n- name: a\n  gpu: {deserved: 1}\n  gpu: {deserved: 2}\n",
     "q.yaml:4:3: duplicate key \"gpu\" in queue \"a\" (first at line 3)"},
    {"QueuesNotAList", "queues: {name: a}\n",
     "q.yaml:1:9: queues must be a list of queues, found a map"},
    {"QueueNotAMap", "queues:\n- team-a\n",
     "q.yaml:2:3: queues[0] must be a map with keys name, namespaces, gpu, reclaimMinRuntime, "
     "parent, priority, found a scalar"},
    {"MissingName", "queues:\n- namespaces: [a]\n", "q.yaml:2:3: queues[0] has no name"},
    {"EmptyName", "queues:\n- name: \"\"\n", "q.yaml:2:9: queues[0]: name is empty"},
    {"NameNotAString", "queues:\n- name: [a]\n",
     "q.yaml:2:9: queues[0]: name must be a string, found a list"},
    {"InvalidName", "queues:\n- name: Team_A\n",
     "q.yaml:2:9: queue name \"Team_A\" is not a valid DNS-1123 label (lower-case letters, digits "
     "and '-', starting and ending with a letter or digit, at most 63 characters)"},
    {"ReservedName", "queues:\n- name: default\n",
     "q.yaml:2:9: queue name \"default\" is reserved for the default queue (configure it under "
     "defaultQueue)"},
    {"DuplicateQueue", "queues:\n- name: a\n- name: a\n",
     "q.yaml:3:9: duplicate queue \"a\" (first defined at line 2)"},
    {"NamespaceInTwoQueues",
     "queues:\n- name: a\n  namespaces: [x]\n- name: b\n  namespaces: [y, x]\n",
     "q.yaml:5:19: namespace \"x\" is listed in queue \"b\" and already in queue \"a\" (line 3); a "
     "namespace belongs to one queue"},
    {"NamespaceTwiceInOneQueue", "queues:\n- name: a\n  namespaces: [x, x]\n",
     "q.yaml:3:19: namespace \"x\" is listed in queue \"a\" and already in queue \"a\" (line 3)"},
    {"InvalidNamespace", "queues:\n- name: a\n  namespaces: [Prod]\n",
     "q.yaml:3:16: queue \"a\": \"Prod\" is not a valid namespace name (a DNS-1123 label)"},
    {"NamespacesNotAList", "queues:\n- name: a\n  namespaces: team-a\n",
     "q.yaml:3:15: queue \"a\": namespaces must be a list of namespace names, found a scalar"},
    {"GpuNotAMap", "queues:\n- name: a\n  gpu: 4\n",
     "q.yaml:3:8: queue \"a\": gpu must be a map with keys deserved, limit, overQuotaWeight, found "
     "a scalar"},
    {"NegativeDeserved", "queues:\n- name: a\n  gpu: {deserved: -1}\n",
     "q.yaml:3:19: queue \"a\": gpu.deserved must not be negative, found -1"},
    {"NonNumericDeserved", "queues:\n- name: a\n  gpu: {deserved: lots}\n",
     "q.yaml:3:19: queue \"a\": gpu.deserved \"lots\" is not a number of GPUs ("},
    {"DeservedNotScalar", "queues:\n- name: a\n  gpu: {deserved: [1]}\n",
     "q.yaml:3:19: queue \"a\": gpu.deserved must be a number of GPUs, found a list"},
    {"NonNumericLimit", "queues:\n- name: a\n  gpu: {limit: 3x}\n",
     "q.yaml:3:16: queue \"a\": gpu.limit \"3x\" is not a number of GPUs ("},
    {"NegativeLimit", "queues:\n- name: a\n  gpu: {limit: -500m}\n",
     "q.yaml:3:16: queue \"a\": gpu.limit must not be negative, found -500m"},
    {"LimitBelowDeserved", "queues:\n- name: a\n  gpu: {deserved: 20, limit: 10}\n",
     "q.yaml:3:30: queue \"a\": gpu.limit 10 is below gpu.deserved 20"},
    {"NegativeWeight", "queues:\n- name: a\n  gpu: {overQuotaWeight: -2}\n",
     "q.yaml:3:26: queue \"a\": gpu.overQuotaWeight must not be negative, found -2"},
    {"NonNumericWeight", "queues:\n- name: a\n  gpu: {overQuotaWeight: heavy}\n",
     "q.yaml:3:26: queue \"a\": gpu.overQuotaWeight \"heavy\" is not a number"},
    {"InfiniteWeight", "queues:\n- name: a\n  gpu: {overQuotaWeight: .inf}\n",
     "q.yaml:3:26: queue \"a\": gpu.overQuotaWeight \".inf\" is not a number"},
    {"DurationWithoutUnit", "queues:\n- name: a\n  reclaimMinRuntime: 10\n",
     "q.yaml:3:22: queue \"a\": reclaimMinRuntime: missing unit in duration \"10\" (expected e.g. "
     "90s, 10m, 1h30m)"},
    {"NegativeDuration", "queues:\n- name: a\n  reclaimMinRuntime: -5m\n",
     "q.yaml:3:22: queue \"a\": reclaimMinRuntime: duration \"-5m\" must not be negative"},
    {"DefaultQueueNotAMap", "defaultQueue: 5\n",
     "q.yaml:1:15: defaultQueue must be a map with keys gpu, reclaimMinRuntime, found a scalar"},
    {"DefaultQueueNegative", "defaultQueue:\n  gpu:\n    deserved: -3\n",
     "q.yaml:3:15: defaultQueue: gpu.deserved must not be negative, found -3"},
};

INSTANTIATE_TEST_SUITE_P(Errors, QuotaValidation, ::testing::ValuesIn(kInvalid),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(QuotaValidation, ReportsEveryErrorInDocumentOrder) {
  constexpr const char* kYaml = R"(queues:
- name: team-a
  namespaces: [shared]
  gpu: {deserved: 20, limit: 10}
- name: Team-B
  namespaces: [shared]
  gpu: {deserved: x}
  reclaim: 5m
defaultQueue: {gpu: {overQuotaWeight: -1}}
)";
  auto parsed = parseQuotaYaml(kYaml, "multi.yaml");
  ASSERT_FALSE(parsed.ok());
  std::vector<std::string> lines;
  std::stringstream in(parsed.error());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 6u) << parsed.error();
  EXPECT_THAT(lines[0], StartsWith("multi.yaml:4:30: queue \"team-a\": gpu.limit 10 is below"));
  EXPECT_THAT(lines[1], StartsWith("multi.yaml:5:9: queue name \"Team-B\" is not a valid"));
  EXPECT_THAT(lines[2], StartsWith("multi.yaml:6:16: namespace \"shared\" is listed in queue "
                                   "\"Team-B\" and already in queue \"team-a\" (line 3)"));
  EXPECT_THAT(lines[3], StartsWith("multi.yaml:7:19: queue \"Team-B\": gpu.deserved \"x\""));
  EXPECT_THAT(lines[4], StartsWith("multi.yaml:8:3: unknown key \"reclaim\" in queue \"Team-B\""));
  EXPECT_THAT(lines[5], StartsWith("multi.yaml:9:39: defaultQueue: gpu.overQuotaWeight must not "
                                   "be negative"));
}

TEST(QuotaValidation, ParseQuotaSourceFailsTheSameWay) {
  auto parsed = parseQuotaSource("queues:\n- name: default\n", "cm");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), StartsWith("cm:2:9: queue name \"default\" is reserved"));
}

}  // namespace
}  // namespace gpufair::config
