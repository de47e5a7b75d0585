#include "gpufair/sim/openb_csv.h"

#include <numeric>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/sim/scenario.h"

#include "sim/sim_testing.h"

namespace gpufair::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(NodeCsv, ReadsRowsByHeaderName) {
  auto nodes = parseNodeCsv(
      "model,gpu,sn,memory_mib,cpu_milli,rack\n"
      "V100M32,8,node-a,786432,96000,r1\n"
      "nan,0,node-b,262144,32000,r2\n",
      "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "node-a");
  EXPECT_EQ((*nodes)[0].gpus, 8);
  EXPECT_EQ((*nodes)[0].cpuMilli, 96000);
  EXPECT_EQ((*nodes)[0].memoryMib, 786432);
  EXPECT_EQ((*nodes)[0].model, "V100M32");
  EXPECT_EQ((*nodes)[0].line, 2);
  EXPECT_EQ((*nodes)[1].model, "") << "pandas' nan means no model";
}

TEST(NodeCsv, OptionalColumnsMayBeAbsent) {
  auto nodes = parseNodeCsv("sn,gpu\nn1,4\n", "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  EXPECT_EQ((*nodes)[0].gpus, 4);
  EXPECT_EQ((*nodes)[0].cpuMilli, 0);
  EXPECT_EQ((*nodes)[0].memoryMib, 0);
  EXPECT_EQ((*nodes)[0].model, "");
}

TEST(NodeCsv, ToleratesCrlfBomBlankLinesAndQuotes) {
  auto nodes = parseNodeCsv("\xEF\xBB\xBFsn,gpu,model\r\n\r\n\"n,1\",2,\"G\"\"2\"\r\n", "n.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  EXPECT_EQ((*nodes)[0].name, "n,1");
  EXPECT_EQ((*nodes)[0].model, "G\"2");
  EXPECT_EQ((*nodes)[0].line, 3);
}

struct BadCsv {
  const char* name;
  const char* text;
  const char* error;
};

class BadNodeCsv : public ::testing::TestWithParam<BadCsv> {};

TEST_P(BadNodeCsv, FailsNamingFileAndLine) {
  auto nodes = parseNodeCsv(GetParam().text, "nodes.csv");
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.error(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadNodeCsv,
    ::testing::Values(
        BadCsv{"NotANumber", "sn,gpu,cpu_milli\nn1,2,64000\nn2,2,lots\n",
               "nodes.csv:3: column cpu_milli: \"lots\" is not a whole number"},
        BadCsv{"Negative", "sn,gpu\nn1,-2\n", "nodes.csv:2: column gpu: \"-2\" is negative"},
        BadCsv{"FieldCount", "sn,gpu\nn1,2,extra\n", "nodes.csv:2: 3 fields, the header has 2"},
        BadCsv{"MissingGpuValue", "sn,gpu\nn1,\n", "nodes.csv:2: column gpu: no value"},
        BadCsv{"MissingColumn", "sn,cpu_milli\nn1,2\n", "nodes.csv:1: missing column gpu"},
        BadCsv{"Duplicate", "sn,gpu\nn1,2\nn1,4\n", "nodes.csv:3: node n1 appears twice"},
        BadCsv{"NoName", "sn,gpu\n,2\n", "nodes.csv:2: a node without a name"},
        BadCsv{"Unterminated", "sn,gpu\n\"n1,2\n", "nodes.csv:2: unterminated quote"},
        BadCsv{"Empty", "", "nodes.csv: no header line"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PodCsv, ReadsWholeSharedAndCpuOnlyPods) {
  auto pods = parsePodCsv(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n"
      "p1,4000,15258,1,220,nan,BE,Running,9679175,9973826,9679175\n"
      "p2,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063\n"
      "p3,8000,30517,0,0,,BE,Running,1,2,1\n",
      "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.error();
  ASSERT_EQ(pods->size(), 4u);
  EXPECT_EQ((*pods)[0].gpuRequest(), 8000);
  EXPECT_FALSE((*pods)[0].sharesGpu());
  EXPECT_EQ((*pods)[1].gpuRequest(), 220);
  EXPECT_TRUE((*pods)[1].sharesGpu());
  EXPECT_THAT((*pods)[1].gpuModels, IsEmpty());
  EXPECT_THAT((*pods)[2].gpuModels, ElementsAre("V100M16", "V100M32"));
  EXPECT_EQ((*pods)[3].gpuRequest(), 0);
  EXPECT_EQ((*pods)[3].cpuMilli, 8000);
  EXPECT_EQ((*pods)[3].memoryMib, 30517);
}

TEST(PodCsv, OptionalColumnsMayBeAbsent) {
  auto pods = parsePodCsv("num_gpu,name\n2,p0\n0,p1\n", "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.error();
  EXPECT_EQ((*pods)[0].gpuMilli, 1000) << "without gpu_milli a GPU pod takes whole GPUs";
  EXPECT_EQ((*pods)[0].gpuRequest(), 2000);
  EXPECT_EQ((*pods)[0].cpuMilli, 0);
  EXPECT_EQ((*pods)[1].gpuRequest(), 0);
}

// Some published openb lists have only these five columns (no gpu_spec, qos, phase or times).
TEST(PodCsv, FiveColumnListsLoadAsAScenario) {
  const char* text =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "p0,8000,16384,1,500\n"
      "p1,4000,8192,2,1000\n"
      "p2,16000,30517,0,0\n";
  auto pods = parsePodCsv(text, "five.csv");
  ASSERT_TRUE(pods.ok()) << pods.error();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].gpuRequest(), 500);
  EXPECT_TRUE((*pods)[0].sharesGpu());
  EXPECT_THAT((*pods)[1].gpuModels, IsEmpty()) << "no gpu_spec: any model";
  EXPECT_EQ((*pods)[2].cpuMilli, 16000);
  auto nodes =
      parseNodeCsv("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,V100M32\n", "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  auto scenario = scenarioFromRows(*nodes, *pods, "five");
  ASSERT_TRUE(scenario.ok()) << scenario.error();
  EXPECT_EQ(scenario->templates[1].gpus, 2000);
  EXPECT_THAT(scenario->templates[1].gpuModels, IsEmpty());
  // Without times, a replay over time is refused, saying why.
  auto lifetimes = parsePodLifetimes(text, "five.csv");
  ASSERT_FALSE(lifetimes.ok());
  EXPECT_THAT(lifetimes.error(), HasSubstr("five.csv:1: no creation_time and deletion_time"));
}

TEST(PodCsv, LifetimesAreReadInFileOrder) {
  auto lifetimes = parsePodLifetimes(
      "name,num_gpu,creation_time,deletion_time\np0,1,10,50\np1,0,20.0,20\n", "t.csv");
  ASSERT_TRUE(lifetimes.ok()) << lifetimes.error();
  ASSERT_EQ(lifetimes->size(), 2u);
  EXPECT_EQ((*lifetimes)[0].created, 10);
  EXPECT_EQ((*lifetimes)[0].deleted, 50);
  EXPECT_EQ((*lifetimes)[1].created, 20);
  auto backwards =
      parsePodLifetimes("name,num_gpu,creation_time,deletion_time\np0,1,10,5\n", "t.csv");
  ASSERT_FALSE(backwards.ok());
  EXPECT_THAT(backwards.error(), HasSubstr("t.csv:2: column deletion_time: before creation_time"));
  auto missing = parsePodLifetimes("name,num_gpu,creation_time,deletion_time\np0,1,10,\n", "t.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("t.csv:2: column deletion_time: no value"));
}

TEST(PodCsv, AcceptsPandasFloatIntegers) {
  auto pods = parsePodCsv("name,num_gpu,gpu_milli\np0,1.0,500.0\n", "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.error();
  EXPECT_EQ((*pods)[0].gpuRequest(), 500);
}

class BadPodCsv : public ::testing::TestWithParam<BadCsv> {};

TEST_P(BadPodCsv, FailsNamingFileAndLine) {
  auto pods = parsePodCsv(GetParam().text, "pods.csv");
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(pods.error(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadPodCsv,
    ::testing::Values(
        BadCsv{"ShareTooBig", "name,num_gpu,gpu_milli\np0,1,1500\n",
               "pods.csv:2: column gpu_milli: 1500 is not within 1..1000"},
        BadCsv{"ZeroShare", "name,num_gpu,gpu_milli\np0,1,0\n",
               "pods.csv:2: column gpu_milli: 0 is not within 1..1000"},
        BadCsv{"ShareOfSeveral", "name,num_gpu,gpu_milli\np0,1,500\np1,2,500\n",
               "pods.csv:3: column gpu_milli: 500 with num_gpu 2"},
        BadCsv{"Fraction", "name,num_gpu\np0,0.5\n",
               "pods.csv:2: column num_gpu: \"0.5\" is not a whole number"},
        BadCsv{"MissingNumGpu", "name,gpu_milli\np0,1000\n", "pods.csv:1: missing column num_gpu"},
        BadCsv{"NoName", "name,num_gpu\nnan,1\n", "pods.csv:2: a pod without a name"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CsvFiles, MissingFileIsAnError) {
  auto nodes = loadNodeCsv("/nonexistent/nodes.csv");
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.error(), HasSubstr("cannot read /nonexistent/nodes.csv"));
  auto dir = loadPodCsv("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr("is a directory"));
}

TEST(CsvFiles, ReadsTheOpenbTrace) {
  if (!testing::haveTrace()) GTEST_SKIP() << "openb trace not found under ../shared";
  auto nodes = loadNodeCsv(testing::traceFile("openb_node_list_gpu_node.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  EXPECT_EQ(nodes->size(), 1213u);
  const int gpus = std::accumulate(nodes->begin(), nodes->end(), 0,
                                   [](int s, const NodeRow& n) { return s + n.gpus; });
  EXPECT_EQ(gpus, 6212);
  auto pods = loadPodCsv(testing::traceFile("openb_pod_list_default.csv"));
  ASSERT_TRUE(pods.ok()) << pods.error();
  EXPECT_EQ(pods->size(), 8152u);
  MilliGpu requested = 0;
  for (const auto& p : *pods) requested += p.gpuRequest();
  EXPECT_EQ(requested, 6086800) << "98% of the 6,212 GPUs";
}

}  // namespace
}  // namespace gpufair::sim
