#include "gpufair/api/debug_snapshot.h"

#include <nlohmann/json.hpp>

#include "gpus_json.h"

namespace gpufair::api {
namespace {

using nlohmann::json;

json podJson(const policy::Pod& pod, bool assumed) {
  return json{{"namespace", pod.ns},
              {"name", pod.name},
              {"uid", pod.uid},
              {"node", pod.nodeName},
              {"queue", pod.queue},
              {"gpus", detail::gpusJson(pod.gpus)},
              {"phase", policy::phaseName(pod.phase)},
              {"overQuota", pod.overQuota},
              {"assumed", assumed},
              {"terminating", pod.terminating}};
}

json nodeJson(const policy::NodeState& state) {
  json pods = json::array();
  for (const auto& pod : state.pods()) pods.push_back(pod->key());
  return json{{"name", state.name()},
              {"allocatable", detail::gpusJson(state.allocatable())},
              {"used", detail::gpusJson(state.used())},
              {"free", detail::gpusJson(state.free())},
              {"unschedulable", state.node().unschedulable},
              {"deleting", state.node().deleting},
              {"pods", std::move(pods)}};
}

json flatQueueJson(const policy::QueueState& queue) {
  const auto& quota = queue.quota.gpu;
  return json{{"name", queue.quota.name},
              {"deserved", detail::gpusJson(quota.deserved)},
              {"limit", quota.limit ? detail::gpusJson(*quota.limit) : json(nullptr)},
              {"overQuotaWeight", quota.overQuotaWeight},
              {"allocated", detail::gpusJson(queue.allocated)},
              {"overQuota", detail::gpusJson(queue.overQuota)},
              {"fairShare", detail::gpusJson(queue.fairShare)},
              {"pending", detail::gpusJson(queue.pending)},
              {"pendingPods", queue.pendingPods},
              {"runningPods", queue.runningPods}};
}

// Queue trees add "parent" and "depth" (children after their parent is not guaranteed: queues
// keep the config's order), and "priority" when set; flat configs keep their document.
json queueJson(const policy::QueueState& queue) {
  json out = flatQueueJson(queue);
  if (queue.parentIndex >= 0) {
    out["parent"] = queue.quota.parent;
    out["depth"] = queue.depth;
  }
  if (queue.children > 0) out["children"] = queue.children;
  if (queue.quota.priority != 0) out["priority"] = queue.quota.priority;
  return out;
}

}  // namespace

std::string renderSnapshotJson(const policy::ClusterSnapshot& snapshot) {
  json nodes = json::array();
  json pods = json::array();
  for (const auto& node : snapshot.nodes()) {
    nodes.push_back(nodeJson(*node));
    for (const auto& pod : node->pods()) {
      pods.push_back(podJson(*pod, snapshot.isProvisional(pod->uid)));
    }
  }
  json pending = json::array();
  for (const auto& pod : snapshot.pending()) pending.push_back(podJson(*pod, false));
  json queues = json::array();
  for (const auto& queue : snapshot.queues()) queues.push_back(queueJson(queue));

  json document{{"generation", snapshot.generation()},
                {"cluster",
                 {{"nodes", snapshot.nodes().size()},
                  {"capacity", detail::gpusJson(snapshot.capacity())},
                  {"allocated", detail::gpusJson(snapshot.allocated())},
                  {"free", detail::gpusJson(snapshot.free())},
                  {"largestFreeBlock", detail::gpusJson(snapshot.largestFreeBlock())},
                  {"pendingPods", snapshot.pending().size()}}},
                {"nodes", std::move(nodes)},
                {"pods", std::move(pods)},
                {"pending", std::move(pending)},
                {"queues", std::move(queues)}};
  // Names come from the API server or a cluster file; never fail the dump on a bad byte.
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace gpufair::api
