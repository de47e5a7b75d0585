#include "gpufair/state/mirror.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace gpufair::state {
namespace {

std::string keyOf(const policy::Pod& pod) {
  return pod.uid.empty() ? pod.ns + "/" + pod.name : pod.uid;
}

bool isPendingDemand(const policy::Pod& pod) {
  return pod.nodeName.empty() && pod.gpus > 0 && !pod.isFinished() && !pod.terminating;
}

void eraseGangMember(std::unordered_map<std::string, std::set<std::string>>& gangs,
                     const std::string& gang, const std::string& uid) {
  auto it = gangs.find(gang);
  if (it == gangs.end()) return;
  it->second.erase(uid);
  if (it->second.empty()) gangs.erase(it);
}

}  // namespace

Mirror::Mirror(ClockPtr clock, MirrorOptions options)
    : clock_(std::move(clock)), options_(options), learned_(options.workloadDecay) {}

void Mirror::setScorer(std::shared_ptr<const policy::Scorer> scorer) {
  std::lock_guard lock(mu_);
  scorer_ = std::move(scorer);
}

void Mirror::setWorkload(policy::WorkloadPtr workload) {
  std::lock_guard lock(mu_);
  fixedWorkload_ = std::move(workload);
  workloadDirty_ = true;
}

void Mirror::observeLocked(const policy::Pod& pod) {
  if (pod.gpus <= 0 || pod.isFinished()) return;
  learned_.observe(pod);
  if (!fixedWorkload_) workloadDirty_ = true;
}

void Mirror::upsertNode(policy::Node node) {
  std::lock_guard lock(mu_);
  dirty_.insert(node.name);
  std::string name = node.name;
  nodes_.insert_or_assign(std::move(name), std::move(node));
}

void Mirror::deleteNode(std::string_view name) {
  std::lock_guard lock(mu_);
  std::string key(name);
  if (nodes_.erase(key) > 0) dirty_.insert(std::move(key));
}

void Mirror::markLocked(const policy::Pod& pod) {
  if (!pod.nodeName.empty()) {
    dirty_.insert(pod.nodeName);
  } else {
    pendingDirty_ = true;
  }
}

void Mirror::storeLocked(policy::PodPtr pod, Timestamp seen, bool fromApi) {
  const std::string key = keyOf(*pod);
  auto it = pods_.find(key);
  if (it != pods_.end()) {
    const policy::Pod& old = *it->second.pod;
    markLocked(old);
    if (!old.nodeName.empty() && old.nodeName != pod->nodeName) {
      auto on = podsOnNode_.find(old.nodeName);
      if (on != podsOnNode_.end()) {
        on->second.erase(key);
        if (on->second.empty()) podsOnNode_.erase(on);
      }
    }
  }
  if (it != pods_.end() && it->second.pod->inGang()) {
    const std::string gang = it->second.pod->gangKey();
    if (!pod->inGang() || pod->gangKey() != gang) eraseGangMember(gangMembers_, gang, key);
  }
  if (pod->inGang()) gangMembers_[pod->gangKey()].insert(key);
  markLocked(*pod);
  if (!pod->nodeName.empty()) podsOnNode_[pod->nodeName].insert(key);
  if (isPendingDemand(*pod)) {
    pendingSet_[key] = pod;
  } else {
    pendingSet_.erase(key);
  }
  Entry& e = pods_[key];
  e.pod = std::move(pod);
  e.seen = seen;
  e.fromApi = e.fromApi || fromApi;
}

void Mirror::removeLocked(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  const policy::Pod& old = *it->second.pod;
  markLocked(old);
  if (!old.nodeName.empty()) {
    auto on = podsOnNode_.find(old.nodeName);
    if (on != podsOnNode_.end()) {
      on->second.erase(uid);
      if (on->second.empty()) podsOnNode_.erase(on);
    }
  }
  if (old.inGang()) eraseGangMember(gangMembers_, old.gangKey(), uid);
  pendingSet_.erase(uid);
  pods_.erase(it);
}

void Mirror::upsertPod(policy::Pod pod) {
  std::lock_guard lock(mu_);
  upsertPodLocked(std::move(pod), clock_->now());
  settleReservationsLocked();
}

