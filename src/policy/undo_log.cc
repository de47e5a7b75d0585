#include "gpufair/policy/undo_log.h"

#include <algorithm>

#include "gpu_layout.h"

namespace gpufair::policy {

UndoLog::UndoLog(const ClusterSnapshot& snapshot)
    : snapshot_(snapshot), queues_(snapshot.queues().begin(), snapshot.queues().end()) {
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    queueIndex_.emplace(queues_[i].quota.name, static_cast<int>(i));
  }
}

UndoLog::~UndoLog() = default;

int UndoLog::queueIndex(std::string_view name) const {
  auto it = queueIndex_.find(name);
  return it == queueIndex_.end() ? -1 : it->second;
}

const UndoLog::NodeWork* UndoLog::find(std::size_t node) const {
  if (slot_.empty() || slot_[node] == 0) return nullptr;
  return &work_[static_cast<std::size_t>(slot_[node] - 1)];
}

UndoLog::NodeWork& UndoLog::touch(std::size_t node) {
  if (slot_.empty()) slot_.assign(snapshot_.nodes().size(), 0);
  if (slot_[node] == 0) {
    const NodeState& base = *snapshot_.nodes()[node];
    NodeWork w;
    w.base = &base;
    w.index = node;
    w.used = base.used();
    w.cpu = base.cpuUsed();
    w.memory = base.memoryUsed();
    w.reservations.assign(base.reservations().begin(), base.reservations().end());
    w.gpuUsed.assign(base.gpuUsedList().begin(), base.gpuUsedList().end());
    work_.push_back(std::move(w));
    slot_[node] = static_cast<std::int32_t>(work_.size());
  }
  return work_[static_cast<std::size_t>(slot_[node] - 1)];
}

MilliGpu UndoLog::used(std::size_t node) const {
  const NodeWork* w = find(node);
  return w == nullptr ? snapshot_.nodes()[node]->used() : w->used;
}

MilliGpu UndoLog::free(std::size_t node) const {
  const MilliGpu allocatable = snapshot_.nodes()[node]->allocatable();
  const MilliGpu u = used(node);
  return u >= allocatable ? 0 : allocatable - u;
}

std::int64_t UndoLog::cpuUsed(std::size_t node) const {
  const NodeWork* w = find(node);
  return w == nullptr ? snapshot_.nodes()[node]->cpuUsed() : w->cpu;
}

std::int64_t UndoLog::memoryUsed(std::size_t node) const {
  const NodeWork* w = find(node);
  return w == nullptr ? snapshot_.nodes()[node]->memoryUsed() : w->memory;
}

std::int64_t UndoLog::cpuFree(std::size_t node) const {
  const std::int64_t total = snapshot_.nodes()[node]->node().cpuMilli;
  const std::int64_t u = cpuUsed(node);
  return u >= total ? 0 : total - u;
}

std::int64_t UndoLog::memoryFree(std::size_t node) const {
  const std::int64_t total = snapshot_.nodes()[node]->node().memoryBytes;
  const std::int64_t u = memoryUsed(node);
  return u >= total ? 0 : total - u;
}

const std::vector<MilliGpu>& UndoLog::layout(const NodeWork& w) const {
  if (!w.stale) return w.gpuUsed;
  auto& work = const_cast<NodeWork&>(w);  // work_ is mutable: the layout is a cache
  work.gpuUsed.assign(static_cast<std::size_t>(std::max(0, w.base->node().gpuCount())), 0);
  std::vector<PodPtr> kept;
  for (const auto& p : w.base->pods()) {
    if (std::find(w.removed.begin(), w.removed.end(), p) == w.removed.end()) kept.push_back(p);
  }
  layout_detail::layoutGpus(kept, work.gpuUsed);
  work.stale = false;
  for (Placed& placed : work.placed) takeGpus(work, placed);
  return w.gpuUsed;
}

int UndoLog::fullyFreeGpus(std::size_t node) const {
  const NodeWork* w = find(node);
  if (w == nullptr) return snapshot_.nodes()[node]->fullyFreeGpus();
  const auto& gpus = layout(*w);
  return static_cast<int>(std::count(gpus.begin(), gpus.end(), 0));
}

int UndoLog::wholeGpusFor(std::size_t node, const Pod& pod) const {
  const NodeWork* w = find(node);
  if (w == nullptr) return snapshot_.nodes()[node]->wholeGpusFor(pod);
  const int fullyFree = fullyFreeGpus(node);
  MilliGpu against = 0;
  for (const auto& r : w->reservations) {
    if (!isHolder(pod, r.holder)) against += r.gpus;
  }
  const auto held = static_cast<int>((against + kMilliPerGpu - 1) / kMilliPerGpu);
  return fullyFree > held ? fullyFree - held : 0;
}

std::span<const Reservation> UndoLog::reservations(std::size_t node) const {
  const NodeWork* w = find(node);
  return w == nullptr ? snapshot_.nodes()[node]->reservations()
                      : std::span<const Reservation>(w->reservations);
}

