#include "replay_controllers.h"

#include <memory>
#include <utility>

#include "consolidation_controller.h"
#include "reclaim_controller.h"

namespace gpufair::app {
namespace {

// Eviction in the replay: the pod ends in the cluster at once; the replay is told which.
class ReplayEvictor final : public state::Evictor {
 public:
  explicit ReplayEvictor(sim::ServiceCluster& cluster) : cluster_(cluster) {}
  state::EvictResult evict(const policy::Pod& pod, const std::string& /*reason*/) override {
    cluster_.remove(pod.uid);
    evicted_.push_back(pod.uid);
    return {state::EvictOutcome::kEvicted, ""};
  }
  std::vector<std::string> take() { return std::exchange(evicted_, {}); }

 private:
  sim::ServiceCluster& cluster_;
  std::vector<std::string> evicted_;
};

// Both loops on one replay's cluster.
struct Controllers {
  Controllers(sim::ServiceCluster& c, const ReplayControlSettings& s) : cluster(&c), evictor(c) {
    if (s.reclaim) {
      ReclaimSettings r;
      r.holdFor = s.reclaimHold;
      reclaim = std::make_unique<ReclaimController>(c.mirror(), evictor, c.clock(), r);
    }
    if (s.consolidate) {
      ConsolidationSettings k;
      k.enabled = true;
      k.holdFor = s.consolidateHold;
      k.reclaimEnabled = s.reclaim;
      consolidation = std::make_unique<ConsolidationController>(c.mirror(), evictor, c.clock(), k);
    }
  }
  sim::ServiceCluster* cluster;
  ReplayEvictor evictor;
  std::unique_ptr<ReclaimController> reclaim;
  std::unique_ptr<ConsolidationController> consolidation;
};

}  // namespace

sim::ReplayController makeReplayController(const ReplayControlSettings& settings) {
  auto state = std::make_shared<std::unique_ptr<Controllers>>();
  return [state, settings](sim::ServiceCluster& cluster, std::int64_t /*now*/) {
    std::unique_ptr<Controllers>& c = *state;
    if (!c || c->cluster != &cluster) c = std::make_unique<Controllers>(cluster, settings);
    sim::ControllerStep step;
    if (c->reclaim) c->reclaim->runOnce();
    if (c->consolidation) step.moves = static_cast<std::size_t>(c->consolidation->runOnce().moved);
    step.evicted = c->evictor.take();
    return step;
  };
}

}  // namespace gpufair::app
