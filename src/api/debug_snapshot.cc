#include "gpufair/api/debug_snapshot.h"

#include <nlohmann/json.hpp>

namespace gpufair::api {
namespace {

using nlohmann::json;

json gpus(MilliGpu milli) {
  if (milli % kMilliPerGpu == 0) return json(milli / kMilliPerGpu);
  return json(static_cast<double>(milli) / static_cast<double>(kMilliPerGpu));
}

json podJson(const policy::Pod& pod) {
  return json{{"namespace", pod.ns},
              {"name", pod.name},
              {"uid", pod.uid},
              {"node", pod.nodeName},
              {"queue", pod.queue},
              {"gpus", gpus(pod.gpus)},
              {"phase", policy::phaseName(pod.phase)},
              {"overQuota", pod.overQuota},
              {"assumed", pod.assumed},
              {"terminating", pod.terminating}};
}

json nodeJson(const policy::NodeState& state) {
  json pods = json::array();
  for (const auto& pod : state.pods()) pods.push_back(pod->key());
  return json{{"name", state.name()},
              {"allocatable", gpus(state.allocatable())},
              {"used", gpus(state.used())},
              {"free", gpus(state.free())},
              {"unschedulable", state.node().unschedulable},
              {"deleting", state.node().deleting},
              {"pods", std::move(pods)}};
}

json queueJson(const policy::QueueState& queue) {
  const auto& quota = queue.quota.gpu;
  return json{{"name", queue.quota.name},
              {"deserved", gpus(quota.deserved)},
              {"limit", quota.limit ? gpus(*quota.limit) : json(nullptr)},
              {"overQuotaWeight", quota.overQuotaWeight},
              {"allocated", gpus(queue.allocated)},
              {"overQuota", gpus(queue.overQuota)},
              {"fairShare", gpus(queue.fairShare)},
              {"pending", gpus(queue.pending)},
              {"pendingPods", queue.pendingPods},
              {"runningPods", queue.runningPods}};
}

}  // namespace

std::string renderSnapshotJson(const policy::ClusterSnapshot& snapshot) {
  json nodes = json::array();
  json pods = json::array();
  for (const auto& node : snapshot.nodes()) {
    nodes.push_back(nodeJson(*node));
    for (const auto& pod : node->pods()) pods.push_back(podJson(*pod));
  }
  json pending = json::array();
  for (const auto& pod : snapshot.pending()) pending.push_back(podJson(*pod));
  json queues = json::array();
  for (const auto& queue : snapshot.queues()) queues.push_back(queueJson(queue));

  json document{{"generation", snapshot.generation()},
                {"cluster",
                 {{"nodes", snapshot.nodes().size()},
                  {"capacity", gpus(snapshot.capacity())},
                  {"allocated", gpus(snapshot.allocated())},
                  {"free", gpus(snapshot.free())},
                  {"largestFreeBlock", gpus(snapshot.largestFreeBlock())},
                  {"pendingPods", snapshot.pending().size()}}},
                {"nodes", std::move(nodes)},
                {"pods", std::move(pods)},
                {"pending", std::move(pending)},
                {"queues", std::move(queues)}};
  // Names come from the API server or a cluster file; never fail the dump on a bad byte.
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace gpufair::api
