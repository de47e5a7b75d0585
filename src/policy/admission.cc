#include "gpufair/policy/admission.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpufair/common/labels.h"
#include "gpufair/policy/fair_share.h"

namespace gpufair::policy {
namespace {

std::string gpus(MilliGpu m) {
  return formatGpus(m) + (m == kMilliPerGpu ? " GPU" : " GPUs");
}

std::string joined(const std::vector<std::string>& models) {
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : "|") + m;
  return out;
}

std::string cpus(std::int64_t milli) {
  return formatGpus(milli) + " CPUs";  // same thousandths formatting
}

std::string memory(std::int64_t bytes) {
  constexpr double kGi = 1024.0 * 1024.0 * 1024.0;
  const double gi = static_cast<double>(bytes) / kGi;
  std::string text = std::to_string(std::llround(gi * 100) / 100.0);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + "Gi memory";
}

// Reserved GPUs are whole GPUs nobody uses; a pod that does not hold them may not take them.
Status fitsBesideReservations(const NodeState& node, const Pod& pod) {
  const MilliGpu against = node.reservedAgainst(pod);
  if (against == 0) return Status::ok();
  const bool fits = pod.isFractional()
                        ? node.largestPartialFree() >= pod.gpuShare || node.wholeGpusFor(pod) >= 1
                        : node.wholeGpusFor(pod) >= pod.gpuCount();
  if (fits) return Status::ok();
  std::string held;
  int others = 0;
  for (const Reservation& r : node.reservations()) {
    if (isHolder(pod, r.holder)) continue;
    if (held.empty()) {
      held = describe(r);
    } else {
      ++others;
    }
  }
  if (others > 0)
    held += " and " + std::to_string(others) + " more reservation" + (others == 1 ? "" : "s");
  return Status::unschedulable(
      "node " + node.name() + ": " + held + ", of " + std::to_string(node.fullyFreeGpus()) +
      " whole GPUs free; pod needs " +
      (pod.isFractional() ? formatGpus(pod.gpuShare) + " of one GPU" : gpus(pod.gpus)));
}

Status fitsGpus(const NodeState& node, const Pod& pod) {
  if (!pod.allowsModel(node.node().gpuModel)) {
    const std::string has = node.node().gpuModel.empty()
                                ? "no GPU model label (" + std::string(kGpuProductLabel) + ")"
                                : "GPU model " + node.node().gpuModel;
    return Status::unresolvable("node " + node.name() + " has " + has + "; pod allows " +
                                joined(pod.gpuModels));
  }
  if (node.allocatable() < pod.gpus) {
    return Status::unresolvable("node " + node.name() + " has " + gpus(node.allocatable()) +
                                "; pod needs " + gpus(pod.gpus));
  }
  if (node.free() < pod.gpus) {
    // The common refusal, the same words on every such node: kube-scheduler groups FailedNodes by
    // reason ("0/5000 nodes are available: 2331 fewer than 4 GPUs free, ..."), and a request
    // refused on thousands of nodes builds thousands of these.
    return Status::unschedulable("fewer than " + gpus(pod.gpus) + " free");
  }
  if (!node.reservations().empty()) {
    if (Status s = fitsBesideReservations(node, pod); !s.isOk()) return s;
  }
  if (pod.isFractional()) {
    if (node.largestGpuFree() < pod.gpuShare) {
      return Status::unschedulable("node " + node.name() + " has no GPU with " +
                                   formatGpus(pod.gpuShare) + " free (at most " +
                                   formatGpus(node.largestGpuFree()) + " on one GPU); pod needs " +
                                   formatGpus(pod.gpuShare) + " of one GPU");
    }
  } else if (node.fullyFreeGpus() < pod.gpuCount()) {
    return Status::unschedulable(
        "node " + node.name() + " has " + formatGpus(node.free()) + " of " +
        gpus(node.allocatable()) + " free but only " + std::to_string(node.fullyFreeGpus()) +
        " whole (others are shared); pod needs " + std::to_string(pod.gpuCount()) + " whole " +
        (pod.gpuCount() == 1 ? "GPU" : "GPUs"));
  }
  return Status::ok();
}

Status fitsCpuMemory(const NodeState& node, const Pod& pod) {
  const Node& n = node.node();
  if (pod.cpuMilli > 0) {
    if (n.cpuMilli < pod.cpuMilli) {
      return Status::unresolvable("node " + n.name + " has " + cpus(n.cpuMilli) + "; pod needs " +
                                  cpus(pod.cpuMilli));
    }
    if (node.cpuFree() < pod.cpuMilli) {
      return Status::unschedulable("node " + n.name + " has " + formatGpus(node.cpuFree()) +
                                   " of " + cpus(n.cpuMilli) + " free; pod needs " +
                                   cpus(pod.cpuMilli));
    }
  }
  if (pod.memoryBytes > 0) {
    if (n.memoryBytes < pod.memoryBytes) {
      return Status::unresolvable("node " + n.name + " has " + memory(n.memoryBytes) +
                                  "; pod needs " + memory(pod.memoryBytes));
    }
    if (node.memoryFree() < pod.memoryBytes) {
      return Status::unschedulable("node " + n.name + " has " + memory(node.memoryFree()) +
                                   " free of " + memory(n.memoryBytes) + "; pod needs " +
                                   memory(pod.memoryBytes));
    }
  }
  return Status::ok();
}

}  // namespace

