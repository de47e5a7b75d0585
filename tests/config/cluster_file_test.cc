// Cluster files: the three shapes, what is read, what is ignored and why, and located errors.
#include "gpufair/config/cluster_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufair::config {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::string_view kNs = "gpufair-system";

std::string testdata(const std::string& name) {
  return std::string(GPUFAIR_SOURCE_DIR) + "/tests/config/testdata/" + name;
}

ClusterObjects parseOk(std::string_view text, std::string_view ns = kNs) {
  auto parsed = parseClusterText(text, "c.yaml", ns);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return parsed.ok() ? *parsed : ClusterObjects{};
}

std::string parseError(std::string_view text) {
  auto parsed = parseClusterText(text, "c.yaml", kNs);
  EXPECT_FALSE(parsed.ok()) << "accepted:\n" << text;
  return parsed.ok() ? std::string() : parsed.error();
}

class ClusterFileShapes : public ::testing::TestWithParam<const char*> {};

TEST_P(ClusterFileShapes, ReadNodesPodsAndQuota) {
  const std::string path = testdata(GetParam());
  auto loaded = loadClusterFile(path, kNs);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const ClusterObjects& cluster = *loaded;

  ASSERT_EQ(cluster.nodes.size(), 2u);
  EXPECT_EQ(cluster.nodes[0].name, "n1");
  EXPECT_EQ(cluster.nodes[0].allocatable, 8'000);
  EXPECT_EQ(cluster.nodes[0].labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_TRUE(cluster.nodes[0].takesNewPods());
  EXPECT_EQ(cluster.nodes[1].name, "n2");
  EXPECT_EQ(cluster.nodes[1].allocatable, 4'000);
  EXPECT_TRUE(cluster.nodes[1].unschedulable);

  ASSERT_EQ(cluster.pods.size(), 2u);
  const policy::Pod& running = cluster.pods[0];
  EXPECT_EQ(running.uid, "u1");
  EXPECT_EQ(running.key(), "team-a/p1");
  EXPECT_EQ(running.nodeName, "n1");
  EXPECT_EQ(running.gpus, 2'000);
  EXPECT_EQ(running.phase, policy::PodPhase::kRunning);
  const policy::Pod& pending = cluster.pods[1];
  EXPECT_EQ(pending.uid, "team-b/p2") << "a pod without uid is keyed namespace/name";
  EXPECT_EQ(pending.schedulerName, "gpufair-scheduler");
  EXPECT_EQ(pending.gpus, 1'000);
  EXPECT_EQ(pending.labels.at("gpufair.io/gang-size"), "1");
  EXPECT_TRUE(pending.nodeName.empty());

  // Only the ConfigMap in gpufair-system counts; the one in team-a would have granted 1000 GPUs.
  ASSERT_EQ(cluster.quota.queues.size(), 2u);
  EXPECT_EQ(cluster.quota.queues[0].name, "team-a");
  EXPECT_EQ(cluster.quota.queues[0].gpu, (GpuQuota{8'000, 12'000, 1.0}));
  EXPECT_EQ(cluster.quota.queues[1].name, "team-b");
  EXPECT_EQ(cluster.quota.queues[1].gpu, (GpuQuota{4'000, std::nullopt, 1.0}));

  EXPECT_THAT(cluster.notes, Contains(StartsWith(path + ": read 2 Nodes, 2 Pods, 1 quota ConfigMap "
                                                        "(queues: team-a team-b)")));
  EXPECT_THAT(cluster.notes,
              Contains(AllOf(StartsWith(path + ":"),
                             HasSubstr("ignored ConfigMap team-a/sneaky: quota ConfigMaps are read "
                                       "only from gpufair's namespace \"gpufair-system\", so this "
                                       "one grants no quota"))));
  EXPECT_THAT(cluster.notes, Contains(AllOf(HasSubstr("ignored 1 Namespace object "),
                                            HasSubstr("(gpufair reads Node, Pod and quota "
                                                      "ConfigMap objects)"))));
  EXPECT_THAT(cluster.notes, Contains(path + ": ignored 1 ConfigMap without label "
                                             "gpufair.io/quota-config: \"true\""));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ClusterFileShapes,
                         ::testing::Values("cluster-list.yaml", "cluster-multidoc.yaml",
                                           "cluster.json"));

TEST(ClusterFile, ShippedExampleHasFourNodesOfTenGpusAndTwoQueues) {
  auto loaded = loadClusterFile(std::string(GPUFAIR_SOURCE_DIR) + "/examples/cluster-4x10.yaml",
                                "gpufair-system");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->nodes.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(loaded->nodes[i].name, "gpu-node-" + std::to_string(i + 1));
    EXPECT_EQ(loaded->nodes[i].allocatable, 10'000);
  }
  ASSERT_EQ(loaded->quota.queues.size(), 2u);
  for (const auto& queue : loaded->quota.queues) {
    EXPECT_EQ(queue.gpu, (GpuQuota{20'000, 30'000, 1.0})) << queue.name;
    EXPECT_EQ(queue.namespaces, std::vector<std::string>{queue.name});
  }
  EXPECT_EQ(loaded->quota.queues[0].name, "team-a");
  EXPECT_EQ(loaded->quota.queues[1].name, "team-b");
  MilliGpu onNode1 = 0;
  for (const auto& pod : loaded->pods) {
    if (pod.holdsGpus() && pod.nodeName == "gpu-node-1") onNode1 += pod.gpus;
  }
  EXPECT_EQ(onNode1, 2'000);
}

TEST(ClusterFile, QuotaComesFromTheGivenNamespace) {
  auto loaded = loadClusterFile(testdata("cluster-multidoc.yaml"), "team-a");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->quota.queues.size(), 1u);
  EXPECT_EQ(loaded->quota.queues[0].gpu.deserved, 1'000'000);
  EXPECT_THAT(loaded->notes, Contains(HasSubstr("ignored ConfigMap gpufair-system/quotas")));
}

TEST(ClusterFile, WithoutQuotaConfigMapEveryNamespaceIsInTheDefaultQueue) {
  ClusterObjects cluster = parseOk("kind: Node\nmetadata: {name: n}\n");
  EXPECT_EQ(cluster.quota, QuotaConfig{});
  EXPECT_THAT(cluster.notes,
              Contains(HasSubstr("no quota ConfigMap (label gpufair.io/quota-config: "
                                 "\"true\") in namespace \"gpufair-system\"")));
}

TEST(ClusterFile, TypedListItemsMayOmitTheirKind) {
  ClusterObjects cluster = parseOk(R"({"kind": "NodeList", "items": [
  {"metadata": {"name": "a"}, "status": {"allocatable": {"nvidia.com/gpu": "2"}}},
  {"metadata": {"name": "b"}}]})");
  ASSERT_EQ(cluster.nodes.size(), 2u);
  EXPECT_EQ(cluster.nodes[0].allocatable, 2'000);
  EXPECT_EQ(cluster.nodes[1].allocatable, 0);
}

TEST(ClusterFile, NotesPodsOnUnknownNodesAndLabelsNotTrue) {
  ClusterObjects cluster = parseOk(R"(kind: Pod
metadata: {name: p, namespace: ns}
spec: {nodeName: ghost}
---
kind: ConfigMap
metadata: {name: q, namespace: gpufair-system, labels: {gpufair.io/quota-config: "yes"}}
)");
  EXPECT_THAT(cluster.notes,
              Contains("c.yaml: Pod ns/p is bound to node \"ghost\", which is not in "
                       "the file"));
  EXPECT_THAT(cluster.notes, Contains("c.yaml:5: ignored ConfigMap gpufair-system/q: label "
                                      "gpufair.io/quota-config is \"yes\", not \"true\""));
}

struct ErrorCase {
  const char* name;
  const char* text;
  std::vector<const char*> starts;  // each error line begins so, in order
  const char* contains = "";        // and the message holds this
};

void PrintTo(const ErrorCase& c, std::ostream* os) {
  *os << c.name;
}

class ClusterFileErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ClusterFileErrors, NameFileLineAndCause) {
  std::string error = parseError(GetParam().text);
  std::vector<std::string> lines;
  std::stringstream in(error);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), GetParam().starts.size()) << error;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], StartsWith(GetParam().starts[i]));
  }
  EXPECT_THAT(error, HasSubstr(GetParam().contains));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ClusterFileErrors,
    ::testing::Values(
        ErrorCase{"SyntaxError",
                  "kind: Node\nmetadata: {name: [n}\n",
                  {"c.yaml:2:"},
                  "YAML syntax error"},
        ErrorCase{"Empty", "# nothing here\n", {"c.yaml: no Kubernetes objects found"}},
        ErrorCase{"NotAnObject", "- kind: Node\n", {"c.yaml:1:1: expected a Kubernetes object"}},
        ErrorCase{"NoKind",
                  "kind: Node\nmetadata: {name: a}\n---\nmetadata: {name: b}\n",
                  {"c.yaml:4:1: object has no kind (expected Node, Pod, ConfigMap or List)"}},
        ErrorCase{"BadQuantityInPod",
                  "kind: Node\nmetadata: {name: n}\n---\nkind: Pod\nmetadata: {name: p, namespace: "
                  "a}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: "
                  "2x}}\n",
                  {"c.yaml:4: "},
                  "2x"},
        ErrorCase{"FractionalGpuOnNode",
                  "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {nvidia.com/gpu: 1.5}}\n",
                  {"c.yaml:1: "},
                  "nvidia.com/gpu"},
        ErrorCase{"DuplicateNode",
                  "kind: Node\nmetadata: {name: n1}\n---\nkind: Node\nmetadata: {name: n1}\n",
                  {"c.yaml:4: duplicate Node \"n1\" (first at line 1)"}},
        ErrorCase{"DuplicatePodUid",
                  "kind: Pod\nmetadata: {name: p, namespace: a}\n---\n"
                  "kind: Pod\nmetadata: {name: p, namespace: a}\n",
                  {"c.yaml:4: duplicate Pod uid \"a/p\" (Pod a/p; first used at line 1)"}},
        ErrorCase{"InvalidQuotaInConfigMap",
                  "kind: ConfigMap\nmetadata:\n  name: q\n  namespace: gpufair-system\n"
                  "  labels: {gpufair.io/quota-config: \"true\"}\ndata:\n  queues.yaml: |\n"
                  "    queues:\n    - name: a\n      gpu: {deserved: 2, limit: 1}\n",
                  {"c.yaml:10:33: queue \"a\": gpu.limit 1 is below gpu.deserved 2"}},
        ErrorCase{"QuotaConfigMapWithoutKey",
                  "kind: ConfigMap\nmetadata:\n  name: q\n  namespace: gpufair-system\n"
                  "  labels: {gpufair.io/quota-config: \"true\"}\ndata: {}\n",
                  {"c.yaml:1:1: ConfigMap gpufair-system/q has no data key \"queues.yaml\""}},
        ErrorCase{"QuotaConflictAcrossConfigMaps",
                  "kind: ConfigMap\nmetadata: {name: q1, namespace: gpufair-system, labels: "
                  "{gpufair.io/quota-config: \"true\"}}\ndata: {queues.yaml: \"queues: [{name: "
                  "a}]\"}\n---\nkind: ConfigMap\nmetadata: {name: q2, namespace: gpufair-system, "
                  "labels: {gpufair.io/quota-config: \"true\"}}\ndata: {queues.yaml: \"queues: "
                  "[{name: a}]\"}\n",
                  {"c.yaml: queue \"a\" is defined in both ConfigMap gpufair-system/q1 (c.yaml:1) "
                   "and ConfigMap gpufair-system/q2 (c.yaml:5)"}},
        ErrorCase{"EveryErrorIsReported",
                  "kind: Node\nmetadata: {name: n}\n---\nmetadata: {name: x}\n---\n"
                  "kind: Node\nmetadata: {name: n}\n",
                  {"c.yaml:4:1: object has no kind", "c.yaml:6: duplicate Node \"n\""}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ClusterFile, MissingFile) {
  auto loaded = loadClusterFile(::testing::TempDir() + "no-such-cluster.yaml", kNs);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.error(), HasSubstr("no-such-cluster.yaml: cannot open"));
}

}  // namespace
}  // namespace gpufair::config
