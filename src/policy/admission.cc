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

int indexIn(std::span<const QueueState> queues, std::string_view name) {
  for (std::size_t i = 0; i < queues.size(); ++i) {
    if (queues[i].quota.name == name) return static_cast<int>(i);
  }
  return -1;
}

// ", parent of team-a" / ", parent of physics, above team-a": which level of the pod's queue tree
// a reason is about (lineage[k]; k = 0 is the pod's own queue).
std::string levelOf(std::span<const QueueState> queues, const std::vector<int>& lineage,
                    std::size_t k) {
  if (k == 0) return "";
  auto name = [&](std::size_t at) {
    return queues[static_cast<std::size_t>(lineage[at])].quota.name;
  };
  return ", parent of " + name(k - 1) + (k == 1 ? "" : ", above " + name(0));
}

// The index of the pod's queue, which must exist and be a leaf; -1 with the refusal in `a`.
int leafQueue(std::span<const QueueState> queues, const Pod& pod, Admission& a) {
  if (pod.queue.empty()) {
    auto label = pod.labels.find(kQueueLabel);
    const std::string named = label == pod.labels.end() ? "" : label->second;
    a.status = Status::unresolvable("label " + std::string(kQueueLabel) + "=" + named +
                                    " names a queue that does not exist");
    return -1;
  }
  const int own = indexIn(queues, pod.queue);
  if (own < 0) {
    a.status = Status::unresolvable("queue " + pod.queue + " does not exist");
    a.level = pod.queue;
    return -1;
  }
  const QueueState& q = queues[static_cast<std::size_t>(own)];
  if (q.children > 0) {
    a.status = Status::unresolvable(
        "queue " + pod.queue + " is a parent queue (of " + std::to_string(q.children) +
        (q.children == 1 ? " queue" : " queues") + "): pods run in its child queues");
    a.level = pod.queue;
    return -1;
  }
  return own;
}

// Borrowing takes only idle GPUs: free GPUs less the unmet in-quota demand of the other leaf
// queues. `charged`: what the pod's queue holds (with its reservations) before the pod.
Status idleFor(std::span<const QueueState> queues, MilliGpu free, const Pod& pod, MilliGpu charged,
               MilliGpu borrow) {
  MilliGpu held = 0;
  std::string heldFor;
  for (const QueueState& other : queues) {
    if (other.quota.name == pod.queue || other.children > 0) continue;
    if (MilliGpu unmet = other.unmetDeserved(); unmet > 0) {
      held += unmet;
      heldFor += (heldFor.empty() ? "" : ", ") + other.quota.name + " " + formatGpus(unmet);
    }
  }
  const MilliGpu idle = free > held ? free - held : 0;
  if (borrow <= idle) return Status::ok();
  const QueueState* q = findIn(queues, pod.queue);
  std::string reason = "queue " + pod.queue + " at " + formatGpus(charged) + "/" +
                       formatGpus(q->quota.gpu.deserved) + " GPUs (deserved) would borrow " +
                       gpus(borrow) + " but only " + gpus(idle) + " are idle (" + formatGpus(free) +
                       " free";
  if (held > 0) reason += ", " + formatGpus(held) + " held for pending in-quota work of " + heldFor;
  return Status::unschedulable(reason + ")");
}

