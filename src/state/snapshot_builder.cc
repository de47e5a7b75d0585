#include "gpufair/state/snapshot_builder.h"

#include <algorithm>
#include <utility>

namespace gpufair::state {

SnapshotBuilder::SnapshotBuilder(SnapshotBuilderOptions options)
    : options_(options), learned_(options.learning.decay) {}

void SnapshotBuilder::upsertNode(policy::Node node) {
  dirty_.node(node.name);
  std::string name = node.name;
  nodes_.insert_or_assign(std::move(name), std::move(node));
}

void SnapshotBuilder::deleteNode(std::string_view name) {
  std::string key(name);
  if (nodes_.erase(key) > 0) dirty_.node(key);
}

void SnapshotBuilder::replaceNodes(std::vector<policy::Node> nodes) {
  std::unordered_map<std::string, policy::Node> next;
  next.reserve(nodes.size());
  for (auto& n : nodes) {
    std::string name = n.name;
    next.insert_or_assign(std::move(name), std::move(n));
  }
  nodes_ = std::move(next);
  dirty_.all();
}

void SnapshotBuilder::observe(const policy::Pod& pod) {
  if (pod.isFinished() || (pod.gpus <= 0 && !options_.learning.cpuOnlyPods)) return;
  policy::PodShape shape = policy::PodShape::of(pod);
  if (options_.learning.ignoreMemory) shape.memoryBytes = 0;
  learned_.observe(shape);
  if (!fixedWorkload_) workloadDirty_ = true;
}

void SnapshotBuilder::setWorkload(policy::WorkloadPtr workload) {
  fixedWorkload_ = std::move(workload);
  workloadDirty_ = true;
}

bool SnapshotBuilder::isCurrent(const policy::SnapshotPtr& snapshot) const {
  return clean() && snapshot == current_;
}

bool SnapshotBuilder::buildNode(
    const std::string& name, const PodCache& pods,
    std::unordered_map<std::string, std::vector<policy::Reservation>>& reserved) {
  auto node = nodes_.find(name);
  auto at = builtIndex_.find(name);
  if (node == nodes_.end()) {
    if (at == builtIndex_.end()) return true;
    built_[at->second] = nullptr;  // reindex() drops it
    builtIndex_.erase(at);
    return false;
  }
  std::vector<policy::Reservation> held;
  if (auto r = reserved.find(name); r != reserved.end()) held = std::move(r->second);
  auto state = std::make_shared<const policy::NodeState>(node->second, pods.podsOn(name),
                                                         generation_, std::move(held));
  if (at != builtIndex_.end()) {
    built_[at->second] = std::move(state);
    return true;
  }
  builtIndex_.emplace(name, built_.size());
  built_.push_back(std::move(state));
  return false;
}

void SnapshotBuilder::reindex() {
  std::erase(built_, nullptr);
  std::sort(built_.begin(), built_.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  builtIndex_.clear();
  builtIndex_.reserve(built_.size());
  for (std::size_t i = 0; i < built_.size(); ++i) builtIndex_.emplace(built_[i]->name(), i);
}

policy::SnapshotPtr SnapshotBuilder::build(const PodCache& pods,
                                           const ReservationBook& reservations,
                                           const QuotaConfig& quota) {
  if (clean()) return current_;
  ++generation_;
  if (workloadDirty_ || !publishedWorkload_) {
    publishedWorkload_ = fixedWorkload_ ? fixedWorkload_
                                        : std::make_shared<const policy::Workload>(
                                              learned_.distribution(options_.learning.coverage));
    workloadDirty_ = false;
  }
  auto reserved = reservations.byNode();
  bool inPlace = true;
  if (dirty_.hasAll()) {
    built_.clear();
    builtIndex_.clear();
    for (const auto& [name, node] : nodes_) buildNode(name, pods, reserved);
    inPlace = false;
  } else {
    for (const auto& name : dirty_.nodes()) inPlace = buildNode(name, pods, reserved) && inPlace;
  }
  if (!inPlace) reindex();
  if (dirty_.hasPending()) builtPending_ = pods.pending();
  if (dirty_.hasProvisional() || !builtProvisional_) {
    builtProvisional_ = std::make_shared<const std::vector<std::string>>(pods.assumedUids());
  }
  dirty_.clear();
  std::vector<policy::NodeStatePtr> nodes = built_;
  policy::SnapshotOptions published{options_.fit, publishedWorkload_, options_.seed};
  published.provisional = builtProvisional_;
  current_ = std::make_shared<const policy::ClusterSnapshot>(std::move(nodes), builtPending_, quota,
                                                             generation_, std::move(published));
  return current_;
}

}  // namespace gpufair::state
