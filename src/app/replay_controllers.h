// The controllers of `gpufair serve` inside a replay over time
// (sim::TimeReplayOptions::controller): the same ReclaimController and ConsolidationController
// serve runs, on the replay's service cluster (its mirror and simulated clock), each round run
// directly (runOnce) every controller period of trace time. Their evictor ends the pod in the
// cluster (sim::ServiceCluster::remove: its GPUs, CPU and memory are free at once, as `serve
// --cluster` deletes it from the mirror) and reports it to the replay, which has its Job recreate
// it (time_replay.h). The holds the controllers make (the freed node for the waiting pod, each
// mover's planned node for its replacement) steer the pods as in serve: the filter keeps other pods
// off them and /prioritize puts the holder's node first.
//
// Reclaim runs first (as serve's loops do, consolidation leaves to it the pods it can serve); it
// only acts with queues (one queue holding the cluster owes nobody anything). Nothing is logged.
// Thread-safety: the returned function keeps state of one replay; call it from that replay only
// (a new function per replay).
#pragma once

#include <chrono>

#include "gpufair/sim/time_replay.h"

namespace gpufair::app {

struct ReplayControlSettings {
  bool consolidate = false;
  bool reclaim = false;
  // How long a plan's holds wait (serve's --consolidate-timeout and reclaim's hold), trace time.
  std::chrono::seconds consolidateHold{300};
  std::chrono::seconds reclaimHold{120};
};

sim::ReplayController makeReplayController(const ReplayControlSettings& settings);

}  // namespace gpufair::app
