#include "gpufair/sim/service_replay.h"

#include <memory>

namespace gpufair::sim {
namespace {

// Fragmentation per node against the yardstick, updated for the nodes that change.
class FragmentationMeter {
 public:
  FragmentationMeter(const ServiceReplayOptions& options, const policy::ClusterSnapshot& snapshot,
                     const Scenario& scenario)
      : options_(options),
        scenario_(scenario),
        on_(options.measureFragmentation && options.measureWorkload &&
            !options.measureWorkload->empty()) {
    perNode_.assign(scenario.nodes.size(), 0.0);
    for (std::size_t i = 0; on_ && i < perNode_.size(); ++i) update(snapshot, i);
  }
  void update(const policy::ClusterSnapshot& snapshot, std::size_t i) {
    if (!on_) return;
    const policy::NodeState* node = snapshot.findNode(scenario_.nodes[i].name);
    const double value =
        node ? policy::nodeFragmentation(*node, options_.measureWorkload, options_.measureFit) : 0;
    total_ += value - perNode_[i];
    perNode_[i] = value;
  }
  double total() const { return total_; }

 private:
  const ServiceReplayOptions& options_;
  const Scenario& scenario_;
  const bool on_;
  std::vector<double> perNode_;
  double total_ = 0;
};

}  // namespace

Result<ReplayResult> replayService(const Scenario& scenario, std::span<const std::size_t> order,
                                   const ServiceReplayOptions& options) {
  std::shared_ptr<const policy::Scorer> scorer = policy::makeScorer(options.scorer);
  if (!scorer) return Result<ReplayResult>::failure("unknown policy \"" + options.scorer + "\"");
  ServiceClusterOptions clusterOptions = options.cluster;
  clusterOptions.mirror.seed = options.seed;
  ServiceCluster cluster(scenario, scorer, tieBreakOrder(scenario.nodes.size(), options.seed),
                         clusterOptions);
  FragmentationMeter meter(options, *cluster.snapshot(), scenario);

  ReplayResult out;
  out.capacity = scenario.gpuCapacity();
  out.events.reserve(order.size());
  out.placements.reserve(order.size());
  out.gpuIndexes.reserve(order.size());
  MilliGpu arrived = 0, allocated = 0;
  for (const policy::Pod& pod : scenario.running) allocated += pod.holdsGpus() ? pod.gpus : 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    policy::Pod pod = scenario.templates[order[k]];
    const std::string suffix = "-" + std::to_string(k);  // each submission is its own pod
    pod.uid += suffix;
    pod.name += suffix;
    const std::string uid = pod.uid;
    const MilliGpu gpus = pod.gpus;
    arrived += gpus;
    const ServiceCluster::Placement placed = cluster.schedule(std::move(pod));
    out.placements.push_back(placed.node);
    out.gpuIndexes.push_back(placed.gpuIndex);
    if (placed.node < 0) {
      cluster.remove(uid);  // failed for good, as the paper's simulator drops it
      ++out.failed;
      out.failedGpus += gpus;
    } else {
      ++out.placed;
      allocated += gpus;
      meter.update(*cluster.snapshot(), static_cast<std::size_t>(placed.node));
    }
    out.events.push_back({arrived, allocated, meter.total()});
    if (options.progress) options.progress->fetch_add(1, std::memory_order_relaxed);
  }
  return out;
}

}  // namespace gpufair::sim