void Mirror::upsertPodLocked(policy::Pod pod, Timestamp now) {
  if (pod.uid.empty()) pod.uid = keyOf(pod);
  pod.queue = policy::resolveQueue(quota_, pod.ns, pod.labels);
  policy::applyGangLabels(pod);
  pod.assumed = false;
  auto it = pods_.find(pod.uid);
  if (it == pods_.end()) observeLocked(pod);
  if (it != pods_.end()) {
    const policy::Pod& old = *it->second.pod;
    if (old.gpuIndex >= 0 && pod.gpuIndex < 0 && pod.isFractional() && !old.nodeName.empty() &&
        (pod.nodeName == old.nodeName || (pod.nodeName.empty() && old.assumed))) {
      // The GPU we gave it at bind, until the annotation written by the binder shows up.
      pod.gpuIndex = old.gpuIndex;
      pod.annotations[policy::kGpuIndexAnnotation] = std::to_string(old.gpuIndex);
    }
    if (old.assumed) {
      if (pod.nodeName.empty() && !pod.isFinished()) {
        // The API server has not caught up with our binding yet: keep holding the GPUs.
        pod.nodeName = old.nodeName;
        pod.assumed = true;
      }
      // Our admission decision stands until the label written at bind shows up.
      if (pod.nodeName == old.nodeName) pod.overQuota = pod.overQuota || old.overQuota;
    }
  }
  auto stored = std::make_shared<const policy::Pod>(std::move(pod));
  storeLocked(stored, now, true);
  if (!reservations_.empty()) takeReservationsLocked(*stored);
}

void Mirror::replaceNodes(std::vector<policy::Node> nodes) {
  std::lock_guard lock(mu_);
  std::unordered_map<std::string, policy::Node> next;
  next.reserve(nodes.size());
  for (auto& n : nodes) {
    std::string name = n.name;
    next.insert_or_assign(std::move(name), std::move(n));
  }
  nodes_ = std::move(next);
  allDirty_ = true;
}

void Mirror::replacePods(std::vector<policy::Pod> pods) {
  std::lock_guard lock(mu_);
  const Timestamp now = clock_->now();
  std::unordered_set<std::string> listed;
  listed.reserve(pods.size());
  for (auto& p : pods) {
    if (p.uid.empty()) p.uid = keyOf(p);
    listed.insert(p.uid);
  }
  std::vector<std::string> gone;
  for (const auto& [uid, entry] : pods_) {
    if (entry.fromApi && listed.count(uid) == 0) gone.push_back(uid);
  }
  for (const auto& uid : gone) removeLocked(uid);
  for (auto& p : pods) upsertPodLocked(std::move(p), now);
  settleReservationsLocked();
}

void Mirror::deletePod(std::string_view uid) {
  std::lock_guard lock(mu_);
  removeLocked(std::string(uid));
  settleReservationsLocked();
}

void Mirror::setQuotaConfig(QuotaConfig config) {
  std::lock_guard lock(mu_);
  quota_ = std::move(config);
  for (auto& [uid, entry] : pods_) {
    std::string queue = policy::resolveQueue(quota_, entry.pod->ns, entry.pod->labels);
    if (queue != entry.pod->queue) {
      auto copy = std::make_shared<policy::Pod>(*entry.pod);
      copy->queue = std::move(queue);
      entry.pod = std::move(copy);
    }
  }
  allDirty_ = true;
  pendingDirty_ = true;
}

QuotaConfig Mirror::quotaConfig() const {
  std::lock_guard lock(mu_);
  return quota_;
}

void Mirror::notePending(policy::Pod pod) {
  std::lock_guard lock(mu_);
  if (pod.uid.empty()) pod.uid = keyOf(pod);
  const Timestamp now = clock_->now();
  if (auto it = pods_.find(pod.uid); it != pods_.end()) {
    const policy::Pod& known = *it->second.pod;
    if (!known.nodeName.empty() || it->second.fromApi) {
      if (known.nodeName.empty()) it->second.seen = now;
      return;  // bound, assumed, or known from the API server, which is the better source
    }
    // kube-scheduler offers a pending pod to /filter and /prioritize over and over: when nothing
    // that matters changed, only note that it is still wanted (no new snapshot).
    if (known.gpus == pod.gpus && known.gpuShare == pod.gpuShare &&
        known.cpuMilli == pod.cpuMilli && known.memoryBytes == pod.memoryBytes &&
        known.labels == pod.labels && known.phase == pod.phase &&
        known.terminating == pod.terminating && known.annotations == pod.annotations) {
      it->second.seen = now;
      return;
    }
  }
  pod.queue = policy::resolveQueue(quota_, pod.ns, pod.labels);
  policy::applyGangLabels(pod);
  pod.nodeName.clear();
  pod.assumed = false;
  if (pods_.find(pod.uid) == pods_.end()) observeLocked(pod);
  storeLocked(std::make_shared<const policy::Pod>(std::move(pod)), now, false);
}

