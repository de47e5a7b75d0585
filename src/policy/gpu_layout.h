// Per-GPU layout of the pods on one node, shared by NodeState (snapshot.cc) and UndoLog.
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::layout_detail {

// The GPU with the least free room that still has `share` free (lowest index among equals); -1.
int bestFitGpu(std::span<const MilliGpu> used, MilliGpu share);
// The least used GPU (lowest index among equals); `used` must not be empty.
int leastUsedGpu(std::span<const MilliGpu> used);
// The `count` emptiest GPUs (lowest index among equals), at most used.size() of them, into `out`.
void emptiestGpus(std::span<const MilliGpu> used, int count, std::vector<int>& out);
// Adds the GPUs of `pods` (sorted by uid) to `used` (one entry per physical GPU), as NodeState
// places them: fractional pods with a known GPU, then whole-GPU pods on the emptiest GPUs, then
// fractional pods whose GPU is unknown where best fit puts them. Pods not holding GPUs are skipped.
void layoutGpus(std::span<const PodPtr> pods, std::vector<MilliGpu>& used);

}  // namespace gpufair::policy::layout_detail
