// ClusterSnapshot's per-queue sums: what each queue's pods hold on the nodes, what it has
// pending and reserved ahead, and the fair shares from them; from the previous snapshot and what
// changed when the queues are the same (see snapshot.h and snapshot_build.cc).
#include <algorithm>
#include <unordered_map>

#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/snapshot.h"

#include "queue_lookup.h"

namespace gpufair::policy {

void ClusterSnapshot::sumOwnNodeUse(const ClusterSnapshot* previous,
                                    std::span<const std::size_t> changed,
                                    const std::function<QueueOwn*(const std::string&)>& queueOf) {
  auto add = [&](const NodeState& n, int sign) {
    for (const auto& use : n.byQueue()) {
      if (QueueOwn* q = queueOf(use.queue)) {
        q->allocated += sign * use.allocated;
        q->overQuota += sign * use.overQuota;
        q->runningPods += sign * use.pods;
      }
    }
  };
  if (previous == nullptr) {
    for (const NodeState* node : table_->nodes) add(*node, 1);
    return;
  }
  for (std::size_t q = 0; q < own_.size(); ++q) {
    own_[q].allocated = previous->own_[q].allocated;
    own_[q].overQuota = previous->own_[q].overQuota;
    own_[q].runningPods = previous->own_[q].runningPods;
  }
  for (std::size_t i : changed) {
    add(*previous->table_->nodes[i], -1);
    add(*table_->nodes[i], 1);
  }
}

void ClusterSnapshot::sumQueues(const ClusterSnapshot* previous,
                                std::span<const std::size_t> changed) {
  queues_.reserve(quota_.queues.size() + 1);
  for (const auto& q : quota_.queues) queues_.push_back(QueueState{q});
  queues_.push_back(QueueState{quota_.defaultQueue});
  linkQueueTree(queues_);
  own_.assign(queues_.size(), QueueOwn{});
  // The previous snapshot's sums are reused only under the same queues, in the same order.
  if (previous != nullptr &&
      !std::equal(
          queues_.begin(), queues_.end(), previous->queues_.begin(), previous->queues_.end(),
          [](const QueueState& a, const QueueState& b) { return a.quota.name == b.quota.name; })) {
    previous = nullptr;
    changed = {};
  }
  // Most pods name the queue the one before did: that lookup is one string compare.
  const detail::QueueLookup lookup(queues_);
  // One pointer captured: std::function holds it without an allocation.
  struct QueueOfState {
    const detail::QueueLookup* lookup;
    std::vector<QueueOwn>* own;
    std::size_t last = 0;
  } state{&lookup, &own_};
  auto queueOf = [s = &state](const std::string& name) -> QueueOwn* {
    const detail::QueueLookup& l = *s->lookup;
    if (l[s->last].quota.name == name) return &(*s->own)[s->last];
    const std::size_t at = l.find(name);
    if (at == l.size()) return nullptr;
    s->last = at;
    return &(*s->own)[at];
  };
  sumOwnNodeUse(previous, changed, queueOf);
  if (previous != nullptr) {
    for (std::size_t q = 0; q < own_.size(); ++q) {
      own_[q].pending = previous->own_[q].pending;
      own_[q].pendingPods = previous->own_[q].pendingPods;
    }
    if (previous->pending_ != pending_) {
      const PendingChange change = pendingChange(*previous->pending_, *pending_);
      for (const auto& pod : change.removed) {
        if (QueueOwn* q = queueOf(pod->queue)) {
          q->pending -= pod->gpus;
          --q->pendingPods;
        }
      }
      for (const auto& pod : change.added) {
        if (QueueOwn* q = queueOf(pod->queue)) {
          q->pending += pod->gpus;
          ++q->pendingPods;
        }
      }
    }
  } else {
    for (const auto& pod : *pending_) {
      if (QueueOwn* q = queueOf(pod->queue)) {
        q->pending += pod->gpus;
        ++q->pendingPods;
      }
    }
  }
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    QueueState& q = queues_[i];
    q.allocated = own_[i].allocated;
    q.overQuota = own_[i].overQuota;
    q.runningPods = own_[i].runningPods;
    q.pending = own_[i].pending;
    q.pendingPods = own_[i].pendingPods;
  }
  // Reservations are demand: a gang's members not yet offered, a reclaimer's held GPUs. A holder
  // that is pending already counts its request; only what is reserved beyond it is added.
  if (!reservations_->empty()) {
    struct Held {
      MilliGpu reserved = 0;
      MilliGpu pending = 0;
      std::string queue;
    };
    std::unordered_map<std::string, Held> held;
    for (const auto& r : *reservations_) {
      Held& h = held[r.holder];
      h.reserved += r.gpus;
      h.queue = r.queue;
    }
    for (const auto& pod : *pending_) {
      auto it = held.find(pod->uid);
      if (it == held.end() && pod->inGang()) it = held.find(pod->gangKey());
      if (it != held.end()) it->second.pending += pod->gpus;
    }
    for (const auto& [holder, h] : held) {
      const std::size_t at = lookup.find(h.queue);
      if (at != queues_.size() && h.reserved > h.pending) {
        queues_[at].reservedAhead += h.reserved - h.pending;
      }
    }
  }
  sumQueueTree(queues_);
  // The shares are a function of the inputs and the capacity alone: when the previous snapshot
  // (same queues) had the same, its shares are these. A bind leaves them so (the pod's GPUs move
  // from its queue's pending to its allocated: the same demand), so most snapshots skip this
  // (and the inputs' list is made only when they do not).
  if (previous != nullptr && previous->capacity_ == capacity_ &&
      std::equal(queues_.begin(), queues_.end(), previous->queues_.begin(), previous->queues_.end(),
                 [](const QueueState& now, const QueueState& was) {
                   return fairShareInput(now) == fairShareInput(was);
                 })) {
    for (std::size_t i = 0; i < queues_.size(); ++i) {
      queues_[i].fairShare = previous->queues_[i].fairShare;
    }
    return;
  }
  std::vector<FairShareInput> inputs;
  inputs.reserve(queues_.size());
  for (const auto& q : queues_) inputs.push_back(fairShareInput(q));
  const std::vector<MilliGpu> shares =
      computeFairShares(inputs, capacity_, fairShareGranularity(inputs, capacity_));
  for (std::size_t i = 0; i < queues_.size(); ++i) queues_[i].fairShare = shares[i];
}

}  // namespace gpufair::policy
