// PodCache: the pods gpufair knows, by uid, and where each stands in its life cycle (as
// kube-scheduler's cache has it):
//
//   Initial --notePending / upsert(unbound)--> Pending --assume--> Assumed
//   Assumed --upsert(bound) / confirm--> Bound --remove--> gone
//   Assumed --forget / expire (assumeTtl)--> Pending           (one reset path: reset())
//   Pending --expire (pendingTtl, only offered, never seen from the API)--> gone
//   any --upsert(Succeeded / Failed)--> finished: holds no GPUs
//
//   Pending:  kube-scheduler offered the pod to /filter or /prioritize (or the API shows it
//             unbound); its request counts as its queue's pending demand, unless only offered
//             and setOfferedIsDemand(false): against an API server, demand is what the API
//             server says exists, so a late /filter for a pod deleted meanwhile is remembered
//             (for /bind) but never becomes demand that reclaim would evict for.
//   Assumed:  /bind placed it: it holds its GPUs on the node at once. An unbound version from a
//             lagging watch keeps the assumption (and the GPU index and the borrowed mark given
//             at bind). Reset back to Pending: node, borrowed mark and label, GPU index cleared.
//   Bound:    spec.nodeName is set; holds GPUs until Succeeded, Failed or removed.
//
// Pods are stored resolved (queue from the quota config, gang labels read) and immutable: a change
// replaces the PodPtr, so published snapshots keep the old one. Whether a pod is assumed is the
// cache's (Entry::assumed), not the pod's. Every change marks what it affects in the DirtySet: the
// pod's old and new node, or the pending set, and the provisional set when assumed-ness changes.
// Indexes kept in step with the pods: pods on each node name (known node or not), unbound pods that
// want GPUs, members of each gang, assumed pods, uids only offered (not from the API, unbound).
//
// Thread-safety: none. state::Mirror serializes every call under its mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/dirty_set.h"

namespace gpufair::state {

class PodCache {
 public:
  struct Entry {
    policy::PodPtr pod;    // never null
    Timestamp seen{};      // pending: last offered or listed; assumed: when assumed
    bool fromApi = false;  // known from the API server or the cluster file, not only offered
    bool assumed = false;  // placed by gpufair's bind, not yet confirmed
  };
  // What a write stored: the pod as stored (null: nothing stored) and whether its uid is new.
  struct Stored {
    policy::PodPtr pod;
    bool firstSeen = false;
  };
  struct GangCount {
    int size = 0;     // the largest gpufair.io/gang-size of its members
    int placed = 0;   // members holding GPUs, not terminating
    int assumed = 0;  // of placed, not yet confirmed
  };

  explicit PodCache(DirtySet& dirty) : dirty_(dirty) {}
  // Whether pods only offered (never seen from the API server or the cluster file) count as
  // pending demand. Default true (file mode and the simulator); set before the first pod.
  void setOfferedIsDemand(bool offered) { offeredIsDemand_ = offered; }
  PodCache(const PodCache&) = delete;
  PodCache& operator=(const PodCache&) = delete;

  // The cache's key of a pod: its uid, or "ns/name" when it has none.
  static std::string keyOf(const policy::Pod& pod);

  const Entry* find(std::string_view uid) const;
  policy::PodPtr findPod(std::string_view uid) const;  // null if unknown
  bool isAssumed(std::string_view uid) const;
  std::size_t size() const { return pods_.size(); }

  // A pod as the API server (or a cluster file) has it. Resolves its queue and gang, keeps an
  // assumption the API has not caught up with yet (see Assumed above); bound: confirmed.
  Stored upsert(policy::Pod pod, Timestamp now, const QuotaConfig& quota);
  // A pod kube-scheduler offered. Bound, assumed and API-known pods are left as they are (an
  // unbound one is only marked seen), as is an offered pod re-offered with nothing changed that
  // matters (then nothing is published); otherwise a copy of the pod is stored as Pending (the
  // pod is copied only then: most offers are of pods the API server already told about).
  Stored notePending(const policy::Pod& pod, Timestamp now, const QuotaConfig& quota);
  void remove(std::string_view uid);
  // A complete LIST: drops pods known from the API whose key is not in `listed`; returns them.
  std::vector<std::string> removeUnlisted(const std::unordered_set<std::string>& listed);
  // Resolves every pod's queue again.
  void requeue(const QuotaConfig& quota);

