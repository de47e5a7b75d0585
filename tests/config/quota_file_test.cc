// loadQuotaFile: raw queues.yaml files and ConfigMap manifests, with the file's line numbers.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/config/quota.h"

namespace gpufair::config {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string testdata(const std::string& name) {
  return std::string(GPUFAIR_SOURCE_DIR) + "/tests/config/testdata/" + name;
}

std::string writeTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(QuotaFile, ReadsAConfigMapManifest) {
  auto config = loadQuotaFile(testdata("quota-configmap.yaml"));
  ASSERT_TRUE(config.ok()) << config.error();
  QuotaConfig expected;
  expected.queues = {
      QueueQuota{"team-a", {"team-a", "team-a-dev"}, GpuQuota{20'000, 30'000, 2.0}, 600s},
      QueueQuota{"team-b", {"team-b"}, GpuQuota{20'000, 30'000, 1.0}, 0s},
  };
  EXPECT_EQ(*config, expected);
}

TEST(QuotaFile, ErrorsInsideALiteralBlockCarryTheFileLines) {
  const std::string path = testdata("quota-configmap-invalid.yaml");
  auto config = loadQuotaFile(path);
  ASSERT_FALSE(config.ok());
  auto errors = lines(config.error());
  ASSERT_EQ(errors.size(), 3u) << config.error();
  // The block starts on line 10 with an indent of 4: "gpu: {deserved: 20, limit: 10}" is line 13.
  EXPECT_EQ(errors[0], path + ":13:34: queue \"team-a\": gpu.limit 10 is below gpu.deserved 20");
  EXPECT_THAT(errors[1], StartsWith(path + ":15:13: queue name \"team_b\" is not a valid"));
  EXPECT_THAT(errors[2],
              StartsWith(path + ":16:23: queue \"team_b\": gpu.deserved \"many\" is not a number"));
}

TEST(QuotaFile, ReadsARawQueuesYaml) {
  const std::string path = writeTemp("raw-queues.yaml", R"(# raw
queues:
- name: ml
  namespaces: [ml]
  gpu: {deserved: "1.5", limit: 3}
)");
  auto config = loadQuotaFile(path);
  ASSERT_TRUE(config.ok()) << config.error();
  ASSERT_EQ(config->queues.size(), 1u);
  EXPECT_EQ(config->queues[0], (QueueQuota{"ml", {"ml"}, GpuQuota{1'500, 3'000, 1.0}, 0s}));
}

TEST(QuotaFile, RawErrorsCarryTheFileName) {
  const std::string path = writeTemp("raw-invalid.yaml", "queues:\n- name: ml\n  gpus: 4\n");
  auto config = loadQuotaFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(),
            path +
                ":3:3: unknown key \"gpus\" in queue \"ml\" (did you mean \"gpu\"?); "
                "allowed keys: name, namespaces, gpu, reclaimMinRuntime, parent, priority");
}

TEST(QuotaFile, MergesSeveralConfigMapsAndNamesBothOnConflict) {
  const std::string path = testdata("quota-two-configmaps.yaml");
  auto config = loadQuotaFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(),
            "queue \"team-a\" is defined in both ConfigMap "
            "gpufair-system/quotas-research (" +
                path + ":2) and ConfigMap gpufair-system/quotas-prod (" + path + ":13)");
}

TEST(QuotaFile, JsonListWithQuotedDocumentsCountsLinesInsideTheValue) {
  const std::string path = testdata("quota-list.json");
  auto config = loadQuotaFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), path +
                                ":15: ConfigMap gpufair-system/q2 queues.yaml:3:19: queue "
                                "\"team-b\": gpu.deserved must not be negative, found -4");
}

TEST(QuotaFile, ConfigMapWithoutQueuesKey) {
  const std::string path = writeTemp("no-key.yaml",
                                     "kind: ConfigMap\nmetadata: {name: q, namespace: ns}\n"
                                     "data:\n  other: x\n");
  auto config = loadQuotaFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), path +
                                ":1:1: ConfigMap ns/q has no data key \"queues.yaml\" holding "
                                "the queue quotas");
}

TEST(QuotaFile, OtherKindsAreRejected) {
  const std::string path =
      writeTemp("node.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n");
  auto config = loadQuotaFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), path +
                                ":2:7: kind \"Node\": expected queues.yaml or a ConfigMap with a "
                                "\"queues.yaml\" key");
}

TEST(QuotaFile, SyntaxErrorsAndMissingFiles) {
  const std::string bad = writeTemp("syntax.yaml", "queues:\n  - name: a\n - name: b\n");
  auto config = loadQuotaFile(bad);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error(), StartsWith(bad + ":3:"));
  EXPECT_THAT(config.error(), HasSubstr("YAML syntax error"));

  auto missing = loadQuotaFile(::testing::TempDir() + "does-not-exist.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("does-not-exist.yaml: cannot open: No such file"));

  auto empty = loadQuotaFile(writeTemp("empty.yaml", "# nothing\n"));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error(), HasSubstr("no quotas found"));
}

}  // namespace
}  // namespace gpufair::config
