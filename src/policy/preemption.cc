#include "gpufair/policy/preemption.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "gpufair/policy/admission.h"
#include "gpufair/policy/fair_share.h"
#include "gpufair/policy/undo_log.h"

namespace gpufair::policy {
namespace {

enum class Kind {
  kUnknown,  // not on the node in gpufair's view, or holds no GPUs: kept, frees nothing we count
  kOwn,      // the preemptor's own queue
  kNoQuota,  // a queue gpufair does not know
  kOther,    // another queue: subject to its deserved quota
};

struct Victim {
  const std::string* uid = nullptr;
  const Pod* pod = nullptr;
  const PodPtr* ptr = nullptr;
  int queue = -1;
  Kind kind = Kind::kUnknown;
  bool kept = true;
  bool inQuota = false;
};

const PodPtr* findOn(const NodeState& node, std::string_view uid) {
  const auto& pods = node.pods();  // sorted by uid
  auto it = std::lower_bound(pods.begin(), pods.end(), uid,
                             [](const PodPtr& p, std::string_view u) { return p->uid < u; });
  return it != pods.end() && (*it)->uid == uid ? &*it : nullptr;
}

// Borrowed-labelled first, then the youngest, then by uid.
bool evictedBefore(const Victim& a, const Victim& b) {
  if (a.pod->overQuota != b.pod->overQuota) return a.pod->overQuota;
  const auto& ca = a.pod->created;
  const auto& cb = b.pod->created;
  if (ca.has_value() != cb.has_value()) return ca.has_value();
  if (ca && *ca != *cb) return *ca > *cb;
  return a.pod->uid < b.pod->uid;
}

std::string gpus(MilliGpu m) {
  return formatGpus(m) + (m == kMilliPerGpu ? " GPU" : " GPUs");
}

struct NodeOutcome {
  std::optional<std::string> dropReason;
  bool usesInQuota = false;
};

class Planner {
 public:
  Planner(const ClusterSnapshot& snapshot, const Pod& preemptor)
      : snapshot_(snapshot),
        preemptor_(preemptor),
        log_(snapshot),
        own_(log_.queueIndex(preemptor.queue)),
        fairShare_(fairShareCounting(snapshot, preemptor)) {}

  bool borrowing() const {
    if (own_ < 0) return false;
    const QueueState& q = log_.queue(own_);
    return q.allocated + preemptor_.gpus > q.quota.gpu.deserved;
  }

  // Decides one node's victims on the undo log and rolls it back.
  NodeOutcome plan(std::size_t index, std::vector<Victim>& victims) {
    const UndoLog::Mark checkpoint = log_.checkpoint();
    NodeOutcome outcome = decide(index, victims);
    log_.rollback(checkpoint);
    return outcome;
  }

 private:
  void classify(const NodeState& node, std::vector<Victim>& victims) const {
    for (Victim& v : victims) {
      v.ptr = findOn(node, *v.uid);
      v.pod = v.ptr == nullptr ? nullptr : v.ptr->get();
      if (v.pod == nullptr || !v.pod->holdsGpus() || v.pod->gpus <= 0) {
        v.kind = Kind::kUnknown;
        continue;
      }
      v.queue = log_.queueIndex(v.pod->queue);
      v.kind = v.queue < 0 ? Kind::kNoQuota : v.queue == own_ ? Kind::kOwn : Kind::kOther;
    }
  }

