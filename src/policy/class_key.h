// What reclaimClassKey (reclaim.h) and consolidationClassKey (consolidation.h) share: a pod's
// request as a key.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "gpufair/policy/model.h"

namespace gpufair::policy::detail {

// The queue, the GPUs, the share, CPU and memory when `cpuMemory`, `more`, and the models.
inline std::string requestKey(const Pod& pod, bool cpuMemory,
                              std::initializer_list<std::int64_t> more = {}) {
  std::string key = pod.queue;
  auto add = [&key](std::int64_t n) {
    key += '\x1f';
    key += std::to_string(n);
  };
  add(pod.gpus);
  add(pod.gpuShare);
  add(cpuMemory ? pod.cpuMilli : 0);
  add(cpuMemory ? pod.memoryBytes : 0);
  for (const std::int64_t n : more) add(n);
  for (const std::string& model : pod.gpuModels) {
    key += '\x1f';
    key += model;
  }
  return key;
}

}  // namespace gpufair::policy::detail
