// The hindsight reference: what an offline planner that knows the whole arrival set in advance
// places, the headroom an online policy could still gain. For a prefix of a sampled order (the
// pods that arrived up to some point) it takes the best of several plans:
// - the pods in decreasing orders (GPUs then CPU; CPU then GPUs; pods allowed the fewest GPUs
//   first), each packed by first fit, best fit on GPUs, best fit on GPUs and CPU together (pods
//   without GPUs are left out: they cannot raise GPU allocation);
// - when given a scorer (the default strategy), online plans improved: the arrival order replayed
//   through that scorer, and through binpack (the best online policy on the CPU-heavy openb lists
//   where the default is not), then each plan repaired by local search (each failed GPU pod,
//   largest first, takes the room one placed pod leaves when moved to another node with room for
//   it) and its failed pods placed directly where the moves opened room, while that gains. Every
//   pod the replay placed stays placed, so hindsight never places less than the scorer online, at
//   any point of the arrival order.
// All on the same nodes and under the same fit rules as a replay (GPU count or share of one GPU,
// GPU model, CPU, memory). A heuristic, not an optimum: bin packing is NP-hard; it bounds
// nothing, it shows what knowing the future buys a planner. Thread-safety: pure functions over
// const inputs; reentrant.
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

// A replay-shaped result for `order`: for each arrived percent in `percents` (of the GPU capacity),
// one event per pod after which the arrived request counts toward that percent (arrivedBucket, as
// curveOf averages a replay's events), allocated = the best plan of the pods up to it (plus
// running pods); if no pod's does, one event at the last pod whose arrived request stays within
// the percent. placements and gpuIndexes are left empty.
ReplayResult hindsightReplay(const Scenario& scenario, std::span<const std::size_t> order,
                             std::span<const int> percents, const policy::Scorer* scorer = nullptr,
                             const ReplayOptions& options = {});

}  // namespace gpufair::sim