  NodeOutcome decide(std::size_t index, std::vector<Victim>& victims) {
    const NodeState& node = *snapshot_.nodes()[index];
    NodeOutcome outcome;
    classify(node, victims);
    for (const Victim& v : victims) {
      if (v.kind == Kind::kOwn || v.kind == Kind::kNoQuota) log_.removePod(*v.ptr);
    }
    const bool borrows = borrowing();
    std::vector<Victim*> others;
    for (Victim& v : victims) {
      if (v.kind == Kind::kOther) others.push_back(&v);
    }
    std::sort(others.begin(), others.end(),
              [](const Victim* a, const Victim* b) { return evictedBefore(*a, *b); });
    const Victim* protectedVictim = nullptr;
    for (Victim* v : others) {
      const QueueState& q = log_.queue(v->queue);
      v->inQuota = q.allocated - v->pod->gpus < q.quota.gpu.deserved;
      if (v->inQuota && borrows) {
        v->kept = false;
        if (protectedVictim == nullptr) protectedVictim = v;
        continue;
      }
      outcome.usesInQuota = outcome.usesInQuota || v->inQuota;
      log_.removePod(*v->ptr);
    }
    // Kept victims the quota does not count (no GPUs held) leave the node too.
    for (const Victim& v : victims) {
      if (v.kept && v.kind == Kind::kUnknown && v.ptr != nullptr) log_.removePod(*v.ptr);
    }
    // The node without the kept victims, with its reservations: GPUs held for another pod or gang
    // are not the preemptor's even once the victims are gone.
    const NodeState after(
        node.node(), log_.podsOn(index), node.generation(),
        std::vector<Reservation>(node.reservations().begin(), node.reservations().end()));
    const std::string protectedNote =
        protectedVictim == nullptr
            ? std::string()
            : "; queue " + preemptor_.queue + " would borrow, and victim " +
                  protectedVictim->pod->key() + " is within queue " + protectedVictim->pod->queue +
                  "'s deserved " + gpus(log_.queue(protectedVictim->queue).quota.gpu.deserved);
    if (!nodeFits(after, preemptor_, snapshot_.fitOptions())) {
      outcome.dropReason = "pod " + preemptor_.key() + " would not fit after the evictions (" +
                           fitsNode(after, preemptor_, snapshot_.fitOptions()).reason() + ")" +
                           protectedNote;
      return outcome;
    }
    const MilliGpu freed =
        node.node().takesNewPods() && after.free() > node.free() ? after.free() - node.free() : 0;
    const Admission admission =
        admitAfter(log_.queues(), snapshot_.free() + freed, preemptor_, fairShare_);
    if (!admission.status.isOk()) {
      outcome.dropReason = "pod " + preemptor_.key() + " would not be admitted after the " +
                           "evictions: " + admission.status.reason() + protectedNote;
      return outcome;
    }
    const bool anyKept =
        std::any_of(victims.begin(), victims.end(), [](const Victim& v) { return v.kept; });
    if (!anyKept) {
      outcome.dropReason = "pod " + preemptor_.key() +
                           " fits without the proposed victims as far as GPUs go" + protectedNote;
    }
    return outcome;
  }

  const ClusterSnapshot& snapshot_;
  const Pod& preemptor_;
  UndoLog log_;
  int own_;
  MilliGpu fairShare_;
};

}  // namespace

PreemptionPlan planPreemption(const ClusterSnapshot& snapshot, const Pod& preemptor,
                              std::span<const NodeVictims> proposed) {
  PreemptionPlan out;
  Planner planner(snapshot, preemptor);
  out.preemptorBorrowing = preemptor.gpus > 0 && planner.borrowing();
  std::vector<bool> usesInQuota;
  for (const NodeVictims& node : proposed) {
    if (node.podUids.empty()) {
      out.dropped.push_back({node.node, "no victims proposed"});
      continue;
    }
    if (preemptor.gpus <= 0) {
      out.nodes.push_back(node);
      usesInQuota.push_back(false);
      continue;
    }
    const std::ptrdiff_t index = snapshot.nodeIndex(node.node);
    if (index < 0) {
      out.dropped.push_back({node.node, "node " + node.node + " is not in gpufair's cluster view"});
      continue;
    }
    std::vector<Victim> victims(node.podUids.size());
    for (std::size_t i = 0; i < victims.size(); ++i) victims[i].uid = &node.podUids[i];
    const NodeOutcome outcome = planner.plan(static_cast<std::size_t>(index), victims);
    if (outcome.dropReason) {
      out.dropped.push_back({node.node, *outcome.dropReason});
      continue;
    }
    NodeVictims kept{node.node, {}, 0};
    for (const Victim& v : victims) {
      if (v.kept) kept.podUids.push_back(*v.uid);
    }
    kept.numPdbViolations = std::min<std::int64_t>(node.numPdbViolations,
                                                   static_cast<std::int64_t>(kept.podUids.size()));
    out.nodes.push_back(std::move(kept));
    usesInQuota.push_back(outcome.usesInQuota);
  }
  // Prefer borrowed victims: in-quota ones only where no node can do without them.
  if (std::find(usesInQuota.begin(), usesInQuota.end(), false) != usesInQuota.end()) {
    std::vector<NodeVictims> preferred;
    for (std::size_t i = 0; i < out.nodes.size(); ++i) {
      if (!usesInQuota[i]) {
        preferred.push_back(std::move(out.nodes[i]));
      } else {
        out.dropped.push_back({out.nodes[i].node,
                               "it would evict pods within their queue's deserved quota, while "
                               "other nodes need only borrowed ones"});
      }
    }
    out.nodes = std::move(preferred);
  }
  return out;
}

}  // namespace gpufair::policy
