// Builds a ClusterSnapshot straight from nodes, pods and queues, without a Mirror, for engine
// tests.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::testing {

// Reservations go on the node each names.
inline policy::SnapshotPtr snapshotOf(const std::vector<policy::Node>& nodes,
                                      std::vector<policy::Pod> pods,
                                      const std::vector<QueueQuota>& queues = {},
                                      policy::SnapshotOptions options = {},
                                      const std::vector<policy::Reservation>& reservations = {}) {
  QuotaConfig quota;
  quota.queues = queues;
  std::map<std::string, std::vector<policy::PodPtr>> byNode;
  std::vector<policy::PodPtr> pending;
  for (auto& pod : pods) {
    pod.queue = policy::resolveQueue(quota, pod.ns, pod.labels);
    auto ptr = std::make_shared<const policy::Pod>(pod);
    if (pod.nodeName.empty()) {
      if (pod.gpus > 0 && !pod.isFinished()) pending.push_back(ptr);
    } else {
      byNode[pod.nodeName].push_back(ptr);
    }
  }
  std::vector<policy::NodeStatePtr> states;
  for (const auto& node : nodes) {
    std::vector<policy::Reservation> held;
    for (const auto& r : reservations) {
      if (r.node == node.name) held.push_back(r);
    }
    states.push_back(
        std::make_shared<const policy::NodeState>(node, byNode[node.name], 1, std::move(held)));
  }
  return std::make_shared<const policy::ClusterSnapshot>(std::move(states), std::move(pending),
                                                         std::move(quota), 1, std::move(options));
}

// A pending pod as the engine sees it: queue resolved against the snapshot's config.
inline policy::Pod resolved(const policy::ClusterSnapshot& snap, policy::Pod pod) {
  pod.queue = policy::resolveQueue(snap.quotaConfig(), pod.ns, pod.labels);
  return pod;
}

// Raw scores of one scorer for a pod over every node of a snapshot.
inline std::vector<double> rawScores(const policy::Scorer& scorer,
                                     const policy::ClusterSnapshot& snap, const policy::Pod& pod) {
  std::vector<const policy::NodeState*> nodes;
  for (const auto& n : snap.nodes()) nodes.push_back(n);
  std::vector<double> out(nodes.size());
  scorer.score(snap, pod, nodes, out);
  return out;
}

}  // namespace gpufair::testing
