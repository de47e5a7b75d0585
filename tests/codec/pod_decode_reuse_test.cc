// decodePod keeps its container lists per thread and builds its error texts only for an error:
// a pod decoded after other pods (more containers, fewer, init containers, none) is decoded
// exactly as on a thread that saw no pod before, and the errors read word for word as before.
#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"

namespace gpufair::codec {
namespace {

// What a decode gives, as text: equal texts, equal pods (every field decodePod sets).
std::string describe(const Result<policy::Pod>& r) {
  if (!r) return "error: " + r.error();
  const policy::Pod& p = *r;
  std::string out =
      p.uid + "|" + p.ns + "|" + p.name + "|" + p.nodeName + "|" + p.schedulerName + "|gpus " +
      std::to_string(p.gpus) + "|share " + std::to_string(p.gpuShare) + "|index " +
      std::to_string(p.gpuIndex) + "|cpu " + std::to_string(p.cpuMilli) + "|mem " +
      std::to_string(p.memoryBytes) + "|phase " + std::to_string(static_cast<int>(p.phase)) +
      "|term " + std::to_string(p.terminating) + "|over " + std::to_string(p.overQuota) +
      "|created " + (p.created ? std::to_string(p.created->time_since_epoch().count()) : "-") +
      "|started " + (p.started ? std::to_string(p.started->time_since_epoch().count()) : "-") +
      "|gang " + p.gang + "/" + std::to_string(p.gangSize) + "/" + p.gangError + "|controller " +
      p.controller + "|models";
  for (const auto& m : p.gpuModels) out += " " + m;
  for (const auto& [k, v] : p.labels) out += "|l " + k + "=" + v;
  for (const auto& [k, v] : p.annotations) out += "|a " + k + "=" + v;
  return out;
}

std::string container(const std::string& name, const std::string& requests,
                      const std::string& limits, const std::string& extra = "") {
  std::string c = "{";
  if (!name.empty()) c += R"("name":")" + name + R"(",)";
  c += R"("resources":{)";
  std::string inner;
  if (!requests.empty()) inner += R"("requests":{)" + requests + "}";
  if (!limits.empty())
    inner += std::string(inner.empty() ? "" : ",") + R"("limits":{)" + limits + "}";
  c += inner + "}" + extra + "}";
  return c;
}

// Pods of every shape the decode's lists see: 0 to 4 containers, init containers (restartable
// or not), overhead, fractional GPUs, missing and null fields, and pods that fail to decode.
std::vector<std::string> variedPods() {
  std::vector<std::string> pods;
  pods.push_back(R"({"metadata":{"name":"bare"}})");
  pods.push_back(
      R"({"metadata":{"name":"nulls","namespace":null,"uid":null},"spec":{"containers":null},"status":null})");
  pods.push_back(
      R"({"metadata":{"name":"big","namespace":"team-a","uid":"0b7e4f9c-1a2b-4c3d-8e9f-001122334455",
          "creationTimestamp":"2026-11-22T09:58:12Z","labels":{"gpufair.io/over-quota":"true","app":"x"},
          "ownerReferences":[{"controller":true,"uid":"5f1c2b7e-8d3a-4c1e-9f0b-2a6d7e8f9a01"}]},
        "spec":{"nodeName":"gpu-node-17","schedulerName":"gpufair","containers":[)" +
      container("a", R"("nvidia.com/gpu":"2","cpu":"1500m")", R"("memory":"4Gi")") + "," +
      container("b", "", R"("nvidia.com/gpu":"1","cpu":"2","memory":"1Gi")") + "," +
      container("", R"("cpu":"100m")", "") + "," + container("d", R"("memory":"512Mi")", "") +
      R"(],"initContainers":[)" + container("i1", R"("nvidia.com/gpu":"4","cpu":"8")", "") + "," +
      container("side", R"("nvidia.com/gpu":"1")", "", R"(,"restartPolicy":"Always")") +
      R"(],"overhead":{"cpu":"250m","memory":"100Mi"}},
        "status":{"phase":"Running","startTime":"2026-11-22T10:00:00Z"}})");
  pods.push_back(R"({"metadata":{"name":"one","namespace":"team-b"},"spec":{"containers":[)" +
                 container("main", R"("nvidia.com/gpu":"1")", "") + "]}}");
  pods.push_back(
      R"({"metadata":{"name":"frac","namespace":"team-b","annotations":{"gpufair.io/gpu-fraction":"0.5","gpufair.io/gpu-index":"3","gpufair.io/gpu-models":"A100| V100 "}},
        "spec":{"containers":[)" +
      container("main", R"("cpu":"1")", "") + "]}}");
  pods.push_back(R"({"metadata":{"name":"milli","namespace":"team-c"},"spec":{"containers":[)" +
                 container("m", R"("gpufair.io/gpu-milli":"250")", "") + "," +
                 container("n", "", "") + "]}}");
  pods.push_back(
      R"({"metadata":{"name":"initonly","labels":{"gpufair.io/gang":"g"},"annotations":{"gpufair.io/gang-size":"3"}},"spec":{"initContainers":[)" +
      container("x", R"("nvidia.com/gpu":"2")", "") + "]}}");
  pods.push_back(
      R"({"metadata":{"name":"gone","deletionTimestamp":"2026-11-22T10:00:00Z"},"status":{"phase":"Succeeded"}})");
  // Errors, at each place a container's text is built.
  pods.push_back(R"({"metadata":{"name":"e1","namespace":"t"},"spec":{"containers":[)" +
                 container("ok", R"("cpu":"1")", "") + R"(,"c"]}})");
  pods.push_back(R"({"metadata":{"name":"e2","namespace":"t"},"spec":{"containers":[)" +
                 container("ok", R"("cpu":"1")", "") + R"(,{"name":7}]}})");
  pods.push_back(R"({"metadata":{"name":"e3","namespace":"t"},"spec":{"containers":[)" +
                 container("main", "", R"("cpu":"8 cores")") + "]}}");
  pods.push_back(R"({"metadata":{"name":"e4","namespace":"t"},"spec":{"initContainers":[)" +
                 container("ok", "", "") + "," + container("", R"("memory":"x")", "") + "]}}");
  pods.push_back(
      R"({"metadata":{"name":"e5","namespace":"t"},"spec":{"containers":[{"name":"r","resources":[]}]}})");
  pods.push_back(
      R"({"metadata":{"name":"e6","namespace":"t"},"spec":{"containers":[{"name":"r","resources":{"requests":"4"}}]}})");
  pods.push_back(
      R"({"metadata":{"name":"e7","namespace":"t"},"spec":{"containers":[{"name":"r","resources":{"limits":5}}]}})");
  pods.push_back(
      R"({"metadata":{"name":"e8","namespace":"t"},"spec":{"initContainers":[{"name":"s","restartPolicy":1}]}})");
  pods.push_back(R"({"metadata":{"name":"e9","namespace":"t","creationTimestamp":7}})");
  pods.push_back(R"({"metadata":{"name":"e10"},"status":{"startTime":"2026-02-30T00:00:00Z"}})");
  return pods;
}

// Each pod decoded on a thread of its own (nothing kept from an earlier pod).
std::vector<std::string> decodedAlone(const std::vector<std::string>& pods) {
  std::vector<std::string> out(pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    std::thread([&, i] { out[i] = describe(decodePodJson(pods[i])); }).join();
  }
  return out;
}

TEST(DecodePodReuse, APodDecodesAsOnAFreshThreadWhateverCameBefore) {
  const std::vector<std::string> pods = variedPods();
  const std::vector<std::string> alone = decodedAlone(pods);
  std::mt19937 rng(15);
  std::size_t errors = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<std::size_t> order(pods.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (round % 2 == 1) std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order) {
      const std::string got = describe(decodePodJson(pods[i]));
      EXPECT_EQ(got, alone[i]) << "pod " << i << " in round " << round;
      if (got.starts_with("error")) ++errors;
    }
  }
  EXPECT_EQ(errors, 20u * 10u);  // the ten error pods fail every time, the others never
}

TEST(DecodePodReuse, SumsOverEveryContainer) {
  // The large pod: regular containers add up (3 GPUs, 1.5+2+0.1 CPU), the init containers run
  // before them (4 GPUs, 8 CPU) except the restartable sidecar, which stays (1 GPU, added to the
  // regular containers: max(4, 3 + 1) = 4 GPUs, max(8, 3.6) = 8 CPU), plus the overhead.
  const Result<policy::Pod> r = decodePodJson(variedPods()[2]);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpus, 4000);
  EXPECT_EQ(r->cpuMilli, 8250);
  EXPECT_EQ(r->memoryBytes, 4LL * 1024 * 1024 * 1024 + 1024LL * 1024 * 1024 + 512LL * 1024 * 1024 +
                                100LL * 1024 * 1024);
}

