// What a simulation replays: a cluster (nodes, and pods already running on them) and the pod list
// its workload is drawn from. Built from the openb trace CSVs or from gpufair cluster files.
// Thread-safety: value types and free functions; nothing throws.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/model.h"
#include "gpufair/sim/openb_csv.h"

namespace gpufair::sim {

struct Scenario {
  std::vector<policy::Node> nodes;     // unique names, sorted by name
  std::vector<policy::Pod> running;    // bound to one of `nodes` before the replay starts
  std::vector<policy::Pod> templates;  // the pod list; replayed pods are copies of these
  std::string source;                  // where it came from, for reports

  // Allocatable milli-GPUs over all nodes: the "cluster GPU capacity" loads are measured against
  // (the paper counts every node of the node list, 6,212 GPUs for openb's GPU nodes).
  MilliGpu gpuCapacity() const;
  std::vector<MilliGpu> templateRequests() const;  // each template's GPU request, in order
};

// The trace's rows as engine objects: a node gets its GPUs (label nvidia.com/gpu.product = model),
// CPU and memory; a pod its whole GPUs or share of one GPU, allowed models, CPU and memory.
policy::Node toNode(const NodeRow& row);
policy::Pod toPod(const PodRow& row);

Result<Scenario> scenarioFromRows(const std::vector<NodeRow>& nodes,
                                  const std::vector<PodRow>& pods, std::string source);
// The openb node list and pod list CSV files.
Result<Scenario> loadOpenbScenario(const std::string& nodesCsv, const std::string& podsCsv);
// A cluster file (nodes; bound pods start running) and a workload file whose Pods form the pod
// list, both as `gpufair serve --cluster` reads them (config/cluster_file.h). The workload file may
// be the cluster file itself: then its unbound pods form the pod list.
Result<Scenario> loadYamlScenario(const std::string& clusterFile, const std::string& workloadFile,
                                  std::string_view gpufairNamespace);

// The target workload fragmentation is measured against, as the paper's simulator builds its
// "typical pods": pod shapes (GPUs or GPU share, CPU, GPU models; not memory) counted over the pod
// list, CPU-only pods included, the most frequent kept until they cover `popularity` of the pods,
// weights renormalized.
policy::Workload typicalWorkload(std::span<const policy::Pod> pods, double popularity = 0.95);

}  // namespace gpufair::sim
