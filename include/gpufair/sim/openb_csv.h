// Readers for the Alibaba openb GPU trace (cluster-trace-gpu-v2023): its node list and pod list
// CSV files, as rows exactly as the files say them. Columns are found by their header names, in any
// order; unknown columns are ignored.
//
//   nodes: sn (or name), gpu                        required
//          cpu_milli, memory_mib, model             optional (absent: 0, 0, no model)
//   pods:  name, num_gpu                            required
//          cpu_milli, memory_mib, gpu_milli,        optional (absent: 0, 0, 1000 per GPU, any
//          model) gpu_spec ("V100M16|V100M32") qos, pod_phase, creation_time, ...       ignored
//
// "nan" (pandas' missing value) and an empty field both mean "not given". A pod with num_gpu 1 and
// gpu_milli below 1000 asks for that share of one GPU; with num_gpu > 1 it asks for whole GPUs
// (gpu_milli must then be 1000). Any malformed row fails the whole load with "FILE:LINE: what".
// Thread-safety: free functions over value types; nothing throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/quantity.h"
#include "gpufair/common/status.h"

namespace gpufair::sim {

struct NodeRow {
  std::string name;
  std::int64_t cpuMilli = 0;
  std::int64_t memoryMib = 0;
  int gpus = 0;
  std::string model;  // empty: none given
  int line = 0;       // 1-based line in the file
};

struct PodRow {
  std::string name;
  std::int64_t cpuMilli = 0;
  std::int64_t memoryMib = 0;
  int numGpu = 0;
  MilliGpu gpuMilli = 0;               // per GPU: 1..1000 when numGpu > 0, else 0
  std::vector<std::string> gpuModels;  // gpu_spec split on '|'; empty: any model
  int line = 0;

  // The pod's whole GPU request in milli-GPUs: numGpu * gpuMilli (a share of one GPU, or whole
  // ones).
  MilliGpu gpuRequest() const { return numGpu * gpuMilli; }
  bool sharesGpu() const { return numGpu == 1 && gpuMilli < kMilliPerGpu; }
};

// `source` names the text in messages (usually its path).
Result<std::vector<NodeRow>> parseNodeCsv(std::string_view text, std::string_view source);
Result<std::vector<PodRow>> parsePodCsv(std::string_view text, std::string_view source);

// A pod's life in the trace, in seconds from the trace's start: created, then deleted.
struct PodLifetime {
  std::int64_t created = 0;
  std::int64_t deleted = 0;
};
// creation_time and deletion_time of every row of a pod list, in file order. Fails when the
// columns are absent (a list without times: "FILE:1: no creation_time and deletion_time columns:
// ..."), a value is missing, or a pod is deleted before it is created.
Result<std::vector<PodLifetime>> parsePodLifetimes(std::string_view text, std::string_view source);
Result<std::vector<PodLifetime>> loadPodLifetimes(const std::string& path);

Result<std::vector<NodeRow>> loadNodeCsv(const std::string& path);
Result<std::vector<PodRow>> loadPodCsv(const std::string& path);

// The whole file, or "cannot read PATH: reason".
Result<std::string> readTextFile(const std::string& path);

}  // namespace gpufair::sim
