// The names gpufair reads and writes on Kubernetes objects: resources, labels and annotations.
// They are the wire users see (README "Interfaces"); the codec reads them into the model types,
// the binder writes them, and the engine only names them in its reasons and in a few label rules
// (queue, gang). Kept here, below every module, so each reads one definition.
// Thread-safety: constants.
#pragma once

namespace gpufair {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";
inline constexpr const char* kQueueLabel = "gpufair.io/queue";
// Written at bind on a borrowed (over-quota) pod; removed when its queue is back within deserved.
inline constexpr const char* kOverQuotaLabel = "gpufair.io/over-quota";
// Fractional GPUs: a pod without an nvidia.com/gpu request asks for part of one GPU with exactly
// one of these annotations: gpu-fraction "0.5" (of one GPU, in (0, 1]) or gpu-milli "500" (in
// (0, 1000]). The physical GPU a fractional pod was given is the annotation gpu-index ("0", "1",
// ...), written by the binder from state::AssumeOutcome::gpuIndex.
inline constexpr const char* kGpuFractionAnnotation = "gpufair.io/gpu-fraction";
inline constexpr const char* kGpuMilliAnnotation = "gpufair.io/gpu-milli";
// The same request as an extended resource (resources.limits or requests, "500"), which is how a
// fractional pod reaches gpufair when the scheduler's extender config lists it in managedResources
// (with ignoredByScheduler: true; the kubelet ignores extended resources its node does not have).
inline constexpr const char* kGpuMilliResource = "gpufair.io/gpu-milli";
inline constexpr const char* kGpuIndexAnnotation = "gpufair.io/gpu-index";
// Allowed GPU models of a pod: "V100M16|V100M32" (absent or empty: any model).
inline constexpr const char* kGpuModelsAnnotation = "gpufair.io/gpu-models";
// A node's GPU model, as NVIDIA's GPU feature discovery labels it.
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
// Gangs (all or nothing): pods of one namespace labelled gpufair.io/gang=NAME are one job of
// gpufair.io/gang-size members (annotation, "N" >= 1).
inline constexpr const char* kGangLabel = "gpufair.io/gang";
inline constexpr const char* kGangSizeAnnotation = "gpufair.io/gang-size";
// Consolidation may move a pod labelled gpufair.io/movable: "true" (its workload resumes from a
// checkpoint): it is evicted and its controller's replacement is steered to another node.
inline constexpr const char* kMovableLabel = "gpufair.io/movable";

}  // namespace gpufair
