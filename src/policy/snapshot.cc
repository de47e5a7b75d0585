#include "gpufair/policy/snapshot.h"

#include <algorithm>

namespace gpufair::policy {

NodeState::NodeState(Node node, std::vector<PodPtr> pods, std::uint64_t generation)
    : node_(std::move(node)), pods_(std::move(pods)), generation_(generation) {
  std::sort(pods_.begin(), pods_.end(),
            [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; });
  for (const auto& pod : pods_) {
    if (!pod->holdsGpus() || pod->gpus == 0) continue;
    used_ += pod->gpus;
    auto it = std::find_if(byQueue_.begin(), byQueue_.end(),
                           [&](const QueueUse& u) { return u.queue == pod->queue; });
    if (it == byQueue_.end()) it = byQueue_.insert(byQueue_.end(), QueueUse{pod->queue, 0, 0, 0});
    it->allocated += pod->gpus;
    if (pod->overQuota) it->overQuota += pod->gpus;
    ++it->pods;
  }
}

MilliGpu QueueState::unmetDeserved() const {
  const MilliGpu wanted = std::min(quota.gpu.deserved, allocated + pending);
  return wanted > allocated ? wanted - allocated : 0;
}

std::string resolveQueue(const QuotaConfig& config, std::string_view ns, const Labels& labels) {
  if (auto it = labels.find(kQueueLabel); it != labels.end()) {
    if (it->second == config.defaultQueue.name) return it->second;
    for (const auto& q : config.queues) {
      if (q.name == it->second) return q.name;
    }
    return {};
  }
  for (const auto& q : config.queues) {
    if (std::find(q.namespaces.begin(), q.namespaces.end(), ns) != q.namespaces.end())
      return q.name;
  }
  return config.defaultQueue.name;
}

ClusterSnapshot::ClusterSnapshot(std::vector<NodeStatePtr> nodes, std::vector<PodPtr> pending,
                                 QuotaConfig quota, std::uint64_t generation)
    : nodes_(std::move(nodes)),
      pending_(std::move(pending)),
      quota_(std::move(quota)),
      generation_(generation) {
  std::sort(nodes_.begin(), nodes_.end(),
            [](const NodeStatePtr& a, const NodeStatePtr& b) { return a->name() < b->name(); });
  index_.reserve(nodes_.size());
  frees_.reserve(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const NodeState& n = *nodes_[i];
    index_.emplace(n.name(), i);
    allocated_ += n.used();
    if (n.node().takesNewPods()) {
      capacity_ += n.allocatable();
      free_ += n.free();
      frees_.push_back(n.free());
    }
  }
  std::sort(frees_.begin(), frees_.end());

  queues_.reserve(quota_.queues.size() + 1);
  for (const auto& q : quota_.queues) queues_.push_back(QueueState{q});
  queues_.push_back(QueueState{quota_.defaultQueue});
  auto queueIndex = [&](const std::string& name) -> QueueState* {
    for (auto& q : queues_) {
      if (q.quota.name == name) return &q;
    }
    return nullptr;
  };
  for (const auto& node : nodes_) {
    for (const auto& use : node->byQueue()) {
      if (QueueState* q = queueIndex(use.queue)) {
        q->allocated += use.allocated;
        q->overQuota += use.overQuota;
        q->runningPods += use.pods;
      }
    }
  }
  for (const auto& pod : pending_) {
    if (QueueState* q = queueIndex(pod->queue)) {
      q->pending += pod->gpus;
      ++q->pendingPods;
    }
  }
}

const NodeState* ClusterSnapshot::findNode(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : nodes_[it->second].get();
}

const QueueState* ClusterSnapshot::findQueue(std::string_view name) const {
  for (const auto& q : queues_) {
    if (q.quota.name == name) return &q;
  }
  return nullptr;
}

int ClusterSnapshot::nodesWithFree(MilliGpu gpus) const {
  auto it = std::lower_bound(frees_.begin(), frees_.end(), gpus);
  return static_cast<int>(frees_.end() - it);
}

}  // namespace gpufair::policy
