// "fgdm": fgd made aware of GPU models and of what is left free (gpufair's default strategy).
//
// fgd (fragmentation.h, Weng et al., ATC'23) ranks a node by how much the placement grows the
// node's fragmentation against the target workload, quantized as the paper's simulator does
// (floor(100 * sigmoid(-dF / 1000))), and leaves the many resulting ties to chance. fgdm keeps
// that first objective and adds:
//   1. Model scarcity. Each restricted shape s of the workload (one that allows only some GPU
//      models) asks w_s * gpus_s of the GPUs still free on its models; spread over them by what
//      is free, GPU model X carries pressure rho_X = sum over restricted s allowing X of
//      w_s * gpus_s / free(s), relative to the workload's demand per free GPU of the cluster.
//      A pod placed on X costs scarcityWeight * rho_X * its milli-GPUs more fragmentation
//      growth, so pods that can run anywhere keep off the GPUs that restricted pods will need, and
//      more so as those GPUs run out. The term is the same on every node of one model: a pod
//      restricted to one model is not moved by it, and without restricted shapes fgdm is fgd.
//   2. Ties (equal quantized scores) broken by best fit where it is known to pay: a pod without
//      GPUs (its delta is 0 wherever the CPU and memory it takes strand no GPU) goes to the node
//      with the fewest free GPUs (as a fraction of the node's), so the CPU it takes strands the
//      fewest GPUs; and while the cluster's CPU is as allocated as its GPUs (CPU allocated
//      fraction >= cpuBoundRatio x GPU allocated fraction: CPU binds), GPU pods too go to the
//      node left with the least free GPU. Otherwise GPU pods' ties are left to the caller (its
//      random tie-break), as fgd leaves them: best fit for every pod lost on the default list and
//      on the multi-GPU family (bench/RESULTS.md).
// The workload is the one given at construction, else the snapshot's (serve learns it online),
// else the pod alone. Pure; thread-safety: stateless and const, one instance serves all threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"

namespace gpufair::policy {

struct FgdmTuning {
  double scarcityWeight = 1.0;  // milli-GPUs of growth per milli-GPU placed at relative pressure 1
  bool bestFitTies = false;     // ties of every pod: least free GPU left on the node
  bool gpuLessBestFitTies = true;  // ties of pods without GPUs: least free GPU on the node
  double cpuBoundRatio = 0.95;     // ties of GPU pods too while CPU binds (see 2.); <= 0: never
};

ScorerPtr makeFgdmScorer(WorkloadPtr workload = nullptr, FgdmTuning tuning = {});

// Relative pressure of restricted demand on each GPU model of the snapshot's nodes (see above),
// over free GPUs (byFree) or over allocatable ones: parallel to `models` (distinct gpuModel values
// of nodes taking new pods, sorted); 0 for a model without GPUs to count. Exposed for tests.
struct ModelPressure {
  std::vector<std::string> models;
  std::vector<double> pressure;
  double of(std::string_view model) const;
};
ModelPressure modelPressure(const ClusterSnapshot& snapshot, const Workload& workload,
                            bool byFree = true);

}  // namespace gpufair::policy
