#include "gpufair/api/request_observer.h"

namespace gpufair::api {
namespace {

std::string_view admissionCategory(const policy::ClusterSnapshot& snapshot,
                                   const policy::Pod& pod) {
  const policy::QueueState* queue = pod.queue.empty() ? nullptr : snapshot.findQueue(pod.queue);
  if (queue == nullptr) return "unknown_queue";
  // The queue's limit, or an ancestor's (a queue tree), refused it.
  const auto queues = snapshot.queues();
  for (int level : policy::queueLineage(queues, static_cast<int>(queue - queues.data()))) {
    const policy::QueueState& q = queues[static_cast<std::size_t>(level)];
    const auto& limit = q.quota.gpu.limit;
    if (limit && q.allocated + pod.gpus > *limit) return "quota_limit";
  }
  if (queue->children > 0) return "unknown_queue";  // a parent queue takes no pods
  return "quota_borrow";
}

std::string_view nodeCategory(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                              std::string_view name) {
  const policy::NodeState* node = snapshot.findNode(name);
  if (node == nullptr) return "unknown_node";
  if (!node->node().takesNewPods()) return "cordoned";
  if (pod.gpus > 0) {
    if (!pod.allowsModel(node->node().gpuModel)) return "gpu_model";
    const bool room =
        node->free() >= pod.gpus && (pod.isFractional() ? node->largestGpuFree() >= pod.gpuShare
                                                        : node->fullyFreeGpus() >= pod.gpuCount());
    if (!room) return "insufficient_gpus";
    // Room, but held for a reclaimer or a gang (whole GPUs): the reservation refused it.
    const MilliGpu held = node->reservedAgainst(pod);
    if (held > 0) {
      const auto heldGpus = static_cast<int>((held + kMilliPerGpu - 1) / kMilliPerGpu);
      // (For a share of one GPU the milli count is the test: which GPU it would take is the
      // filter's business; this only names the category.)
      const bool roomLeft =
          node->free() - held >= pod.gpus &&
          (pod.isFractional() || node->fullyFreeGpus() - heldGpus >= pod.gpuCount());
      if (!roomLeft) return "reserved";
    }
    if (pod.inGang()) return "gang";  // steered to its gang's reserved nodes, or the gang waits
  }
  if (snapshot.fitOptions().checkCpuMemory &&
      ((pod.cpuMilli > 0 && node->cpuFree() < pod.cpuMilli) ||
       (pod.memoryBytes > 0 && node->memoryFree() < pod.memoryBytes))) {
    return "cpu_memory";
  }
  return "other";
}

}  // namespace

std::string_view rejectionCategory(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                                   const policy::FilterResult& result) {
  if (!pod.gangError.empty()) return "gang";  // refused everywhere with that reason
  if (!result.admission.status.isOk()) return admissionCategory(snapshot, pod);
  if (!result.unresolvable.empty()) {
    return nodeCategory(snapshot, pod, result.unresolvable.front().node);
  }
  if (!result.failed.empty()) return nodeCategory(snapshot, pod, result.failed.front().node);
  return "other";
}

std::string_view resultLabel(int httpStatus) {
  if (httpStatus >= 200 && httpStatus < 300) return "ok";
  switch (httpStatus) {
    case 400:
      return "bad_request";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 503:
      return "unavailable";
    default:
      return "error";
  }
}

}  // namespace gpufair::api
