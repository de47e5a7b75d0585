#include "gpufair/state/snapshot_builder.h"

#include <algorithm>
#include <cmath>
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

namespace {

// Total-variation distance between two workloads (shapes sorted, weights summing to 1): half the
// sum of |p - q| over the shapes of either.
double distance(const policy::Workload& a, const policy::Workload& b) {
  const auto x = a.shapes();
  const auto y = b.shapes();
  double sum = 0;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && x[i].shape < y[j].shape)) {
      sum += x[i++].weight;
    } else if (i == x.size() || y[j].shape < x[i].shape) {
      sum += y[j++].weight;
    } else {
      sum += std::abs(x[i++].weight - y[j++].weight);
    }
  }
  return sum / 2;
}

}  // namespace

void SnapshotBuilder::publishWorkload() {
  workloadDirty_ = false;
  if (fixedWorkload_) {
    publishedWorkload_ = fixedWorkload_;
    publishedLearned_ = false;
    return;
  }
  auto next =
      std::make_shared<const policy::Workload>(learned_.distribution(options_.learning.coverage));
  // An empty workload is always replaced: no target at all is not a small difference.
  if (publishedWorkload_ && publishedLearned_ && !publishedWorkload_->empty() &&
      distance(*publishedWorkload_, *next) <= options_.workloadRepublishDistance) {
    return;
  }
  publishedWorkload_ = std::move(next);
  publishedLearned_ = true;
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
    changed_.push_back(at->second);
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

std::shared_ptr<const policy::NodeShapes> SnapshotBuilder::buildShapes(bool inPlace) {
  // Ids of shapes no node has any more are never reused: renumber when they pile up.
  const bool renumber =
      !inPlace || shapeOf_.size() != built_.size() || shapes_.count() > 2 * built_.size() + 64;
  if (!renumber && changed_.empty() && builtShapes_ != nullptr) return builtShapes_;
  if (renumber) {
    shapes_.clear();
    shapeOf_.resize(built_.size());
    for (std::size_t i = 0; i < built_.size(); ++i) shapeOf_[i] = shapes_.shapeOf(*built_[i]);
  } else {
    for (std::size_t i : changed_) shapeOf_[i] = shapes_.shapeOf(*built_[i]);
  }
  auto shapes = std::make_shared<policy::NodeShapes>();
  shapes->of = shapeOf_;
  shapes->count = shapes_.count();
  builtShapes_ = std::move(shapes);
  return builtShapes_;
}

policy::SnapshotPtr SnapshotBuilder::build(const PodCache& pods,
                                           const ReservationBook& reservations,
                                           const QuotaConfig& quota) {
  if (clean()) return current_;
  if (workloadDirty_ || !publishedWorkload_) {
    const policy::WorkloadPtr was = publishedWorkload_;
    publishWorkload();
    if (current_ != nullptr && dirty_.empty() && publishedWorkload_ == was) return current_;
  }
  ++generation_;
  auto reserved = reservations.byNode();
  changed_.clear();
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
  if (dirty_.hasPending() || !builtPending_) builtPending_ = pods.pendingList();
  if (dirty_.hasProvisional() || !builtProvisional_) {
    builtProvisional_ = pods.assumedList();
  }
  dirty_.clear();
  policy::SnapshotOptions published{options_.fit, publishedWorkload_, options_.seed};
  published.provisional = builtProvisional_;
  published.shapes = buildShapes(inPlace);
  // Same node names in the same order as the last snapshot: it shares what did not change.
  const policy::ClusterSnapshot* previous = inPlace ? current_.get() : nullptr;
  current_ = std::make_shared<const policy::ClusterSnapshot>(
      previous, built_, changed_, builtPending_, quota, generation_, std::move(published));
  return current_;
}

}  // namespace gpufair::state
