// How `gpufair simulate --over-time` reports its replays (time_replay.h): a text summary (mean GPU
// allocation, pods placed, evictions and moves per policy; wait-time percentiles per pod size),
// JSON (schema "gpufair.simulate.time/v1": the summary and every sample) and an SVG with two
// panels over time: GPU allocation and pending GPU demand, in percent of the capacity, one
// <path class="curve"> per policy and panel.
// Thread-safety: pure functions over value types.
#pragma once

#include <string>
#include <vector>

#include "gpufair/sim/time_replay.h"

namespace gpufair::sim {

struct TimeReport {
  std::string source;
  std::size_t nodes = 0;
  MilliGpu capacity = 0;
  std::string queues;   // "one queue", or the queues file
  std::string control;  // the controllers in the replays, in words; "": none
  double arrivalSpeedup = 1;
  double offeredLoad = 0;  // GPU time asked / (capacity x span of arrivals), sped up
  std::vector<std::string> policies;
  std::vector<TimeReplayResult> results;  // parallel to policies
  double seconds = 0;
};

std::string timeSummary(const TimeReport& report);
std::string timeJson(const TimeReport& report);
std::string timePlotSvg(const TimeReport& report, const std::string& title);

}  // namespace gpufair::sim
