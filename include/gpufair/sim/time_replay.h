// A replay over time (`gpufair simulate --over-time`): pods arrive at their trace creation time,
// hold their resources for their trace duration (deletion - creation) from the moment they start,
// and leave. Every pod goes through the service path (service_cluster.h) as under `gpufair serve`.
// A pod that does not fit waits and is retried as kube-scheduler retries an unschedulable pod:
// when a cluster event may make it fit (here: a pod left), in arrival order (its activeQ orders
// equal priorities by enqueue time). Its backoff (1 s doubling to 10 s) is left out: trace
// durations are hours. The periodic flush of unschedulable pods is left out too: between two
// departures the cluster only fills, so a retry could not succeed. Within one retry round a pod
// whose shape (GPUs, GPU models, CPU, memory, queue) already failed is not offered again: on the
// same or a fuller cluster the same filter refuses it.
//
// A controller (reclaim, consolidation) can be run in the replay through `controller`: it is
// called every `controllerPeriod` seconds of trace time (only while pods wait with
// `controlWhileWaitingOnly`) with the cluster, may evict or move pods through it, and reports what
// it did; the replay counts that and retries the waiting pods after it. `gpufair simulate
// --over-time` plugs in serve's own reclaim and consolidation controllers
// (app/replay_controllers.h). With a controller every pod is a Job's: Pod::controller is set (its
// template's uid), Pod::created is its arrival, and a share of the pods (`movableShare`, by a hash
// of the name) is labelled gpufair.io/movable. An evicted pod ends; its Job recreates it at once: a
// new pod (name "<name>-<k>", uid "<uid>~<k>") of the same shape, labels, queue and controller,
// which waits in line like any arrival (behind the pods already waiting) and runs, once started,
// its full trace duration again (the default: the work since its start is lost) or, with
// `resumeRemaining`, what was left of it (it resumes from a checkpoint). A pod holding a
// reservation (the waiting pod a controller made room for, or a replacement steered to its planned
// node) is always offered on a retry, whatever failed before it in that round.
//
// `arrivalSpeedup` compresses the arrivals (durations unchanged) to load the cluster.
//
// Reports: samples over the busy window (see `window`) and as long after it (GPU allocation,
// pending GPU demand, running and waiting pods), and wait times (start - arrival) per pod size:
// shares of a GPU, 1, 2, 4, 8 GPUs, other counts and none (CPU-only pods).
// Thread-safety: replayOverTime() is reentrant; each call builds its own mirror and service.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/sim/openb_csv.h"
#include "gpufair/sim/service_cluster.h"

namespace gpufair::sim {

// What a controller did in one step.
struct ControllerStep {
  // Uids of the pods it evicted through the cluster (ServiceCluster::remove): the replay puts
  // them back in the waiting line, as their Job recreates them, to run their whole duration again.
  std::vector<std::string> evicted;
  std::size_t moves = 0;  // of those, pods moved to make room (consolidation)
};
// Called with the cluster and the trace time in seconds.
using ReplayController = std::function<ControllerStep(ServiceCluster&, std::int64_t now)>;

struct TimeReplayOptions {
  std::string scorer;       // policy::makeScorer name
  std::uint64_t seed = 42;  // candidate order (tieBreakOrder) and the mirror's seed
  ServiceClusterOptions cluster;
  int samples = 200;  // report samples, evenly over the trace's span
  // Arrivals come this many times faster than in the trace (times from the first arrival divided
  // by it); durations stay. The openb pod lists spread ~8,000 pods of minutes to hours over 150
  // days (~15 GPUs busy on average): only sped up do they load a cluster (arrivalSpeedupFor).
  double arrivalSpeedup = 1.0;
  ReplayController controller;
  std::int64_t controllerPeriod = 10;
  // Skip the controller while no pod waits (gpufair's controllers then have nothing to do).
  bool controlWhileWaitingOnly = false;
  // With a controller: the fraction of pods labelled gpufair.io/movable: "true" (FNV-1a hash of
  // the template's name below movableShare x 2^64), in [0, 1].
  double movableShare = 0;
  bool resumeRemaining = false;  // an evicted pod's replacement runs only what was left
  std::atomic<std::size_t>* progress = nullptr;  // incremented once per arriving pod, if given
};

struct TimeSample {
  std::int64_t time = 0;   // seconds from the start of the busy window
  MilliGpu allocated = 0;  // GPU requests of running pods
  MilliGpu pending = 0;    // GPU requests of waiting pods
  std::size_t running = 0;
  std::size_t waiting = 0;
};

// Wait times of one pod size, in seconds; pods still waiting at the end are counted apart.
struct WaitStats {
  std::string size;  // "share", "1", "2", "4", "8", "other", "none"
  std::size_t pods = 0;
  std::size_t neverPlaced = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;  // over the placed pods
};

struct TimeReplayResult {
  MilliGpu capacity = 0;
  std::int64_t span = 0;  // seconds from the first arrival to the last event
  // Seconds of the busy window: from the 5th to the 95th percentile of the arrivals, sped up
  // (a few early or late pods would stretch the whole span).
  std::int64_t window = 0;
  std::vector<TimeSample> samples;
  std::vector<WaitStats> waits;  // sizes with pods only, in the order above
  std::size_t pods = 0;
  std::size_t placed = 0;
  std::size_t evictions = 0;
  std::size_t moves = 0;
  // Evicted pods' replacements: seconds from the eviction to their start again (p50 and max over
  // the restarted ones), how many never restarted, and the GPU-seconds of work lost (run time
  // thrown away, 0 with resumeRemaining).
  double restartP50 = 0, restartMax = 0;
  std::size_t neverRestarted = 0;
  double lostGpuSeconds = 0;
  // Time-weighted, of the capacity, over the busy window.
  double meanAllocatedPercent = 0;
};

// `lifetimes` parallel to scenario.templates (every template arrives once). Fails on an unknown
// scorer or when the lifetimes do not match the pod list.
Result<TimeReplayResult> replayOverTime(const Scenario& scenario,
                                        std::span<const PodLifetime> lifetimes,
                                        const TimeReplayOptions& options);

// The speedup at which the pods ask `load` x the GPU capacity on average over the busy window
// (each pod for the part of its duration inside it): the offered load. 1 when the trace's
// own pace already offers that (or it cannot be computed), at most 1e7.
double arrivalSpeedupFor(const Scenario& scenario, std::span<const PodLifetime> lifetimes,
                         double load);

// The offered load at a speedup: the mean GPU demand over the busy window / the capacity.
double offeredLoadAt(const Scenario& scenario, std::span<const PodLifetime> lifetimes,
                     double speedup);

// Inflates a pod list for a replay over time (the paper's inflate, over time): adds
// round((factor - 1) x n) pods, each a copy of a pod drawn at random (seeded) with its shape, GPU
// models and duration, named and uid'd "<name>-x<k>", arriving at the creation time of another pod
// drawn independently. The arrivals keep the trace's pattern (bursts, busy window) and the shapes
// their mix; the offered load at any speedup grows ~factor times. A list cannot offer more than
// its GPU-time over the busy window by speeding up alone (the default openb list: ~0.47 of the
// capacity); inflated, it can. factor <= 1: nothing added.
void inflateArrivals(Scenario& scenario, std::vector<PodLifetime>& lifetimes, double factor,
                     std::uint64_t seed);

// The size class of a pod in the wait table.
std::string sizeClass(const policy::Pod& pod);

}  // namespace gpufair::sim
