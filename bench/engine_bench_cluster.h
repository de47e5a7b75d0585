// The deterministic cluster the engine benchmarks share (see engine_bench.cc for its shape), and
// the helpers that build pods and queues the way the Mirror would see them. Built once per size.
// Thread-safety: benchmarks run one at a time; cluster() caches without a lock.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "gpufair/common/clock.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/mirror.h"

namespace gpufair::bench {

constexpr int kGpusPerNode = 8;
constexpr int kPodsPerNode = 20;

// Every benchmark sees the same time.
class FixedClock final : public Clock {
 public:
  Timestamp now() const override { return Timestamp{std::chrono::seconds{1'700'000'000}}; }
};

// "gpu-node-00042".
std::string nodeName(int i);
// The queues of the cluster shape (C = cluster GPUs): team-a..team-d, default queue deserved 0.
QuotaConfig makeQuota(int nodes);
// A pod of `gpus` milli-GPUs, created at a fixed time, with the labels a Deployment gives.
policy::Pod makePod(std::string ns, std::string name, MilliGpu gpus);

struct Cluster {
  int nodes = 0;
  std::unique_ptr<state::Mirror> mirror;
  policy::SnapshotPtr snapshot;
  std::vector<std::string> names;
  std::vector<std::string_view> candidates;
  std::vector<policy::Pod> gpuPods;  // bound pods with GPUs, to change one at a time
  QuotaConfig quota;
};

// The cluster of `nodes` nodes (built on first use, seed 42).
Cluster& cluster(int nodes);
// The pod being scheduled; queue resolved as the Mirror would.
policy::Pod incoming(const Cluster& c, std::string ns, int gpus);
// The default scorer.
const policy::Scorer& scorer();
// feasible / failed / admitted / borrowed counters for `pod` on `c`.
void countersFor(benchmark::State& state, const Cluster& c, const policy::Pod& pod);

}  // namespace gpufair::bench