namespace {

const QueueState* findIn(std::span<const QueueState> queues, std::string_view name) {
  for (const QueueState& q : queues) {
    if (q.quota.name == name) return &q;
  }
  return nullptr;
}

// The queue decision. `fairShareOf` gives the pod's queue fair share with the pod counted; it is
// asked only for a pod that would borrow. `reserved`: GPUs reserved for the queue's other pods
// and gangs, charged as if they ran.
template <typename FairShareOf>
Admission decide(std::span<const QueueState> queues, MilliGpu free, const Pod& pod,
                 MilliGpu reserved, FairShareOf fairShareOf) {
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
  const QueueState* q = findIn(queues, pod.queue);
  if (q == nullptr) {
    a.status = Status::unresolvable("queue " + pod.queue + " does not exist");
    return a;
  }
  const GpuQuota& quota = q->quota.gpu;
  const MilliGpu charged = q->allocated + reserved;
  const MilliGpu after = charged + pod.gpus;
  if (quota.limit && after > *quota.limit) {
    a.status = Status::unresolvable("queue " + pod.queue + " at " + formatGpus(charged) + "/" +
                                    formatGpus(*quota.limit) + " GPUs (limit); pod needs " +
                                    gpus(pod.gpus));
    return a;
  }
  if (after <= quota.deserved) return a;

  // Borrowing: only up to the queue's fair share, and only from idle GPUs.
  const MilliGpu borrow = std::min(pod.gpus, after - quota.deserved);
  if (quota.overQuotaWeight <= 0) {
    a.status = Status::unschedulable("queue " + pod.queue + " at " + formatGpus(charged) + "/" +
                                     formatGpus(quota.deserved) +
                                     " GPUs (deserved) and its overQuotaWeight is 0: it does not "
                                     "borrow; pod needs " +
                                     gpus(pod.gpus));
    return a;
  }
  if (const MilliGpu fairShare = fairShareOf(*q); after > fairShare) {
    a.status = Status::unschedulable(
        "queue " + pod.queue + " would use " + gpus(after) + "; deserved " +
        formatGpus(quota.deserved) + ", fair share " + formatGpus(fairShare) +
        (quota.limit ? ", limit " + formatGpus(*quota.limit) : std::string(", no limit")));
    return a;
  }
  MilliGpu held = 0;
  std::string heldFor;
  for (const QueueState& other : queues) {
    if (other.quota.name == pod.queue) continue;
    if (MilliGpu unmet = other.unmetDeserved(); unmet > 0) {
      held += unmet;
      heldFor += (heldFor.empty() ? "" : ", ") + other.quota.name + " " + formatGpus(unmet);
    }
  }
  const MilliGpu idle = free > held ? free - held : 0;
  if (borrow > idle) {
    std::string reason = "queue " + pod.queue + " at " + formatGpus(charged) + "/" +
                         formatGpus(quota.deserved) + " GPUs (deserved) would borrow " +
                         gpus(borrow) + " but only " + gpus(idle) + " are idle (" +
                         formatGpus(free) + " free";
    if (held > 0)
      reason += ", " + formatGpus(held) + " held for pending in-quota work of " + heldFor;
    reason += ")";
    a.status = Status::unschedulable(std::move(reason));
    return a;
  }
  a.overQuota = true;
  return a;
}

}  // namespace

Admission admit(const ClusterSnapshot& snapshot, const Pod& pod) {
  const MilliGpu reserved =
      snapshot.reservations().empty() ? 0 : snapshot.reservedInQueue(pod.queue, pod);
  return decide(snapshot.queues(), snapshot.free(), pod, reserved, [&](const QueueState& q) {
    const MilliGpu after = q.allocated + reserved + pod.gpus;
    // The pod can only raise its own queue's share: recompute only when the listed one refuses.
    return after <= q.fairShare ? q.fairShare : fairShareCounting(snapshot, pod);
  });
}

Admission admitAfter(std::span<const QueueState> queues, MilliGpu free, const Pod& pod,
                     MilliGpu fairShare) {
  return decide(queues, free, pod, 0, [&](const QueueState&) { return fairShare; });
}

Status fitsNode(const NodeState& node, const Pod& pod) {
  return fitsNode(node, pod, FitOptions{});
}

Status fitsNode(const NodeState& node, const Pod& pod, const FitOptions& options) {
  if (node.node().deleting)
    return Status::unresolvable("node " + node.name() + " is being deleted");
  if (node.node().unschedulable) {
    return Status::unresolvable("node " + node.name() + " is unschedulable (cordoned)");
  }
  if (pod.gpus > 0) {
    if (Status s = fitsGpus(node, pod); !s.isOk()) return s;
  }
  if (options.checkCpuMemory) return fitsCpuMemory(node, pod);
  return Status::ok();
}

bool nodeFits(const NodeState& node, const Pod& pod, const FitOptions& options) {
  const Node& n = node.node();
  if (!n.takesNewPods()) return false;
  if (pod.gpus > 0) {
    if (!pod.allowsModel(n.gpuModel) || node.allocatable() < pod.gpus || node.free() < pod.gpus) {
      return false;
    }
    if (pod.isFractional() ? node.largestGpuFree() < pod.gpuShare
                           : node.fullyFreeGpus() < pod.gpuCount()) {
      return false;
    }
    if (!node.reservations().empty() && node.reservedAgainst(pod) > 0) {
      if (pod.isFractional()
              ? node.largestPartialFree() < pod.gpuShare && node.wholeGpusFor(pod) < 1
              : node.wholeGpusFor(pod) < pod.gpuCount()) {
        return false;
      }
    }
  }
  if (options.checkCpuMemory) {
    if (pod.cpuMilli > 0 && node.cpuFree() < pod.cpuMilli) return false;
    if (pod.memoryBytes > 0 && node.memoryFree() < pod.memoryBytes) return false;
  }
  return true;
}

}  // namespace gpufair::policy