TEST(DecodePodReuse, ErrorsReadWordForWord) {
  const std::vector<std::string> pods = variedPods();
  const std::vector<std::pair<std::size_t, std::string>> expected = {
      {8, "pod t/e1: spec.containers[1] must be an object"},
      {9, "pod t/e2: spec.containers[1].name must be a string"},
      {10, "pod t/e3: container main.resources.limits[\"cpu\"]: "},
      {11, "pod t/e4: spec.initContainers[1].resources.requests[\"memory\"]: "},
      {12, "pod t/e5: container r.resources must be an object"},
      {13, "pod t/e6: container r.resources.requests must be an object"},
      {14, "pod t/e7: container r.resources.limits must be an object"},
      {15, "pod t/e8: init container s.restartPolicy must be a string"},
      {16, "pod t/e9: metadata.creationTimestamp must be a string"},
      {17, "pod default/e10: status.startTime: "},
  };
  for (const auto& [index, text] : expected) {
    const Result<policy::Pod> r = decodePodJson(pods[index]);
    ASSERT_FALSE(r.ok()) << index;
    // The whole text up to the quantity's or the timestamp's own message, which Quantity and
    // parseTimestamp write (their tests cover it).
    if (text.ends_with(": ")) {
      EXPECT_TRUE(r.error().starts_with(text)) << r.error();
    } else {
      EXPECT_EQ(r.error(), text);
    }
  }
}

}  // namespace
}  // namespace gpufair::codec
