// What replays measure, the way the paper's analysis scripts read them: each submitted pod is an
// event (arrived GPU request, allocated GPUs, fragmentation); a curve point at x% arrived is the
// mean over the events whose arrived request, in percent of the GPU capacity, rounds to x
// (half to even), or, when none does, over those rounding to x-1..x+1; no point when neither has
// events. Summaries take the median over seeds (the mean of the middle two for an even count).
// Thread-safety: value types and free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpufair/sim/replay.h"

namespace gpufair::sim {

struct Curve {
  std::vector<int> arrivedPercent;  // 0, step, 2 step, ... up to the largest requested
  std::vector<std::optional<double>> allocatedPercent;         // of the GPU capacity
  std::vector<std::optional<double>> fragmentedPercent;        // of the GPU capacity
  std::vector<std::optional<double>> fragmentedOfFreePercent;  // of the free GPUs

  std::optional<double> allocatedAt(int percent) const;
};

Curve curveOf(std::span<const ReplayEvent> events, MilliGpu capacity, int maxPercent, int step = 1);

// The arrived percent an event counts toward in curveOf: its arrived request, in percent of the
// capacity, rounded half to even (as Python's round() in the paper's analysis scripts).
int arrivedBucket(MilliGpu arrived, MilliGpu capacity);

std::optional<double> median(std::vector<double> values);

struct RunReport {
  std::uint64_t seed = 0;
  std::size_t pods = 0;
  std::size_t placed = 0;
  std::size_t failed = 0;
  MilliGpu arrivedGpus = 0;    // milli-GPUs requested by all submitted pods
  MilliGpu allocatedGpus = 0;  // milli-GPUs held at the end
  double seconds = 0;
  Curve curve;
};

struct PolicyReport {
  std::string policy;
  std::vector<RunReport> runs;  // in seed order
  // Median over the runs of the allocation at each summary point (none if no run has a value).
  std::vector<std::optional<double>> allocationAt;  // parallel to SimulationReport::summaryPoints
  // Median over the runs at every curve point, for plots.
  Curve medianCurve;
};

struct SimulationReport {
  std::string source;  // the scenario's
  std::size_t nodes = 0;
  MilliGpu capacity = 0;
  std::size_t templates = 0;
  double load = 0;
  std::string sampling;
  std::vector<std::uint64_t> seeds;
  std::vector<int> summaryPoints;  // arrived percents of the summary: 90, 95, 100, 130
  std::vector<PolicyReport> policies;
  double seconds = 0;  // wall time of all replays
  unsigned threads = 0;
};

// Fills allocationAt and medianCurve of each policy from its runs.
void summarize(SimulationReport& report);

// The JSON document of `gpufair simulate --json` (schema "gpufair.simulate/v1"; see the README).
std::string toJson(const SimulationReport& report);
// The summary as an aligned text table: one row per policy, one column per summary point.
std::string summaryTable(const SimulationReport& report);

}  // namespace gpufair::sim
