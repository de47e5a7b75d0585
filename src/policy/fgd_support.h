// What the fgd family of scorers (fgd, fgdplus, fgdm) shares: the paper's 0..100 score of a
// fragmentation change, the workload a node is scored against, and the GPU the fragmentation
// gradient chooses for a fractional pod.
#pragma once

#include <cmath>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::detail {

// The FGD paper's score of a fragmentation change (in milli-GPUs): 0..100, whole numbers.
inline double paperScore(double deltaMilli) {
  return std::floor(100.0 / (1.0 + std::exp(deltaMilli / 1000.0)));
}

// The workload to score against: the fixed one if any, else the snapshot's learned one, else
// the pod's own shape alone.
WorkloadPtr fgdTarget(const WorkloadPtr& fixed, const ClusterSnapshot& snapshot, const Pod& pod);

// The GPU of `node` where a fractional pod grows fragmentation least; -1 for whole-GPU pods.
int fgdChooseGpu(const WorkloadPtr& fixed, const ClusterSnapshot& snapshot, const Pod& pod,
                 const NodeState& node);

}  // namespace gpufair::policy::detail
