// "fgdm": fgd made aware of GPU models and of what is left free (gpufair's default strategy).
//
// fgd (fragmentation.h, Weng et al., ATC'23) ranks a node by how much the placement grows the
// node's fragmentation against the target workload, quantized as the paper's simulator does
// (floor(100 * sigmoid(-dF / 1000))), and leaves the many resulting ties to chance. fgdm keeps
// that first objective and adds:
//   1. Model scarcity. Each restricted shape s of the workload (one that allows only some GPU
//      models) asks w_s * gpus_s of the GPUs still free on its models; spread over them by what
//      is free, GPU model X carries pressure rho_X = sum over restricted s allowing X of
//      w_s * gpus_s / free(s), relative to the workload's demand per free GPU of the cluster.
//      A pod placed on X costs scarcityWeight * rho_X * its milli-GPUs more fragmentation
//      growth, so pods that can run anywhere keep off the GPUs that restricted pods will need, and
//      more so as those GPUs run out. The term is the same on every node of one model: a pod
//      restricted to one model is not moved by it, and without restricted shapes fgdm is fgd.
//   2. Ties (equal quantized scores) of GPU pods broken by the growth of CPU-stranded GPUs: the
//      workload's GPU shapes ask r milli-CPU per milli-GPU (their CPU over their GPUs, weighted
//      by popularity), so a node with f free milli-GPUs and c free milli-CPU can feed only c / r
//      of them; the rest, stranded = max(0, f - c / r), will go unused however the next pods
//      are shaped. Among ties, the node where the pod grows that the least wins: a pod asking
//      less CPU per GPU than r goes where CPU is short (and frees the CPU-rich nodes for pods
//      that need their CPU), a CPU-hungry one where CPU is plentiful. Nodes it strands nothing
//      on stay tied (the caller's random tie-break, as fgd leaves them).
//   3. Ties of pods without GPUs (their delta is 0 wherever the CPU and memory they take strand
//      no GPU) broken by best fit: the node with the fewest free GPUs (as a fraction of the
//      node's), so the CPU such a pod takes strands the fewest GPUs.
//   4. While CPU binds (the cluster's CPU allocated fraction >= capacityCpuBound x its GPU
//      allocated fraction), a GPU pod also pays for the workload's placeable capacity it takes
//      from the node: over the capacityShapes GPU shapes with the most GPU demand (weight x
//      GPUs), copies_s(node) is how many pods of shape s the node's free GPUs, CPU and memory
//      hold at once, and the loss is sum_s weight_s x milli-GPUs_s x (copies_s before - after).
//      capacityWeight x that loss is added to the growth before quantization. A pod that takes
//      CPU a CPU-heavy shape needs, where that CPU is what limits the shape, costs more than one
//      that takes GPUs the node's CPU could not feed anyway (what fgd's fragmentation, which
//      only asks whether one copy still fits, cannot tell while the node keeps room for one).
//   Optional, off by default (capacityGpuLess): a pod without GPUs pays term 4 too, for the CPU
//   and memory it takes (while CPU binds, CPU taken from a node whose CPU limits a GPU shape
//   costs GPU capacity). It matters only where gpufair places such pods (the paper protocol;
//   serve leaves them to kube-scheduler). Measured mixed (bench/RESULTS.md, "fgdm on fresh
//   family draws and a CPU-heavy family"): +0.8 on cpu235, -0.3 on cpu250 and cpu300.
//   Optional, off by default (measured worse, bench/RESULTS.md "fgdm with CPU-stranding ties"):
//   best fit for every pod's ties (bestFitTies), and for GPU pods while the cluster's CPU is
//   as allocated as its GPUs (cpuBoundRatio > 0: CPU allocated fraction >= cpuBoundRatio x GPU
//   allocated fraction), after the stranding term.
// The workload is the one given at construction, else the snapshot's (serve learns it online),
// else the pod alone. Pure; thread-safety: stateless and const, one instance serves all threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/fragmentation.h"
#include "gpufair/policy/scorer.h"

namespace gpufair::policy {

struct FgdmTuning {
  double scarcityWeight = 1.0;  // milli-GPUs of growth per milli-GPU placed at relative pressure 1
  bool cpuStrandTies = true;    // ties of GPU pods: least growth of CPU-stranded GPUs (see 2.)
  bool bestFitTies = false;     // ties of every pod: least free GPU left on the node
  bool gpuLessBestFitTies = true;  // ties of pods without GPUs: least free GPU on the node
  double cpuBoundRatio = 0;        // best fit for GPU pods' ties while CPU binds; <= 0: never
  double capacityWeight = 0.5;     // the placeable-capacity term (see 4.); 0: off
  double capacityCpuBound = 0.95;  // ... only while CPU binds at this ratio; <= 0: always
  int capacityShapes = 16;         // the shapes it counts, by GPU demand
  bool capacityGpuLess = false;    // ... pods without GPUs (with CPU or memory) pay it too
};

// The milli-CPU the workload's GPU shapes ask per milli-GPU (popularity-weighted; shapes without
// GPUs left out), and the free milli-GPUs of a node that its free CPU cannot feed at that ratio:
// max(0, free milli-GPUs - free milli-CPU / ratio); 0 when the ratio is 0. Exposed for tests.
double cpuPerGpu(const Workload& workload);
double cpuStrandedGpus(const NodeState& node, double cpuPerGpu);

// Placeable capacity (see 4.) that placing `pod` on `node` takes away, in milli-GPUs: over the
// `shapes` GPU shapes of `workload` with most weight x GPUs, weight x milli-GPUs x (copies the
// node holds now - copies it holds after). CPU and memory count when `options` measures them.
// A whole-GPU pod takes the lowest fully free GPUs, a fractional one its best-fit GPU.
// Exposed for tests.
double placeableCapacityLoss(const NodeState& node, const Pod& pod, const Workload& workload,
                             const FitOptions& options, int shapes = 16);

ScorerPtr makeFgdmScorer(WorkloadPtr workload = nullptr, FgdmTuning tuning = {});

// Relative pressure of restricted demand on each GPU model of the snapshot's nodes (see above),
// over free GPUs (byFree) or over allocatable ones: parallel to `models` (distinct gpuModel values
// of nodes taking new pods, sorted); 0 for a model without GPUs to count. Exposed for tests.
struct ModelPressure {
  std::vector<std::string> models;
  std::vector<double> pressure;
  double of(std::string_view model) const;
};
ModelPressure modelPressure(const ClusterSnapshot& snapshot, const Workload& workload,
                            bool byFree = true);

}  // namespace gpufair::policy