bool UndoLog::changed(std::size_t node) const {
  const NodeWork* w = find(node);
  return w != nullptr && (!w->removed.empty() || !w->placed.empty() ||
                          w->reservations.size() != w->base->reservations().size());
}

bool UndoLog::isRemoved(const Pod& pod) const {
  const std::ptrdiff_t node = snapshot_.nodeIndex(pod.nodeName);
  const NodeWork* w = node < 0 ? nullptr : find(static_cast<std::size_t>(node));
  if (w == nullptr) return false;
  return std::any_of(w->removed.begin(), w->removed.end(),
                     [&](const PodPtr& p) { return p->uid == pod.uid; });
}

std::vector<PodPtr> UndoLog::podsOn(std::size_t node) const {
  const NodeWork* w = find(node);
  const auto& base = snapshot_.nodes()[node]->pods();
  if (w == nullptr) return base;
  std::vector<PodPtr> out;
  out.reserve(base.size() + w->placed.size());
  for (const auto& p : base) {
    if (std::find(w->removed.begin(), w->removed.end(), p) == w->removed.end()) out.push_back(p);
  }
  for (const auto& placed : w->placed) out.push_back(placed.pod);
  return out;
}

NodeState UndoLog::nodeAfter(std::size_t node) const {
  const NodeState& base = *snapshot_.nodes()[node];
  const auto held = reservations(node);
  return NodeState(base.node(), podsOn(node), base.generation(), {held.begin(), held.end()});
}

// What a pod holds, as NodeState and the snapshot's queues count it.
void UndoLog::account(NodeWork& w, const Pod& pod, int sign) {
  if (!pod.holdsGpus()) return;
  w.cpu += sign * pod.cpuMilli;
  w.memory += sign * pod.memoryBytes;
  if (pod.gpus == 0) return;
  w.used += sign * pod.gpus;
  const int q = queueIndex(pod.queue);
  if (q < 0 || pod.gpus < 0) return;
  // The pod's queue and every ancestor count it (snapshot.h: a child's usage counts upwards).
  for (int at = q, steps = 0; at >= 0 && steps <= static_cast<int>(queues_.size()); ++steps) {
    QueueState& queue = queues_[static_cast<std::size_t>(at)];
    queue.allocated += sign * pod.gpus;
    if (pod.overQuota) queue.overQuota += sign * pod.gpus;
    queue.runningPods += sign;
    at = queue.parentIndex;
  }
}

void UndoLog::chargeUp(int queue, MilliGpu gpus) {
  for (int at = queue, steps = 0; at >= 0 && steps <= static_cast<int>(queues_.size()); ++steps) {
    queues_[static_cast<std::size_t>(at)].allocated += gpus;
    at = queues_[static_cast<std::size_t>(at)].parentIndex;
  }
}

void UndoLog::takeGpus(NodeWork& w, Placed& placed) const {
  const Pod& pod = *placed.pod;
  placed.gpus.clear();
  if (w.gpuUsed.empty() || pod.gpus <= 0) return;
  const int count = static_cast<int>(w.gpuUsed.size());
  if (pod.isFractional()) {
    int at = pod.gpuIndex >= 0 && pod.gpuIndex < count
                 ? pod.gpuIndex
                 : layout_detail::bestFitGpu(w.gpuUsed, pod.gpuShare);
    if (at < 0) at = layout_detail::leastUsedGpu(w.gpuUsed);
    placed.gpus.push_back(at);
  } else {
    layout_detail::emptiestGpus(w.gpuUsed, pod.gpuCount(), placed.gpus);
  }
  for (int g : placed.gpus) w.gpuUsed[static_cast<std::size_t>(g)] += pod.perGpu();
}

bool UndoLog::removePod(const PodPtr& pod) {
  const std::ptrdiff_t node = snapshot_.nodeIndex(pod->nodeName);
  if (node < 0) return false;
  const auto& pods = snapshot_.nodes()[static_cast<std::size_t>(node)]->pods();  // by uid
  auto it = std::lower_bound(pods.begin(), pods.end(), pod->uid,
                             [](const PodPtr& p, const std::string& uid) { return p->uid < uid; });
  if (it == pods.end() || (*it)->uid != pod->uid) return false;
  if (const NodeWork* seen = find(static_cast<std::size_t>(node)); seen != nullptr) {
    if (std::find(seen->removed.begin(), seen->removed.end(), *it) != seen->removed.end()) {
      return false;
    }
  }
  NodeWork& w = touch(static_cast<std::size_t>(node));
  const std::size_t position = w.removed.size();
  w.removed.push_back(*it);
  account(w, **it, -1);
  w.stale = w.stale || (*it)->holdsGpus();
  entries_.push_back({Op::kRemove, slot_[static_cast<std::size_t>(node)] - 1, position, *it});
  return true;
}

