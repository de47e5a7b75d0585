// The engine's view of Kubernetes objects: only what scheduling GPUs needs. Adapters (codec, k8s,
// config) fill these from API objects; the engine reads them and never sees JSON or YAML. The wire
// names (labels, annotations) are in common/labels.h; what the mirror knows about a pod's life
// cycle (assumed at bind, confirmed by the watch) is state's (state/pod_cache.h), not the model's.
// Thread-safety: value types. Shared as std::shared_ptr<const T> once published in a snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/quantity.h"

namespace gpufair::policy {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };
const char* phaseName(PodPhase phase);
PodPhase parsePhase(std::string_view text);  // unknown text -> kUnknown

using Labels = std::map<std::string, std::string, std::less<>>;

struct Pod {
  std::string uid;
  std::string ns;
  std::string name;
  std::string nodeName;       // spec.nodeName, or the node gpufair assumed at bind; empty: unbound
  std::string schedulerName;  // spec.schedulerName
  // Milli-GPUs the pod is charged (quota counts fractions exactly): the effective nvidia.com/gpu
  // request (see effectiveRequest in request.h) times 1000, or the fraction of one GPU it asks for.
  MilliGpu gpus = 0;
  // Shape of the GPU request. gpuShare in (0, 1000): a fractional pod taking that much of ONE
  // physical GPU (then gpus == gpuShare). gpuShare == 0: a whole-GPU pod taking gpuCount() GPUs
  // that nobody else uses. Set both with setWholeGpus / setGpuShare, or set `gpus` alone for a
  // whole-GPU pod.
  MilliGpu gpuShare = 0;
  // The physical GPU (0-based) a fractional pod runs on: annotation gpufair.io/gpu-index, or the
  // mirror's choice at assume. -1: unknown (the node then places it where the engine would).
  int gpuIndex = -1;
  // Allowed GPU models (annotation gpufair.io/gpu-models); empty: any.
  std::vector<std::string> gpuModels;
  std::int64_t cpuMilli = 0;     // effective cpu request, in millicores
  std::int64_t memoryBytes = 0;  // effective memory request, in bytes
  PodPhase phase = PodPhase::kPending;
  bool terminating = false;  // metadata.deletionTimestamp set
  bool overQuota = false;    // borrowed: label gpufair.io/over-quota=true
  std::optional<Timestamp> created;
  std::optional<Timestamp> started;  // status.startTime
  Labels labels;
  Labels annotations;
  // Queue name resolved by the mirror from the quota config (label gpufair.io/queue or namespace).
  std::string queue;
  // Gang membership (see applyGangLabels): the gang's name, its size, and why the label or the
  // annotation is unusable (then filter refuses the pod with this reason). Not in a gang: gang
  // empty and gangSize 0.
  std::string gang;
  int gangSize = 0;
  std::string gangError;
  // The uid of the owner reference with controller: true (the Job or ReplicaSet that recreates
  // the pod when it is evicted); empty when nothing controls it.
  std::string controller;

  std::string key() const { return ns + "/" + name; }
  bool inGang() const { return !gang.empty(); }
  // "gang:<ns>/<gang>", the holder of the gang's reservations; empty when not in a gang.
  std::string gangKey() const { return gang.empty() ? std::string() : "gang:" + ns + "/" + gang; }
  // "team-b/train", for reasons.
  std::string gangName() const { return ns + "/" + gang; }
  bool isFractional() const { return gpuShare > 0 && gpuShare < kMilliPerGpu; }
  // Whole GPUs a whole-GPU pod takes (rounded up); 0 for a fractional or GPU-less pod.
  int gpuCount() const {
    return isFractional() ? 0 : static_cast<int>((gpus + kMilliPerGpu - 1) / kMilliPerGpu);
  }
  // What the pod needs of each GPU it uses: its share, or a whole GPU; 0 without GPUs.
  MilliGpu perGpu() const { return isFractional() ? gpuShare : (gpus > 0 ? kMilliPerGpu : 0); }
  // How many physical GPUs it uses: 1 for a fractional pod.
  int gpusUsed() const { return isFractional() ? 1 : gpuCount(); }
  void setWholeGpus(int count) {
    gpus = static_cast<MilliGpu>(count) * kMilliPerGpu;
    gpuShare = 0;
  }
  // share in (0, 1000]; 1000 is one whole GPU.
  void setGpuShare(MilliGpu share) {
    gpus = share;
    gpuShare = share >= kMilliPerGpu ? 0 : share;
  }
  // Whether a node with this GPU model may run the pod.
  bool allowsModel(std::string_view model) const;
  // kube-scheduler's accounting: bound and not Succeeded/Failed holds resources, even terminating.
  bool holdsGpus() const {
    return !nodeName.empty() && phase != PodPhase::kSucceeded && phase != PodPhase::kFailed;
  }
  bool isFinished() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }

  // Every field (a field added later is compared too).
  bool operator==(const Pod&) const = default;
};

// Reads the gang label and size annotation into gang, gangSize and gangError. The label without
// the annotation, or a size that is not a whole number in [1, 100000], sets gangError (the pod is
// then refused with that reason instead of being scheduled alone).
void applyGangLabels(Pod& pod);

struct Node {
  std::string name;
  MilliGpu allocatable = 0;    // status.allocatable["nvidia.com/gpu"] in milli-GPUs
  bool unschedulable = false;  // spec.unschedulable
  bool deleting = false;       // metadata.deletionTimestamp set
  Labels labels;
  std::string gpuModel;          // label nvidia.com/gpu.product; empty: unknown
  std::int64_t cpuMilli = 0;     // status.allocatable.cpu in millicores
  std::int64_t memoryBytes = 0;  // status.allocatable.memory in bytes

  bool takesNewPods() const { return !unschedulable && !deleting; }
  // Physical GPUs: allocatable in whole GPUs.
  int gpuCount() const { return static_cast<int>(allocatable / kMilliPerGpu); }
};

}  // namespace gpufair::policy
