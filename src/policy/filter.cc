// filter and filterPod: which candidates the pod fits on, by name or by resolved position (the
// ranking modes are filter_ranked.cc).
#include "gpufair/policy/filter.h"

#include <cstdint>

#include "gpufair/policy/candidate_positions.h"
#include "gpufair/policy/gang.h"

#include "filter_detail.h"

namespace gpufair::policy {

using detail::filterAt;
using detail::filterFound;
using detail::keepName;

FilterResult filter(const ClusterSnapshot& snapshot, const Pod& pod,
                    std::span<const std::string_view> candidates) {
  if (pod.inGang()) return filterGangMember(snapshot, pod, candidates);
  return filterPod(snapshot, pod, candidates);
}

FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates) {
  return filterFound(
      snapshot, pod, candidates, [&](std::size_t i) { return snapshot.findNode(candidates[i]); }, 0,
      [](std::size_t) { return kOwnShape; }, keepName(candidates));
}

FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates,
                       std::span<const std::ptrdiff_t> positions) {
  return filterAt(snapshot, pod, candidates, positions, keepName(candidates));
}

FilterResult filter(const ClusterSnapshot& snapshot, const Pod& pod,
                    std::span<const std::string_view> candidates,
                    std::span<const std::ptrdiff_t> positions) {
  if (pod.inGang()) return filterGangMember(snapshot, pod, candidates);
  return filterPod(snapshot, pod, candidates, positions);
}

}  // namespace gpufair::policy
