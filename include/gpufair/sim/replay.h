// One replay: pods submitted one at a time to a cluster, each placed by the engine on the best
// node or failed for good (no retries, no departures), as the "Beware of Fragmentation" experiments
// run. For each pod: the nodes that fit it (policy::fitsNode, CPU and memory included), their raw
// scores from the strategy (policy::Scorer), the highest score wins; ties go to the node first in a
// seeded random order of the nodes (deterministic for a seed, as the paper's simulator names its
// nodes in a seeded random order); a fractional pod gets the GPU the strategy chooses.
//
// The replayer keeps one NodeState per node and rebuilds only the node a pod lands on, then a
// ClusterSnapshot that shares the other NodeStates, so a pod costs one scoring pass over the nodes.
// Thread-safety: replay() is reentrant; run replays on several threads with one Scorer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/sim/scenario.h"

namespace gpufair::sim {

struct ReplayOptions {
  policy::FitOptions fit{.checkCpuMemory = true};
  std::uint64_t seed = 42;       // the tie-break order; also the snapshot's seed ("random")
  policy::WorkloadPtr workload;  // target workload of fgd and of the fragmentation measure
  bool measureFragmentation = true;
  // Skip nodes whose free totals (GPU, CPU, memory) are below the pod's request before asking the
  // engine's fit check, which would reject them anyway. Off only to test that claim.
  bool prefilter = true;
  std::atomic<std::size_t>* progress = nullptr;  // incremented once per pod, if given
};

// The cluster right after one pod was submitted (placed or failed).
struct ReplayEvent {
  MilliGpu arrived = 0;    // GPU requests of the pods submitted so far, failed ones included
  MilliGpu allocated = 0;  // GPU requests of the pods placed so far (running pods included)
  double fragmented = 0;   // milli-GPUs: the cluster's fragmentation against the target workload
};

struct ReplayResult {
  MilliGpu capacity = 0;
  std::vector<ReplayEvent> events;  // one per submitted pod, in order
  std::vector<int> placements;      // per submitted pod: index into Scenario::nodes, -1 failed
  std::vector<int> gpuIndexes;      // per submitted pod: the GPU of a fractional pod, else -1
  std::size_t placed = 0;
  std::size_t failed = 0;
  MilliGpu failedGpus = 0;  // GPU requests of the failed pods
};

// The nodes (indices into Scenario::nodes) in the seeded random order ties go by: the first wins.
std::vector<std::size_t> tieBreakOrder(std::size_t nodes, std::uint64_t seed);

// `order`: indices into scenario.templates, in submission order (see sampling.h).
ReplayResult replay(const Scenario& scenario, std::span<const std::size_t> order,
                    const policy::Scorer& scorer, const ReplayOptions& options);

}  // namespace gpufair::sim