policy::PodPtr Mirror::findPod(std::string_view uid) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(std::string(uid));
  return it == pods_.end() ? nullptr : it->second.pod;
}

Result<AssumeOutcome> Mirror::assume(std::string_view uid, std::string_view node) {
  std::lock_guard lock(mu_);
  return assumeLocked(uid, node, scorer_.get());
}

Result<AssumeOutcome> Mirror::assume(std::string_view uid, std::string_view node,
                                     const policy::Scorer& scorer) {
  std::lock_guard lock(mu_);
  return assumeLocked(uid, node, &scorer);
}

Result<AssumeOutcome> Mirror::assumeLocked(std::string_view uid, std::string_view node,
                                           const policy::Scorer* scorer) {
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) {
    return Result<AssumeOutcome>::failure("pod with uid " + std::string(uid) +
                                          " was never offered to gpufair");
  }
  const policy::Pod& pod = *it->second.pod;
  if (!pod.nodeName.empty()) {
    if (pod.nodeName == node) {
      return AssumeOutcome{pod.nodeName, pod.overQuota, pod.queue, pod.gpuIndex};
    }
    return Result<AssumeOutcome>::failure("pod " + pod.key() + " is already bound to node " +
                                          pod.nodeName);
  }
  if (pod.isFinished()) {
    return Result<AssumeOutcome>::failure("pod " + pod.key() + " has already finished");
  }
  const policy::SnapshotPtr snap = rebuildLocked();
  const policy::NodeState* target = snap->findNode(node);
  if (target == nullptr) {
    return Result<AssumeOutcome>::failure("node " + std::string(node) + " is not known to gpufair");
  }
  if (Status fit = policy::fitsNode(*target, pod, snap->fitOptions()); !fit.isOk()) {
    return Result<AssumeOutcome>::failure("pod " + pod.key() + " no longer fits on node " +
                                          std::string(node) + ": " + fit.reason());
  }
  const policy::Admission admission = policy::admit(*snap, pod);
  // A gang's quota was charged for all its members when its GPUs were reserved.
  const bool reservedHere = pod.inGang() && target->reservedFor(pod) > 0;
  if (!admission.status.isOk() && !reservedHere) {
    return Result<AssumeOutcome>::failure("pod " + pod.key() +
                                          " is not admitted: " + admission.status.reason());
  }
  int gpuIndex = -1;
  if (pod.isFractional()) {
    gpuIndex = scorer != nullptr ? scorer->chooseGpu(*snap, pod, *target) : -1;
    if (gpuIndex < 0 || gpuIndex >= target->gpuCount() ||
        target->gpuFree(gpuIndex) < pod.gpuShare) {
      gpuIndex = target->bestFitGpu(pod.gpuShare);
    }
  }
  auto placed = std::make_shared<policy::Pod>(pod);
  placed->nodeName = std::string(node);
  placed->gpuIndex = gpuIndex;
  if (gpuIndex >= 0) placed->annotations[policy::kGpuIndexAnnotation] = std::to_string(gpuIndex);
  placed->assumed = true;
  placed->overQuota = admission.overQuota;
  if (admission.overQuota) placed->labels[policy::kOverQuotaLabel] = "true";
  const bool fromApi = it->second.fromApi;
  storeLocked(placed, clock_->now(), fromApi);
  if (!reservations_.empty()) {
    takeReservationsLocked(*placed);
    settleReservationsLocked();
  }
  return AssumeOutcome{std::string(node), admission.overQuota, admission.queue, gpuIndex};
}

