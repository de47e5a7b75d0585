// The hindsight planner's model of the cluster (hindsight.h): each node's free GPUs, CPU and
// memory as plain numbers, and the pods placed on it, so that a plan can be built, undone and
// repaired cheaply. Internal to the sim module. Thread-safety: value types and free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpufair/sim/replay.h"
#include "gpufair/sim/scenario.h"

namespace gpufair::sim::detail {

struct Bin {
  const policy::Node* node;
  std::vector<MilliGpu> gpuFree;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  MilliGpu free = 0;
};

// A pod of the plan on a bin: its position in the arrival order (the pod is
// scenario.templates[order[pod]]), and the GPUs it took (bit g: GPU g).
struct Placed {
  std::size_t pod;
  std::uint64_t gpus;
};

// The nodes with the scenario's running pods on them.
std::vector<Bin> initialBins(const Scenario& scenario);

// The GPU a fractional pod takes on `b` (best fit), -1 if none; for any other pod 0 if it fits
// (enough fully free GPUs, CPU, memory, GPU model), else -1.
int fitGpu(const Bin& b, const policy::Pod& pod);

// Takes `pod` on `b` (`gpu`: fitGpu's answer); returns the GPUs taken. give() undoes it.
std::uint64_t take(Bin& b, const policy::Pod& pod, int gpu);
void give(Bin& b, const policy::Pod& pod, std::uint64_t gpus);

// The plan a replay made of `order`: bins with the placed pods on them (`on`, per bin), and the
// pods it failed, as positions in `order`. Returns the milli-GPUs placed.
MilliGpu planOfReplay(const Scenario& scenario, const ReplayResult& replay,
                      std::span<const std::size_t> order, std::vector<Bin>& bins,
                      std::vector<std::vector<Placed>>& on, std::vector<std::size_t>& failed);

// Local search on a plan: each failed GPU pod (a position in `order`), largest first, is placed on
// a node after moving one pod of that node to any node with room for it (every placed pod stays
// placed). The pods placed leave `failed`. Returns the milli-GPUs gained.
MilliGpu repairPlan(const Scenario& scenario, std::span<const std::size_t> order,
                    std::vector<Bin>& bins, std::vector<std::vector<Placed>>& on,
                    std::vector<std::size_t>& failed);

// First fit decreasing (GPUs, then CPU) of the failed GPU pods on the plan as it is, with no move:
// room a repair opened may take more of them. The pods placed leave `failed`. Returns the
// milli-GPUs gained.
MilliGpu placeFailed(const Scenario& scenario, std::span<const std::size_t> order,
                     std::vector<Bin>& bins, std::vector<std::vector<Placed>>& on,
                     std::vector<std::size_t>& failed);

}  // namespace gpufair::sim::detail
