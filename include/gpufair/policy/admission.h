// Quota admission: may this pod's queue take `pod.gpus` more GPUs now?
//   within deserved            -> admitted;
//   beyond limit               -> UnschedulableAndUnresolvable (no node can help);
//   between deserved and limit -> admitted as borrowed (over quota) only while the queue stays
//                                 within its fair share (allocated + pod <= fair share, see
//                                 fair_share.h) and idle GPUs exist: free GPUs not needed by
//                                 other queues' unmet in-quota demand. Both refusals are
//                                 Unschedulable ("queue team-a would use 24 GPUs; deserved 20,
//                                 fair share 22, limit 30").
// Queue trees (QueueState::parentIndex): the pod's queue must be a leaf (a parent queue takes no
// pods: UnschedulableAndUnresolvable); every ancestor's limit caps the pod like its own queue's
// (the reason names the level: "queue research at 30/30 GPUs (limit), parent of team-a"); a pod
// that borrows must also stay within the fair share of every ancestor that would be above its
// deserved; idle GPUs are free GPUs less the unmet in-quota demand of the other leaf queues.
// Pure: reads the snapshot only.
#pragma once

#include <span>

#include "gpufair/common/status.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

struct Admission {
  Status status;  // Success, Unschedulable or UnschedulableAndUnresolvable, with the reason
  bool overQuota = false;  // admitted as borrowed
  std::string queue;       // the queue charged
  std::string level;       // refused: the queue of the tree that refused (the pod's or an ancestor)
};

// The pod is assumed not yet counted in its queue's allocation (it is pending). Its queue's fair
// share counts the pod's demand (fairShareCounting), whether or not the snapshot lists it pending.
// GPUs reserved for the queue's other pods and gangs (ClusterSnapshot::reservedInQueue) are charged
// as if they ran; the pod's own reservations are not.
Admission admit(const ClusterSnapshot& snapshot, const Pod& pod);

// The same decision for what-if plans (preemption, reclaim) that change allocations on a copy:
// `queues` as they would be after the plan, `free` the GPUs then free on nodes taking new pods,
// `fairShare` the pod's queue fair share with the pod counted (fairShareCounting; evicted pods
// usually come back as pending demand, so shares stay as the snapshot has them). Reservations are
// not charged: `queues` are what the caller made of them.
Admission admitAfter(std::span<const QueueState> queues, MilliGpu free, const Pod& pod,
                     MilliGpu fairShare);

// Node-level fit: the node takes new pods, has a GPU model the pod allows, and has room: a
// whole-GPU pod needs gpuCount() GPUs nobody uses; a fractional pod needs one GPU with its share
// free. With options.checkCpuMemory, also the pod's CPU and memory requests must fit in what is
// free. (For whole-GPU pods on nodes without fractional pods this is "pod.gpus free".)
Status fitsNode(const NodeState& node, const Pod& pod);
Status fitsNode(const NodeState& node, const Pod& pod, const FitOptions& options);
// The same decision without the reason (no allocation): for hot loops such as simulation.
bool nodeFits(const NodeState& node, const Pod& pod, const FitOptions& options = {});

}  // namespace gpufair::policy
