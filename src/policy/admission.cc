#include "gpufair/policy/admission.h"

#include <algorithm>

namespace gpufair::policy {
namespace {

std::string gpus(MilliGpu m) {
  return formatGpus(m) + (m == kMilliPerGpu ? " GPU" : " GPUs");
}

}  // namespace

Admission admit(const ClusterSnapshot& snapshot, const Pod& pod) {
  Admission a;
  a.queue = pod.queue;
  if (pod.gpus == 0) return a;
  if (pod.queue.empty()) {
    auto label = pod.labels.find(kQueueLabel);
    const std::string named = label == pod.labels.end() ? "" : label->second;
    a.status = Status::unresolvable("label " + std::string(kQueueLabel) + "=" + named +
                                    " names a queue that does not exist");
    return a;
  }
  const QueueState* q = snapshot.findQueue(pod.queue);
  if (q == nullptr) {
    a.status = Status::unresolvable("queue " + pod.queue + " does not exist");
    return a;
  }
  const GpuQuota& quota = q->quota.gpu;
  const MilliGpu after = q->allocated + pod.gpus;
  if (quota.limit && after > *quota.limit) {
    a.status = Status::unresolvable("queue " + pod.queue + " at " + formatGpus(q->allocated) + "/" +
                                    formatGpus(*quota.limit) + " GPUs (limit); pod needs " +
                                    gpus(pod.gpus));
    return a;
  }
  if (after <= quota.deserved) return a;

  // Borrowing: the part of the request beyond deserved must come from idle GPUs.
  const MilliGpu borrow = std::min(pod.gpus, after - quota.deserved);
  if (quota.overQuotaWeight <= 0) {
    a.status = Status::unschedulable("queue " + pod.queue + " at " + formatGpus(q->allocated) +
                                     "/" + formatGpus(quota.deserved) +
                                     " GPUs (deserved) and its overQuotaWeight is 0: it does not "
                                     "borrow; pod needs " +
                                     gpus(pod.gpus));
    return a;
  }
  MilliGpu held = 0;
  std::string heldFor;
  for (const QueueState& other : snapshot.queues()) {
    if (other.quota.name == pod.queue) continue;
    if (MilliGpu unmet = other.unmetDeserved(); unmet > 0) {
      held += unmet;
      heldFor += (heldFor.empty() ? "" : ", ") + other.quota.name + " " + formatGpus(unmet);
    }
  }
  const MilliGpu idle = snapshot.free() > held ? snapshot.free() - held : 0;
  if (borrow > idle) {
    std::string reason = "queue " + pod.queue + " at " + formatGpus(q->allocated) + "/" +
                         formatGpus(quota.deserved) + " GPUs (deserved) would borrow " +
                         gpus(borrow) + " but only " + gpus(idle) + " are idle (" +
                         formatGpus(snapshot.free()) + " free";
    if (held > 0)
      reason += ", " + formatGpus(held) + " held for pending in-quota work of " + heldFor;
    reason += ")";
    a.status = Status::unschedulable(std::move(reason));
    return a;
  }
  a.overQuota = true;
  return a;
}

Status fitsNode(const NodeState& node, const Pod& pod) {
  if (node.node().deleting)
    return Status::unresolvable("node " + node.name() + " is being deleted");
  if (node.node().unschedulable) {
    return Status::unresolvable("node " + node.name() + " is unschedulable (cordoned)");
  }
  if (pod.gpus == 0) return Status::ok();
  if (node.allocatable() < pod.gpus) {
    return Status::unresolvable("node " + node.name() + " has " + gpus(node.allocatable()) +
                                "; pod needs " + gpus(pod.gpus));
  }
  if (node.free() < pod.gpus) {
    return Status::unschedulable("node " + node.name() + " has " + formatGpus(node.free()) +
                                 " of " + gpus(node.allocatable()) + " free; pod needs " +
                                 gpus(pod.gpus));
  }
  return Status::ok();
}

}  // namespace gpufair::policy
