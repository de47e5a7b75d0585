// A simulation: every (strategy, seed) pair replayed on the same scenario, on a pool of threads.
// A seed fixes the submitted pod list (the same for every strategy) and the tie-break order.
// Thread-safety: simulate() is reentrant; `progress` may be read from other threads meanwhile.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/sim/report.h"
#include "gpufair/sim/sampling.h"
#include "gpufair/sim/scenario.h"
#include "gpufair/sim/service_cluster.h"

namespace gpufair::sim {

struct Progress {
  std::atomic<std::size_t> total{0};  // pods to submit over all replays, known once sampled
  std::atomic<std::size_t> done{0};   // pods submitted so far
  std::atomic<std::size_t> runsDone{0};
  std::atomic<std::size_t> runsTotal{0};
};

// The policy name of the hindsight reference (hindsight.h): an offline planner that sees each
// seed's whole arrival set; its curve has one point, at 100 % arrived.
inline constexpr const char* kHindsightPolicy = "hindsight";

// How a pod is placed (`gpufair simulate --path`):
//   kPaper:        the engine's scorer called directly with the workload given from the pod list,
//                  exact scores (replay.h): the "Beware of Fragmentation" protocol;
//   kService:      through the mirror and the extender service as `gpufair serve` runs
//                  (service_replay.h), the workload learned online from the pods offered;
//   kServiceGiven: the service path with the workload given, as the paper mode: the difference
//                  to kService is what learning online costs.
enum class Path { kPaper, kService, kServiceGiven };
const char* pathName(Path path);  // "paper", "service", "service-given"
std::optional<Path> parsePath(std::string_view text);
// "paper,service": paths, in order; empty items, duplicates and unknown names are an error.
Result<std::vector<Path>> parsePaths(std::string_view text);

struct SimulationOptions {
  std::vector<std::string> policies;  // scorer names (policy::makeScorer), or kHindsightPolicy
  // Each policy runs on every path; with more than one path a report row is named
  // "POLICY (PATH)". The hindsight planner has no path: it runs once.
  std::vector<Path> paths{Path::kPaper};
  // The service path's wiring (filter mode, queues); its workload is set by the path.
  ServiceClusterOptions service;
  std::vector<std::uint64_t> seeds{42, 43, 44, 45, 46, 47, 48, 49, 50, 51};
  double load = 1.3;
  Sampling sampling = Sampling::kInflate;
  int step = 1;  // curve resolution, percent of capacity
  std::vector<int> summaryPoints{90, 95, 100, 130};
  double typicalPopularity = 0.95;  // target workload: see typicalWorkload()
  bool measureFragmentation = true;
  unsigned threads = 0;  // 0: one per hardware thread
  Progress* progress = nullptr;
};

// Fails (before replaying anything) on an unknown strategy, no seeds, or a workload that cannot
// reach the load (see samplePods).
Result<SimulationReport> simulate(const Scenario& scenario, const SimulationOptions& options);

// "42-51", "1,2,5-7", "7": seeds in the given order, ranges inclusive; duplicates are an error.
Result<std::vector<std::uint64_t>> parseSeeds(std::string_view text);
// "fgd,bestfit": names, in order; empty items and duplicates are an error.
Result<std::vector<std::string>> parsePolicies(std::string_view text);

}  // namespace gpufair::sim
