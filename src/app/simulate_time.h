// `gpufair simulate --over-time`: the replay over time (sim/time_replay.h) of each policy, one
// thread per policy up to --threads, reported as text, --json and --plot.
// Thread-safety: called once from the command's thread.
#pragma once

#include "gpufair/sim/simulation.h"

#include "cli.h"

namespace gpufair::app {

// `options`: the policies, the first seed, the service wiring (filter mode, queues) and the
// thread count, as parsed for `simulate`. Returns the exit code.
int runSimulateOverTime(const ParsedArgs& args, const sim::SimulationOptions& options);

}  // namespace gpufair::app