  // Pending -> Assumed: `placed` (the cached pod with its node, GPU index, borrowed mark) replaces
  // the pod. The caller decided it on a snapshot taken with the cache as it is now.
  void assume(policy::PodPtr placed, Timestamp now);
  // Assumed -> Bound. False if the pod is not assumed.
  bool confirm(std::string_view uid);
  // Assumed -> Pending (reset). False if the pod is not assumed.
  bool forget(std::string_view uid, Timestamp now);
  // Resets assumed pods older than assumeTtl and drops pods only offered and unseen for
  // pendingTtl. Returns how many pods it reset or dropped.
  std::size_t expire(Timestamp now, std::chrono::seconds assumeTtl,
                     std::chrono::seconds pendingTtl);

  // Pods placed (bound or assumed) on the node name, by uid.
  std::vector<policy::PodPtr> podsOn(std::string_view node) const;
  // Unbound pods that want GPUs and are not finished or terminating, by uid.
  std::vector<policy::PodPtr> pending() const;
  // The same list, shared: it never changes after this call, so snapshots publish it without
  // copying while nothing pending changed. After a change the next call copies the list of chunks
  // (policy::PendingPods), not the pods' references.
  std::shared_ptr<const policy::PendingPods> pendingList() const;
  // Uids of assumed pods, sorted.
  std::vector<std::string> assumedUids() const;
  // The assumed pods by uid, shared as pendingList is: a snapshot's provisional pods, published
  // after an assume or confirm by copying the list of chunks, not every assumed uid (the pods are
  // as they were when assumed; only their uids are read).
  std::shared_ptr<const policy::PendingPods> assumedList() const;
  GangCount gangCount(const std::string& gangKey) const;
  // Members of the gang that want no GPU, are unplaced and not finished or terminating.
  std::vector<policy::PodPtr> unplacedWithoutGpus(const std::string& gangKey) const;

 private:
  // Replaces (or inserts) the entry for the pod's key, keeping indexes and dirty marks right.
  void store(policy::PodPtr pod, Timestamp seen, bool fromApi, bool assumed);
  // Assumed -> Pending: the one way an assumption is undone (forget and expire).
  void reset(const std::string& uid, Timestamp now);
  void mark(const policy::Pod& pod);  // marks what a change of this pod affects
  // Drops `old` from the node and gang indexes it leaves (all of them when `next` is null).
  void unindex(const std::string& uid, const policy::Pod& old, const policy::Pod* next);

  // Looks a std::string key up by std::string_view, without a copy of the uid.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };

  DirtySet& dirty_;
  std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>> pods_;  // by uid
  std::unordered_map<std::string, std::set<std::string>, KeyHash, std::equal_to<>> podsOnNode_;
  // Pending demand in key order (keyOf), chunks shared with the lists handed out.
  void setPending(const std::string& key, const policy::PodPtr& pod);
  void erasePending(const std::string& key);
  policy::PendingPods pending_;
  // pending_ as pendingList last handed it out; null when it changed since.
  mutable std::shared_ptr<const policy::PendingPods> published_;
  bool offeredIsDemand_ = true;
  std::unordered_map<std::string, std::set<std::string>> gangMembers_;  // by Pod::gangKey
  // The assumed pods, in key order; publishedAssumed_: as assumedList last handed it out, null
  // when it changed since.
  policy::PendingPods assumedPods_;
  mutable std::shared_ptr<const policy::PendingPods> publishedAssumed_;
  // Entries with !fromApi and no node: what expire() may drop. Kept so that expire() looks only
  // at these and at assumedPods_, not at every pod.
  std::set<std::string> offeredOnly_;
};

}  // namespace gpufair::state
