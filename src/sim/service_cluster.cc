#include "gpufair/sim/service_cluster.h"

#include "gpufair/common/labels.h"

namespace gpufair::sim {
namespace {

// One queue holding the whole cluster: admission on, nobody borrows.
QuotaConfig oneQueue(const Scenario& scenario) {
  QuotaConfig quota;
  quota.defaultQueue.gpu.deserved = scenario.gpuCapacity();
  return quota;
}

}  // namespace

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string queueFor(const QuotaConfig& quota, std::string_view name) {
  if (quota.queues.empty()) return "";
  return quota.queues[fnv1a(name) % quota.queues.size()].name;
}

ServiceCluster::ServiceCluster(const Scenario& scenario,
                               std::shared_ptr<const policy::Scorer> scorer,
                               std::vector<std::size_t> candidateOrder,
                               const ServiceClusterOptions& options)
    : scenario_(scenario),
      scorer_(std::move(scorer)),
      order_(std::move(candidateOrder)),
      quota_(options.queues ? *options.queues : oneQueue(scenario)),
      mirror_(clock_, options.mirror),
      service_(mirror_, *scorer_, binder_),
      bypassCpuOnly_(options.cpuOnlyPodsBypassExtender),
      random_(options.mirror.seed) {
  // As serve wires them (serve_runner.cc): /bind picks a fractional pod's GPU as the scorer would.
  mirror_.setScorer(scorer_);
  service_.setFilterMode(options.filterMode);
  if (options.workload) mirror_.setWorkload(options.workload);
  mirror_.setQuotaConfig(quota_);
  const std::size_t n = scenario.nodes.size();
  cpuFree_.resize(n);
  memoryFree_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const policy::Node& node = scenario.nodes[i];
    index_.emplace(node.name, i);
    cpuFree_[i] = node.cpuMilli;
    memoryFree_[i] = node.memoryBytes;
    mirror_.upsertNode(node);
  }
  for (const policy::Pod& pod : scenario.running) {
    auto it = index_.find(pod.nodeName);
    if (it == index_.end()) continue;  // the scenario loader rejects these
    cpuFree_[it->second] -= pod.cpuMilli;
    memoryFree_[it->second] -= pod.memoryBytes;
    held_.emplace(pod.uid, Held{it->second, pod.cpuMilli, pod.memoryBytes});
    mirror_.upsertPod(pod);
  }
}

void ServiceCluster::candidatesFor(const policy::Pod& pod) {
  args_.candidates.clear();
  for (std::size_t i : order_) {
    if (cpuFree_[i] < pod.cpuMilli || memoryFree_[i] < pod.memoryBytes) continue;
    args_.candidates.push_back(scenario_.nodes[i].name);
  }
}

int ServiceCluster::pickBest(const std::vector<policy::NodeScore>& scores) const {
  const policy::NodeScore* best = nullptr;
  for (const auto& s : scores) {
    if (best == nullptr || s.score > best->score) best = &s;
  }
  return best == nullptr ? -1 : static_cast<int>(index_.at(best->node));
}

ServiceCluster::Placement ServiceCluster::bindWithoutExtender(policy::Pod pod) {
  Placement out;
  candidatesFor(pod);
  if (args_.candidates.empty()) {
    out.reason = "no node has the CPU and memory";
    return out;
  }
  std::uniform_int_distribution<std::size_t> pick(0, args_.candidates.size() - 1);
  const std::size_t i = index_.at(args_.candidates[pick(random_)]);
  pod.nodeName = scenario_.nodes[i].name;
  pod.phase = policy::PodPhase::kRunning;
  cpuFree_[i] -= pod.cpuMilli;
  memoryFree_[i] -= pod.memoryBytes;
  held_[pod.uid] = Held{i, pod.cpuMilli, pod.memoryBytes};
  mirror_.upsertPod(std::move(pod));
  out.node = static_cast<int>(i);
  return out;
}

ServiceCluster::Placement ServiceCluster::schedule(policy::Pod pod) {
  if (bypassCpuOnly_ && pod.gpus == 0) return bindWithoutExtender(std::move(pod));
  Placement out;
  if (const std::string queue = queueFor(quota_, pod.name);
      !queue.empty() && pod.labels.count(kQueueLabel) == 0)
    pod.labels[kQueueLabel] = queue;
  args_.pod = std::move(pod);
  candidatesFor(args_.pod);
  if (args_.candidates.empty()) {
    mirror_.notePending(args_.pod);  // kube-scheduler never calls the extender: still demand
    out.reason = "no node has the CPU and memory";
    return out;
  }
  const policy::FilterResult filtered = service_.filterArgs(args_);
  int node = -1;
  if (filtered.feasible.size() == 1) {
    node = static_cast<int>(index_.at(filtered.feasible.front()));
  } else if (filtered.feasible.size() > 1) {
    std::vector<std::string_view> feasible(filtered.feasible);
    args_.candidates = std::move(feasible);
    node = pickBest(service_.prioritizeArgs(args_));
  } else {
    out.reason = filtered.admission.status.isOk()
                     ? (filtered.failed.empty() ? std::string("no node fits")
                                                : filtered.failed.front().reason)
                     : filtered.admission.status.reason();
    return out;
  }
  const policy::Pod& offered = args_.pod;
  const std::string error =
      service_.bindArgs({offered.name, offered.ns, offered.uid,
                         scenario_.nodes[static_cast<std::size_t>(node)].name});
  if (!error.empty()) {
    out.reason = "bind: " + error;
    return out;
  }
  const std::size_t i = static_cast<std::size_t>(node);
  cpuFree_[i] -= offered.cpuMilli;
  memoryFree_[i] -= offered.memoryBytes;
  held_[offered.uid] = Held{i, offered.cpuMilli, offered.memoryBytes};
  out.node = node;
  if (const policy::PodPtr placed = mirror_.findPod(offered.uid)) {
    out.gpuIndex = placed->gpuIndex;
    out.overQuota = placed->overQuota;
  }
  return out;
}

void ServiceCluster::remove(const std::string& uid) {
  if (auto it = held_.find(uid); it != held_.end()) {
    cpuFree_[it->second.node] += it->second.cpuMilli;
    memoryFree_[it->second.node] += it->second.memoryBytes;
    held_.erase(it);
  }
  mirror_.deletePod(uid);
}

}  // namespace gpufair::sim
