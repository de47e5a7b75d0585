// What reclaimClassKey (reclaim.h) and consolidationClassKey (consolidation.h) share: whether a
// pod holds a reservation (a holder may use what is held for it, so the planners read more of it
// than its request), and a pod's request as a key.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "gpufair/policy/reservation.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::detail {

inline bool holdsReservation(const ClusterSnapshot& snapshot, const Pod& pod) {
  for (const Reservation& r : snapshot.reservations()) {
    if (isHolder(pod, r.holder)) return true;
  }
  return false;
}

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
