// The replay() protocol (one pod at a time in the given order; a pod that does not fit is given up
// and deleted) through gpufair's own service path (service_cluster.h) instead of the engine's
// scorers: what `gpufair serve` would have placed for the same arrivals. Measured on the same
// yardstick as replay(): allocated GPUs and fragmentation against the given target workload.
// Thread-safety: replayService() is reentrant; each call builds its own mirror and service.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gpufair/sim/replay.h"
#include "gpufair/sim/service_cluster.h"

namespace gpufair::sim {

struct ServiceReplayOptions {
  std::string scorer;  // policy::makeScorer name (made without a workload: it reads the mirror's)
  std::uint64_t seed = 42;  // candidate order (tieBreakOrder) and the mirror's seed
  ServiceClusterOptions cluster;
  // The fragmentation measure's yardstick, as ReplayOptions' (not what the service sees).
  policy::FitOptions measureFit{.checkCpuMemory = true};
  policy::WorkloadPtr measureWorkload;
  bool measureFragmentation = true;
  std::atomic<std::size_t>* progress = nullptr;  // incremented once per pod, if given
};

// Fails on an unknown scorer. ReplayResult as replay() fills it.
Result<ReplayResult> replayService(const Scenario& scenario, std::span<const std::size_t> order,
                                   const ServiceReplayOptions& options);

}  // namespace gpufair::sim
