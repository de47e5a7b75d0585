// A simulated cluster behind gpufair's own service path, for `gpufair simulate --path service`:
// an in-process state::Mirror, api::MemoryBinder and api::ExtenderService wired as `gpufair serve
// --cluster` wires them (the scorer set on the mirror for a fractional pod's GPU, no decision gate,
// the workload learned online from the pods offered unless one is given), driven the way
// kube-scheduler drives an extender (pods without GPUs never reach it by default: see
// cpuOnlyPodsBypassExtender):
//   1. its own NodeResourcesFit: only nodes with the pod's CPU and memory free are candidates;
//   2. /filter with the candidates' names, in the caller's candidate order;
//   3. /prioritize when more than one node passes: the highest score wins, ties going to the first
//      in candidate order (the caller makes that a seeded random order, as kube-scheduler's random
//      tie-break; no other score plugin weighs in);
//   4. /bind to the winner.
// The verbs are called through the service's typed entry points (ExtenderService::filterArgs,
// prioritizeArgs, bindArgs): the decisions the HTTP verbs make, without the JSON round trip.
// Quota admission is on: one queue deserving the whole cluster by default, or the queues given
// (pods are then spread over them by a hash of their name, see queueFor()).
// Thread-safety: an instance is used by one thread at a time; instances share nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/memory_binder.h"
#include "gpufair/common/clock.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/sim/scenario.h"
#include "gpufair/state/mirror.h"

namespace gpufair::sim {

struct ServiceClusterOptions {
  // The mirror's options; serve's defaults (fit: CPU and memory are left to kube-scheduler, the
  // fragmentation measure counts them; the workload learned as WorkloadLearning's defaults).
  state::MirrorOptions mirror{};
  api::FilterMode filterMode{};  // serve --filter-mode
  // Null: learned online from the pods offered, as serve learns it. Else fixed (paper protocol).
  policy::WorkloadPtr workload;
  // None: one queue ("default") deserving the whole cluster's GPUs. Else the queues of a file.
  std::optional<QuotaConfig> queues;
  // Whether pods without GPUs bypass the extender, as in serve: the scheduler config's
  // managedResources (nvidia.com/gpu, gpufair.io/gpu-milli) never send them to gpufair, and the
  // gpufair profile's score plugins all tie for them (NodeResourcesFit and BalancedAllocation
  // scores are disabled), so kube-scheduler binds them to a node drawn at random among those
  // with the CPU and memory (seeded by mirror.seed); the mirror learns of them from the watch.
  // False: they go through filter -> prioritize -> bind like GPU pods (the paper's protocol, or a
  // deployment that sends every pod to gpufair).
  bool cpuOnlyPodsBypassExtender = true;
};

// Simulated time: what the caller last set (the epoch at first). Thread-safe.
class SimClock final : public Clock {
 public:
  Timestamp now() const override { return Timestamp(Timestamp::duration(ticks_.load())); }
  void set(Timestamp t) { ticks_.store(t.time_since_epoch().count()); }

 private:
  std::atomic<Timestamp::rep> ticks_{0};
};

// The queue a pod named `name` is put in when `quota` has queues (labelled gpufair.io/queue): the
// FNV-1a hash of the name modulo the number of queues, in the config's order; "" without queues.
// A pod offered with a gpufair.io/queue label keeps it (a replacement stays in its queue).
std::string queueFor(const QuotaConfig& quota, std::string_view name);
// 64-bit FNV-1a of `text`.
std::uint64_t fnv1a(std::string_view text);

class ServiceCluster {
 public:
  // The scenario's nodes, and its running pods bound. `candidateOrder`: indices into
  // scenario.nodes, the order candidates are offered in (see tieBreakOrder in replay.h).
  ServiceCluster(const Scenario& scenario, std::shared_ptr<const policy::Scorer> scorer,
                 std::vector<std::size_t> candidateOrder, const ServiceClusterOptions& options);

  struct Placement {
    int node = -1;       // index into scenario.nodes; -1: not placed
    int gpuIndex = -1;   // a fractional pod's GPU
    std::string reason;  // why not placed
    bool overQuota = false;
  };
  // Offers `pod` (unbound, a uid of its own) to filter -> prioritize -> bind. Placed, it holds its
  // resources until remove(); not placed, it stays pending in the mirror (as a pod kube-scheduler
  // will retry) until remove().
  Placement schedule(policy::Pod pod);
  // The pod is deleted: what it held is free again.
  void remove(const std::string& uid);

  policy::SnapshotPtr snapshot() const { return mirror_.snapshot(); }
  // The mirror's clock (pending and assumed pods expire by it).
  void setTime(Timestamp t) { clock_->set(t); }
  ClockPtr clock() const { return clock_; }
  state::Mirror& mirror() { return mirror_; }
  const QuotaConfig& quota() const { return quota_; }

 private:
  struct Held {
    std::size_t node;
    std::int64_t cpuMilli;
    std::int64_t memoryBytes;
  };
  // kube-scheduler's NodeResourcesFit over the candidate order: the names of the nodes with room.
  void candidatesFor(const policy::Pod& pod);
  int pickBest(const std::vector<policy::NodeScore>& scores) const;
  // kube-scheduler alone: a random node with room, bound; the mirror sees it from the watch.
  Placement bindWithoutExtender(policy::Pod pod);

  const Scenario& scenario_;
  std::shared_ptr<SimClock> clock_ = std::make_shared<SimClock>();
  std::shared_ptr<const policy::Scorer> scorer_;
  std::vector<std::size_t> order_;
  QuotaConfig quota_;
  state::Mirror mirror_;
  api::MemoryBinder binder_;
  api::ExtenderService service_;
  std::vector<std::int64_t> cpuFree_;
  std::vector<std::int64_t> memoryFree_;
  std::unordered_map<std::string_view, std::size_t> index_;  // node name -> index
  std::unordered_map<std::string, Held> held_;               // uid -> what it holds
  api::ExtenderArgs args_;                                   // reused across pods
  bool bypassCpuOnly_ = false;
  std::mt19937_64 random_;  // kube-scheduler's choice among equal scores
};

}  // namespace gpufair::sim
