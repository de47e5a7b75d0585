// Mirror: gpufair's in-memory copy of the cluster (nodes, pods, quota config), fed by a cluster
// file or by list/watch, and the source of the immutable snapshots the engine reads.
//
// Pod life cycle (as kube-scheduler's cache has it):
//
//   Initial --notePending--> Pending --assume--> Assumed --upsertPod(bound)--> Bound --deletePod-->
//   gone
//      |                        ^                   |                             |
//      +------upsertPod---------+<----forget--------+  (bind failed, TTL passed)  +--
//      Succeeded/Failed:
//                                                                                    holds no GPUs
//   Pending:  kube-scheduler offered the pod to /filter or /prioritize (or a watch showed it
//   unbound);
//             its request counts as its queue's pending demand. Forgotten after pendingTtl unseen.
//   Assumed:  /bind placed it; its GPUs are held on the node at once. A watch event showing it
//   bound
//             to the same node confirms it; confirm() does so directly (file mode). Unconfirmed
//             after assumeTtl, or forget(): back to Pending, GPUs freed.
//   Bound:    spec.nodeName is set; holds GPUs until Succeeded, Failed or deleted.
//
// Snapshots: every change marks the affected nodes dirty; snapshot() rebuilds only dirty NodeStates
// and shares the rest with the previous snapshot. Readers hold a shared_ptr and never block
// writers.
//
// Thread-safety: all methods are thread-safe. Lock order: mu_ only (no callbacks run under it).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/quota.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/admission.h"
#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::state {

struct MirrorOptions {
  std::chrono::seconds assumeTtl{30};
  std::chrono::seconds pendingTtl{15 * 60};
  // Published in every snapshot (ClusterSnapshot::options()).
  policy::FitOptions fit{};
  std::uint64_t seed = 0;
  // The target workload (fgd) is learned from the GPU pods the mirror sees pending: each new pod
  // is one step of decay (policy::WorkloadModel). setWorkload() fixes it instead.
  double workloadDecay = 0.999;
};

struct AssumeOutcome {
  std::string node;
  bool overQuota = false;  // admitted as borrowed: label it gpufair.io/over-quota=true
  std::string queue;
  // The physical GPU given to a fractional pod: write it as annotation gpufair.io/gpu-index.
  // -1 for whole-GPU and GPU-less pods.
  int gpuIndex = -1;
};

class Mirror {
 public:
  explicit Mirror(ClockPtr clock, MirrorOptions options = {});

  // Nodes.
  void upsertNode(policy::Node node);
  void deleteNode(std::string_view name);

  // Pods as the API server (or a cluster file) has them. A pod without uid is keyed "ns/name".
  // Bound pods hold GPUs; unbound pods that want GPUs and are not finished are pending demand.
  void upsertPod(policy::Pod pod);
  void deletePod(std::string_view uid);

  // A complete LIST from the API server (after start-up or a 410 Gone): nodes, or pods, absent from
  // it were deleted while the watch was down and are dropped. Pods only offered by kube-scheduler
  // (never seen from the API) are kept; they expire as usual.
  void replaceNodes(std::vector<policy::Node> nodes);
  void replacePods(std::vector<policy::Pod> pods);

  // Replaces the quota config; every pod's queue is resolved again.
  void setQuotaConfig(QuotaConfig config);
  QuotaConfig quotaConfig() const;

  // A pod kube-scheduler offered to /filter or /prioritize. Known bound or assumed pods are left as
  // they are; otherwise the pod is remembered (or refreshed) as pending.
  void notePending(policy::Pod pod);

  // The pod with this UID, in whatever state, or nullptr.
  policy::PodPtr findPod(std::string_view uid) const;

  // /bind: checks on the current state that the pod still fits on `node` and that its queue admits
  // it, then holds its GPUs there (Assumed). A fractional pod is given a GPU: the scorer's choice
  // (the one passed, else the one set with setScorer), else best fit; it is recorded in the pod
  // (gpuIndex and annotation gpufair.io/gpu-index) and in the outcome. Errors say why in words.
  Result<AssumeOutcome> assume(std::string_view uid, std::string_view node);
  Result<AssumeOutcome> assume(std::string_view uid, std::string_view node,
                               const policy::Scorer& scorer);

