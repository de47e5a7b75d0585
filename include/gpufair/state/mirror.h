// Mirror: gpufair's in-memory copy of the cluster (nodes, pods, quota config), fed by a cluster
// file or by list/watch, and the source of the immutable snapshots the engine reads. It composes
// three parts, as kube-scheduler splits its cache, snapshot and reserve:
//   - PodCache (pod_cache.h): pods and their life cycle, Pending -> Assumed -> Bound, with one
//     reset path back to Pending (forget, assumeTtl);
//   - ReservationBook (reservation_book.h): GPUs held for a pod or a gang, taken by the holder's
//     pods at bind, given back when they go;
//   - SnapshotBuilder (snapshot_builder.h): the node table, dirty sets and generations; rebuilds
//     only changed nodes and shares the rest with the previous snapshot.
// Each write keeps the three in step under one mutex (a pod placed takes its reservations, a pod
// gone gives them back; see the parts' headers for their life cycles).
//
// Bind (assume) and gang planning (reserveGang) decide with policy (fit, admission, GPU choice,
// planGang) on a snapshot outside the mutex, then commit under it only if that snapshot is still
// current (nothing changed meanwhile); otherwise they decide again on a fresh one. After a few
// such conflicts the last attempt holds the mutex throughout, so a busy watch cannot starve a
// bind. Either way the outcome is the one a decision on the state at commit time gives.
//
// Thread-safety: all methods are thread-safe. Lock order: mu_ only; no callbacks run under it and
// no policy decision either, but for that last attempt (the scorer's chooseGpu then runs under it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/quota.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/admission.h"
#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"
#include "gpufair/state/pod_cache.h"
#include "gpufair/state/reservation_book.h"
#include "gpufair/state/snapshot_builder.h"

namespace gpufair::state {
namespace detail {
struct BindInputs;  // bind_decision.h
struct GangView;
}  // namespace detail

struct MirrorOptions {
  std::chrono::seconds assumeTtl{30};
  std::chrono::seconds pendingTtl{15 * 60};
  // Published in every snapshot (ClusterSnapshot::options()). serve's default: CPU and memory are
  // left to kube-scheduler's fit, but the fragmentation measure (fgd's scores) counts them.
  policy::FitOptions fit{.checkCpuMemory = false, .scoreCpuMemory = true};
  std::uint64_t seed = 0;
  // The target workload (fgd) is learned from the pods the mirror sees (pending, or already
  // placed when first listed): each new pod is one step of decay (policy::WorkloadModel); see
  // WorkloadLearning. setWorkload() fixes it instead.
  WorkloadLearning learning{};
  // How far the learned workload moves before snapshots publish it again (see
  // SnapshotBuilderOptions::workloadRepublishDistance).
  double workloadRepublishDistance = kWorkloadRepublishDistance;
  // How long a gang's reservations wait for all its members to be placed.
  std::chrono::seconds gangTimeout{5 * 60};
  // Whether a pod only offered by kube-scheduler (never seen from the API server or the cluster
  // file) is pending demand. serve sets false against an API server (see PodCache).
  bool offeredPodsAreDemand = true;
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
  // they are; otherwise the pod is remembered (or refreshed) as pending (copied only then).
  void notePending(const policy::Pod& pod);

  // The pod with this UID, in whatever state, or nullptr.
  policy::PodPtr findPod(std::string_view uid) const;
  // Whether the pod with this UID is assumed: placed by assume(), not yet confirmed. Snapshots
  // say the same with ClusterSnapshot::isProvisional.
  bool isAssumed(std::string_view uid) const;

  // /bind: checks on the current state that the pod still fits on `node` and that its queue admits
  // it, then holds its GPUs there (Assumed). A gang member binds only into its gang's reservation
  // (made here, as reserveGang does, when an incomplete gang holds none), and its queue was
  // charged for the whole gang then. A fractional pod is given a GPU: the scorer's choice
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
  // them or ttl passes (see reservation_book.h). A second reservation for the same holder and
  // node replaces the first (what its holder pods already took stays taken).
  void reserve(policy::Reservation r, std::chrono::seconds ttl);
  // Drops every reservation of this holder.
  void releaseReservation(std::string_view holder);
  // All reservations held now (GPUs not yet taken), by holder then node.
  std::vector<policy::Reservation> reservations() const;
  // For the gang of `member` (member.inGang(), offered and pending): when the gang is neither
  // complete nor holding reservations (GPUs not yet taken), plans it on the current state
  // (policy::planGang: quota for the whole gang, a node for every member still to place) and
  // reserves the plan for gangTimeout, atomically, so two gangs racing for the same room never both
  // get it. A gang that does not fit is an error with the plan's reason.
  Result<GangReservation> reserveGang(const policy::Pod& member);

  // The current snapshot; rebuilt here if anything changed since the last call.
  policy::SnapshotPtr snapshot() const;

 private:
  Result<AssumeOutcome> assumeWith(std::string_view uid, std::string_view node,
                                   const policy::Scorer* scorer);
  // Read under mu_ with the snapshot they go with.
  detail::BindInputs bindInputsLocked(std::string_view uid) const;
  detail::GangView gangViewLocked(const std::string& gangKey) const;
  // The stored pod placed: it takes its reservations, which then settle.
  void commitAssumeLocked(policy::PodPtr placed);
  // A pod the API server has, stored; what it affects follows (workload, reservations).
  void upsertPodLocked(policy::Pod pod, Timestamp now);
  policy::SnapshotPtr snapshotLocked() const;

  ClockPtr clock_;
  MirrorOptions options_;

  mutable std::mutex mu_;
  QuotaConfig quota_;                             // GUARDED_BY(mu_)
  mutable SnapshotBuilder builder_;               // GUARDED_BY(mu_)
  PodCache cache_{builder_.dirty()};              // GUARDED_BY(mu_)
  ReservationBook book_{builder_.dirty()};        // GUARDED_BY(mu_)
  std::shared_ptr<const policy::Scorer> scorer_;  // GUARDED_BY(mu_)
};

}  // namespace gpufair::state