void Mirror::confirm(std::string_view uid) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || !it->second.pod->assumed) return;
  auto bound = std::make_shared<policy::Pod>(*it->second.pod);
  bound->assumed = false;
  storeLocked(std::move(bound), it->second.seen, true);
  settleReservationsLocked();
}

void Mirror::forget(std::string_view uid) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || !it->second.pod->assumed) return;
  auto pending = std::make_shared<policy::Pod>(*it->second.pod);
  pending->nodeName.clear();
  pending->assumed = false;
  pending->overQuota = false;
  pending->labels.erase(policy::kOverQuotaLabel);
  pending->gpuIndex = -1;
  pending->annotations.erase(policy::kGpuIndexAnnotation);
  storeLocked(std::move(pending), clock_->now(), it->second.fromApi);
  settleReservationsLocked();
}

std::size_t Mirror::expire() {
  std::lock_guard lock(mu_);
  const Timestamp now = clock_->now();
  std::vector<std::string> forgotten;
  std::vector<std::string> dropped;
  for (const auto& [uid, entry] : pods_) {
    if (entry.pod->assumed && now - entry.seen > options_.assumeTtl) forgotten.push_back(uid);
    if (!entry.fromApi && entry.pod->nodeName.empty() && now - entry.seen > options_.pendingTtl) {
      dropped.push_back(uid);
    }
  }
  for (const auto& uid : forgotten) {
    auto pending = std::make_shared<policy::Pod>(*pods_[uid].pod);
    pending->nodeName.clear();
    pending->assumed = false;
    pending->overQuota = false;
    pending->labels.erase(policy::kOverQuotaLabel);
    pending->gpuIndex = -1;
    pending->annotations.erase(policy::kGpuIndexAnnotation);
    storeLocked(std::move(pending), now, pods_[uid].fromApi);
  }
  for (const auto& uid : dropped) removeLocked(uid);
  settleReservationsLocked();
  const std::size_t reservations = expireReservationsLocked(now);
  return forgotten.size() + dropped.size() + reservations;
}

policy::SnapshotPtr Mirror::snapshot() const {
  std::lock_guard lock(mu_);
  return rebuildLocked();
}

policy::SnapshotPtr Mirror::rebuildLocked() const {
  if (current_ && !allDirty_ && !pendingDirty_ && dirty_.empty() && !workloadDirty_) {
    return current_;
  }
  ++generation_;
  if (workloadDirty_ || !publishedWorkload_) {
    publishedWorkload_ = fixedWorkload_
                             ? fixedWorkload_
                             : std::make_shared<const policy::Workload>(learned_.distribution());
    workloadDirty_ = false;
  }
  auto reserved = reservationsByNodeLocked();
  auto build = [&](const std::string& name) {
    auto node = nodes_.find(name);
    if (node == nodes_.end()) {
      built_.erase(name);
      return;
    }
    std::vector<policy::PodPtr> pods;
    if (auto on = podsOnNode_.find(name); on != podsOnNode_.end()) {
      pods.reserve(on->second.size());
      for (const auto& uid : on->second) pods.push_back(pods_.at(uid).pod);
    }
    std::vector<policy::Reservation> held;
    if (auto r = reserved.find(name); r != reserved.end()) held = std::move(r->second);
    built_[name] = std::make_shared<const policy::NodeState>(node->second, std::move(pods),
                                                             generation_, std::move(held));
  };
  if (allDirty_) {
    built_.clear();
    for (const auto& [name, node] : nodes_) build(name);
  } else {
    for (const auto& name : dirty_) build(name);
  }
  if (pendingDirty_ || allDirty_) {
    builtPending_.clear();
    builtPending_.reserve(pendingSet_.size());
    for (const auto& [uid, pod] : pendingSet_) builtPending_.push_back(pod);
  }
  dirty_.clear();
  allDirty_ = false;
  pendingDirty_ = false;
  std::vector<policy::NodeStatePtr> nodes;
  nodes.reserve(built_.size());
  for (const auto& [name, state] : built_) nodes.push_back(state);
  current_ = std::make_shared<const policy::ClusterSnapshot>(
      std::move(nodes), builtPending_, quota_, generation_,
      policy::SnapshotOptions{options_.fit, publishedWorkload_, options_.seed});
  return current_;
}

}  // namespace gpufair::state