  // The strategy whose GPU choice assume() uses by default (null: best fit).
  void setScorer(std::shared_ptr<const policy::Scorer> scorer);
  // Fixes the target workload published in snapshots; null goes back to learning it online.
  void setWorkload(policy::WorkloadPtr workload);
  // Marks an assumed pod bound (the API server accepted the binding and no watch will tell us).
  void confirm(std::string_view uid);
  // Drops an assumption: the pod is pending again and its GPUs are free.
  void forget(std::string_view uid);
  // Forgets assumed pods older than assumeTtl and pending pods unseen for pendingTtl.
  // Returns how many it dropped.
  std::size_t expire();

  // The current snapshot; rebuilt here if anything changed since the last call.
  policy::SnapshotPtr snapshot() const;

 private:
  struct Entry {
    policy::PodPtr pod;    // replaced, never mutated: published snapshots share it
    Timestamp seen{};      // pending: last offered; assumed: when assumed
    bool fromApi = false;  // known from the API server or the cluster file, not only offered
  };

  // Replaces (or inserts) the entry for pod->uid, keeping node indexes and dirty marks right.
  void storeLocked(policy::PodPtr pod, Timestamp seen, bool fromApi);
  void removeLocked(const std::string& uid);
  void upsertPodLocked(policy::Pod pod, Timestamp now);
  void markLocked(const policy::Pod& pod);  // marks what a change of this pod affects
  policy::SnapshotPtr rebuildLocked() const;
  Result<AssumeOutcome> assumeLocked(std::string_view uid, std::string_view node,
                                     const policy::Scorer* scorer);
  void observeLocked(const policy::Pod& pod);  // learns the workload from a newly pending pod

  ClockPtr clock_;
  MirrorOptions options_;

  mutable std::mutex mu_;
  QuotaConfig quota_;                                    // GUARDED_BY(mu_)
  std::unordered_map<std::string, policy::Node> nodes_;  // GUARDED_BY(mu_)
  std::unordered_map<std::string, Entry> pods_;          // GUARDED_BY(mu_) by uid
  // uid of every pod placed (bound or assumed) on a node name, whether or not the node is known.
  std::unordered_map<std::string, std::set<std::string>> podsOnNode_;  // GUARDED_BY(mu_)
  mutable std::set<std::string, std::less<>> dirty_;                   // GUARDED_BY(mu_)
  mutable bool pendingDirty_ = true;                                   // GUARDED_BY(mu_)
  mutable bool allDirty_ = true;                                       // GUARDED_BY(mu_)
  mutable std::uint64_t generation_ = 0;                               // GUARDED_BY(mu_)
  // Unbound pods that want GPUs, by uid (kept in step by storeLocked/removeLocked).
  std::map<std::string, policy::PodPtr> pendingSet_;  // GUARDED_BY(mu_)
  // Kept sorted by name so a snapshot's node list needs no sort.
  mutable std::map<std::string, policy::NodeStatePtr, std::less<>> built_;  // GUARDED_BY(mu_)
  mutable std::vector<policy::PodPtr> builtPending_;                        // GUARDED_BY(mu_)
  mutable policy::SnapshotPtr current_;                                     // GUARDED_BY(mu_)
  std::shared_ptr<const policy::Scorer> scorer_;                            // GUARDED_BY(mu_)
  policy::WorkloadModel learned_;                                           // GUARDED_BY(mu_)
  policy::WorkloadPtr fixedWorkload_;                                       // GUARDED_BY(mu_)
  mutable policy::WorkloadPtr publishedWorkload_;                           // GUARDED_BY(mu_)
  mutable bool workloadDirty_ = false;                                      // GUARDED_BY(mu_)
};

}  // namespace gpufair::state