bool UndoLog::restorePod(const Pod& pod) {
  const std::ptrdiff_t node = snapshot_.nodeIndex(pod.nodeName);
  if (node < 0 || find(static_cast<std::size_t>(node)) == nullptr) return false;
  NodeWork& w = touch(static_cast<std::size_t>(node));
  auto it = std::find_if(w.removed.begin(), w.removed.end(),
                         [&](const PodPtr& p) { return p->uid == pod.uid; });
  if (it == w.removed.end()) return false;
  const PodPtr back = *it;
  const auto position = static_cast<std::size_t>(it - w.removed.begin());
  w.removed.erase(it);
  account(w, *back, +1);
  w.stale = w.stale || back->holdsGpus();
  entries_.push_back({Op::kRestore, slot_[static_cast<std::size_t>(node)] - 1, position, back});
  return true;
}

void UndoLog::place(std::size_t node, const PodPtr& pod) {
  NodeWork& w = touch(node);
  PodPtr here = pod;
  if (pod->nodeName != w.base->name() || !pod->holdsGpus()) {
    auto copy = std::make_shared<Pod>(*pod);
    copy->nodeName = w.base->name();
    copy->phase = PodPhase::kRunning;
    here = std::move(copy);
  }
  account(w, *here, +1);
  Placed placed{here, {}};
  if (!w.stale) takeGpus(w, placed);
  w.placed.push_back(std::move(placed));
  entries_.push_back({Op::kPlace, slot_[node] - 1, w.placed.size() - 1, here});
}

void UndoLog::chargeQueue(int queue, MilliGpu gpus) {
  if (queue < 0 || static_cast<std::size_t>(queue) >= queues_.size()) return;
  chargeUp(queue, gpus);
  entries_.push_back({Op::kCharge, -1, 0, nullptr, queue, gpus});
}

bool UndoLog::reserve(Reservation reservation) {
  const std::ptrdiff_t node = snapshot_.nodeIndex(reservation.node);
  if (node < 0) return false;
  NodeWork& w = touch(static_cast<std::size_t>(node));
  w.reservations.push_back(std::move(reservation));
  entries_.push_back({Op::kReserve, slot_[static_cast<std::size_t>(node)] - 1,
                      w.reservations.size() - 1, nullptr});
  return true;
}

void UndoLog::undo(const Entry& e) {
  if (e.op == Op::kCharge) {
    chargeUp(e.queue, -e.gpus);
    return;
  }
  NodeWork& w = work_[static_cast<std::size_t>(e.work)];
  switch (e.op) {
    case Op::kRemove:
      w.removed.erase(w.removed.begin() + static_cast<std::ptrdiff_t>(e.position));
      account(w, *e.pod, +1);
      w.stale = w.stale || e.pod->holdsGpus();
      break;
    case Op::kRestore:
      w.removed.insert(w.removed.begin() + static_cast<std::ptrdiff_t>(e.position), e.pod);
      account(w, *e.pod, -1);
      w.stale = w.stale || e.pod->holdsGpus();
      break;
    case Op::kPlace:
      account(w, *e.pod, -1);
      if (!w.stale) {
        for (int g : w.placed.back().gpus)
          w.gpuUsed[static_cast<std::size_t>(g)] -= e.pod->perGpu();
      }
      w.placed.pop_back();
      break;
    case Op::kReserve:
      w.reservations.pop_back();
      break;
    case Op::kCharge:
      break;
  }
}

void UndoLog::rollback(Mark mark) {
  while (entries_.size() > mark) {
    undo(entries_.back());
    entries_.pop_back();
  }
}

std::vector<Change> UndoLog::changes(Mark mark) const {
  std::vector<Change> out;
  auto nodeOf = [&](const Entry& e) { return work_[static_cast<std::size_t>(e.work)].index; };
  for (std::size_t i = mark; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    Change c;
    c.pod = e.pod;
    c.gpus = e.gpus;
    c.queue = e.queue;
    switch (e.op) {
      case Op::kRemove:
        c.kind = Change::Kind::kRemoved;
        c.node = nodeOf(e);
        break;
      case Op::kRestore: {
        auto it = std::find_if(out.begin(), out.end(), [&](const Change& o) {
          return o.kind == Change::Kind::kRemoved && o.pod == e.pod;
        });
        if (it != out.end()) {
          out.erase(it);
          continue;
        }
        c.kind = Change::Kind::kRestored;
        c.node = nodeOf(e);
        break;
      }
      case Op::kPlace:
        c.kind = Change::Kind::kPlaced;
        c.node = nodeOf(e);
        break;
      case Op::kCharge:
        c.kind = Change::Kind::kCharged;
        break;
      case Op::kReserve:
        c.kind = Change::Kind::kReserved;
        c.node = nodeOf(e);
        c.reservation = work_[static_cast<std::size_t>(e.work)].reservations[e.position];
        break;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Change> UndoLog::commit() {
  std::vector<Change> out = changes(0);
  entries_.clear();
  return out;
}

}  // namespace gpufair::policy