// The queue decision, level by level up the queue tree (a flat config has one level). `reservedAt`
// gives the GPUs reserved for a queue's (subtree's) other pods and gangs, charged as if they ran;
// `fairShareOf` a queue's fair share with the pod counted, asked only where the pod would borrow.
template <typename ReservedAt, typename FairShareOf>
Admission decide(std::span<const QueueState> queues, MilliGpu free, const Pod& pod,
                 ReservedAt reservedAt, FairShareOf fairShareOf) {
  Admission a;
  a.queue = pod.queue;
  if (pod.gpus == 0) return a;
  const int own = leafQueue(queues, pod, a);
  if (own < 0) return a;
  const QueueState* q = &queues[static_cast<std::size_t>(own)];
  const std::vector<int> lineage = queueLineage(queues, own);
  for (std::size_t k = 0; k < lineage.size(); ++k) {
    const QueueState& level = queues[static_cast<std::size_t>(lineage[k])];
    const MilliGpu charged = level.allocated + reservedAt(lineage[k]);
    if (level.quota.gpu.limit && charged + pod.gpus > *level.quota.gpu.limit) {
      a.status =
          Status::unresolvable("queue " + level.quota.name + " at " + formatGpus(charged) + "/" +
                               formatGpus(*level.quota.gpu.limit) + " GPUs (limit)" +
                               levelOf(queues, lineage, k) + "; pod needs " + gpus(pod.gpus));
      a.level = level.quota.name;
      return a;
    }
  }
  const GpuQuota& quota = q->quota.gpu;
  const MilliGpu charged = q->allocated + reservedAt(own);
  const MilliGpu after = charged + pod.gpus;
  if (after <= quota.deserved) return a;

  // Borrowing: only up to the fair share of the queue and of every ancestor, and only from idle
  // GPUs.
  const MilliGpu borrow = std::min(pod.gpus, after - quota.deserved);
  if (quota.overQuotaWeight <= 0) {
    a.status = Status::unschedulable("queue " + pod.queue + " at " + formatGpus(charged) + "/" +
                                     formatGpus(quota.deserved) +
                                     " GPUs (deserved) and its overQuotaWeight is 0: it does not "
                                     "borrow; pod needs " +
                                     gpus(pod.gpus));
    a.level = pod.queue;
    return a;
  }
  for (std::size_t k = 0; k < lineage.size(); ++k) {
    const QueueState& level = queues[static_cast<std::size_t>(lineage[k])];
    const GpuQuota& lq = level.quota.gpu;
    const MilliGpu levelAfter = level.allocated + reservedAt(lineage[k]) + pod.gpus;
    if (k > 0 && levelAfter <= lq.deserved) continue;
    if (const MilliGpu fairShare = fairShareOf(lineage[k]); levelAfter > fairShare) {
      a.status = Status::unschedulable(
          "queue " + level.quota.name + " would use " + gpus(levelAfter) + "; deserved " +
          formatGpus(lq.deserved) + ", fair share " + formatGpus(fairShare) +
          (lq.limit ? ", limit " + formatGpus(*lq.limit) : std::string(", no limit")) +
          levelOf(queues, lineage, k));
      a.level = level.quota.name;
      return a;
    }
  }
  if (Status idle = idleFor(queues, free, pod, charged, borrow); !idle.isOk()) {
    a.status = std::move(idle);
    a.level = pod.queue;
    return a;
  }
  a.overQuota = true;
  return a;
}

}  // namespace

Admission admit(const ClusterSnapshot& snapshot, const Pod& pod) {
  const auto queues = snapshot.queues();
  const bool anyReserved = !snapshot.reservations().empty();
  const bool flat = std::all_of(queues.begin(), queues.end(),
                                [](const QueueState& q) { return q.parentIndex < 0; });
  auto reservedAt = [&](int queue) -> MilliGpu {
    if (!anyReserved) return 0;
    const std::string& name = queues[static_cast<std::size_t>(queue)].quota.name;
    if (flat || queues[static_cast<std::size_t>(queue)].children == 0)
      return snapshot.reservedInQueue(name, pod);
    MilliGpu sum = 0;  // a parent: reservations of every queue in its subtree
    for (std::size_t i = 0; i < queues.size(); ++i) {
      if (queues[i].children > 0) continue;
      const auto up = queueLineage(queues, static_cast<int>(i));
      if (std::find(up.begin(), up.end(), queue) != up.end())
        sum += snapshot.reservedInQueue(queues[i].quota.name, pod);
    }
    return sum;
  };
  std::vector<MilliGpu> counted;  // every queue's share with the pod counted, when needed
  return decide(queues, snapshot.free(), pod, reservedAt, [&](int queue) {
    const QueueState& q = queues[static_cast<std::size_t>(queue)];
    const MilliGpu after = q.allocated + reservedAt(queue) + pod.gpus;
    // The pod can only raise its own queues' shares: recompute only when the listed one refuses.
    if (after <= q.fairShare) return q.fairShare;
    if (counted.empty()) counted = fairSharesCounting(snapshot, pod);
    return counted[static_cast<std::size_t>(queue)];
  });
}

Admission admitAfter(std::span<const QueueState> queues, MilliGpu free, const Pod& pod,
                     MilliGpu fairShare) {
  const int own = indexIn(queues, pod.queue);
  return decide(
      queues, free, pod, [](int) -> MilliGpu { return 0; },
      [&](int queue) {
        return queue == own ? fairShare : queues[static_cast<std::size_t>(queue)].fairShare;
      });
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
