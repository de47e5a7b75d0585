// The replay over time's load arithmetic (time_replay.h), shared by the replayer and the offered
// load functions: the busy window of a pod list's arrivals.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "gpufair/sim/openb_csv.h"

namespace gpufair::sim {

// The creation times that bound the busy window, and the first of all.
struct BusyWindow {
  std::int64_t first, from, to;
};

// Where the arrivals are dense: the creation times of the 5th and 95th percentile (the whole span
// for a handful of pods), so that a few early or late pods do not stretch the window. `lifetimes`
// must not be empty.
BusyWindow busyWindow(std::span<const PodLifetime> lifetimes);

}  // namespace gpufair::sim
