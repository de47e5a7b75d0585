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
// Reservation life cycle (whole GPUs on one node kept for one holder: a pod uid, or
// "gang:<ns>/<name>" for a gang; see policy/reservation.h):
//
//   reserve(r, ttl) --> Held --holder pod assumed/bound on the node--> Taken --confirmed--> gone
//                        |  ^                                            |
//                        |  +--------- taker forgotten, deleted, finished +
//                        +--ttl passed (expire), releaseReservation(holder), gang complete--> gone
//
//   Held:   the reserved GPUs are unavailable to every pod but the holder (policy fit).
//   Taken:  a holder pod assumed on the node takes what it needs of the reservation (a pod
//           holder: all of it; a gang member: its own request, in whole GPUs); the rest stays
//           held. A pod holder placed on any node no longer needs its reservations elsewhere:
//           those are released. A taker that goes away before the reservation is gone gives its
//           share back. A reservation fully taken by confirmed (bound) pods is dropped.
//   Gangs:  reserveGang() plans and reserves for every member still to place at once, with
//           gangTimeout as ttl; when all gpufair.io/gang-size members are placed, or the ttl
//           passes, every reservation of the gang is released.
// Reservation GPUs are rounded up to whole GPUs. Changes mark the node dirty, so the next
// snapshot shows them on NodeState::reservations.
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
  // How long a gang's reservations wait for all its members to be placed.
  std::chrono::seconds gangTimeout{5 * 60};
};

// reserveGang's answer: what the gang holds now.
struct GangReservation {
  bool planned = false;  // reservations were made by this call (false: already held, or complete)
  std::vector<policy::Reservation> reservations;  // the gang's reservations now
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
  // Forgets assumed pods older than assumeTtl and pending pods unseen for pendingTtl, and drops
  // reservations past their ttl. Returns how many pods and reservations it dropped.
  std::size_t expire();

  // Reserves r.gpus (rounded up to whole GPUs) on r.node for r.holder, until the holder takes
  // them or ttl passes (see the life cycle above). A second reservation for the same holder and
  // node replaces the first (what its holder pods already took stays taken).
  void reserve(policy::Reservation r, std::chrono::seconds ttl);
  // Drops every reservation of this holder.
  void releaseReservation(std::string_view holder);
  // All reservations held now (GPUs not yet taken), by holder then node.
  std::vector<policy::Reservation> reservations() const;
  // For the gang of `member` (member.inGang(), offered and pending): when the gang is neither
  // complete nor holding reservations, plans it on the current state (policy::planGang: quota
  // for the whole gang, a node for every member still to place) and reserves the plan for
  // gangTimeout, atomically, so two gangs racing for the same room never both get it. A gang
  // that does not fit is an error with the plan's reason.
  Result<GangReservation> reserveGang(const policy::Pod& member);

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
  // Reservations (mirror_reservations.cc).
  struct ReservationEntry {
    policy::Reservation r;  // gpus: as reserved
    Timestamp expires{};
    std::map<std::string, MilliGpu> taken;  // holder pods placed on r.node: uid -> GPUs taken
    MilliGpu remaining() const;
  };
  using ReservationKey = std::pair<std::string, std::string>;  // holder, node
  // A pod was placed (assumed or bound) on its node: it takes from its reservations.
  void takeReservationsLocked(const policy::Pod& pod);
  // Gives back shares of takers no longer placed on the node, drops fully taken reservations
  // whose takers are all bound, and releases the reservations of complete gangs.
  void settleReservationsLocked();
  std::size_t expireReservationsLocked(Timestamp now);
  void eraseReservationLocked(std::map<ReservationKey, ReservationEntry>::iterator it);
  // Every reservation to publish, by node.
  std::unordered_map<std::string, std::vector<policy::Reservation>> reservationsByNodeLocked()
      const;
  struct GangCount {
    int size = 0;     // the largest gpufair.io/gang-size of its members
    int placed = 0;   // members holding GPUs, not terminating
    int assumed = 0;  // of placed, not yet confirmed
  };
  GangCount gangCountLocked(const std::string& gangKey) const;

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
  std::map<ReservationKey, ReservationEntry> reservations_;                 // GUARDED_BY(mu_)
  // uids of the pods of each gang (by Pod::gangKey), kept in step by storeLocked/removeLocked.
  std::unordered_map<std::string, std::set<std::string>> gangMembers_;  // GUARDED_BY(mu_)
};

}  // namespace gpufair::state
