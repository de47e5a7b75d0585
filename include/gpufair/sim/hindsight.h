// The hindsight reference: what an offline planner that knows the whole arrival set in advance
// places, the headroom an online policy could still gain. For a prefix of a sampled order (the
// pods that arrived up to some point) it packs the pods in several decreasing orders (GPUs then
// CPU; CPU then GPUs; pods allowed the fewest GPUs first) with first fit, best fit on GPUs and
// best fit on GPUs and CPU together; and, when given a scorer, it replays the arrival order
// through it and through blockfit, then repairs each plan by local search: each failed GPU pod,
// largest first, takes the room one placed pod leaves when moved to another node with room for it
// (every pod of the replay stays placed). All on the same nodes and under the same fit rules as a
// replay (GPU count or share of one GPU, GPU model, CPU, memory); it keeps the plan that places the
// most GPUs. Pods without GPUs are left out by the simple orders (they cannot raise GPU
// allocation). A heuristic, not an optimum: bin packing is NP-hard; it bounds nothing, it shows
// what knowing the future buys a planner. Thread-safety: pure functions over const inputs;
// reentrant.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "gpufair/sim/replay.h"
#include "gpufair/sim/scenario.h"

namespace gpufair::sim {

// Milli-GPUs the best plan places for the pods order[0..count) (on top of scenario.running).
// `scorer` (may be null) with `options` replays the ordered pods, as replay() does.
MilliGpu hindsightAllocation(const Scenario& scenario, std::span<const std::size_t> order,
                             std::size_t count, const policy::Scorer* scorer = nullptr,
                             const ReplayOptions& options = {});

// A replay-shaped result for `order`: one event per arrived percent in `percents` (of the GPU
// capacity), at the last pod whose cumulative request stays within it, allocated = the best plan
// of that prefix (plus running pods). placements and gpuIndexes are left empty.
ReplayResult hindsightReplay(const Scenario& scenario, std::span<const std::size_t> order,
                             std::span<const int> percents, const policy::Scorer* scorer = nullptr,
                             const ReplayOptions& options = {});

}  // namespace gpufair::sim
