#include "gpufair/policy/reservation.h"

#include <algorithm>
#include <cstdint>

namespace gpufair::policy {

std::string replacementHolder(const Pod& pod) {
  if (pod.controller.empty()) return {};
  // FNV-1a over the labels (sorted: Labels is an ordered map), key and value separated by NULs.
  std::uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](std::string_view text) {
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    h ^= 0;
    h *= 1099511628211ULL;
  };
  for (const auto& [key, value] : pod.labels) {
    if (key.starts_with("gpufair.io/")) continue;
    mix(key);
    mix(value);
  }
  std::string digest(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    digest[static_cast<std::size_t>(i)] = "0123456789abcdef"[h & 15];
  return std::string(kReplacementHolderPrefix) + pod.ns + "/" + pod.controller + "/" + digest;
}

bool isHolder(const Pod& pod, std::string_view holder) {
  if (holder.empty()) return false;
  if (holder == pod.uid) return true;
  if (holder.starts_with(kReplacementHolderPrefix)) {
    return !pod.controller.empty() && holder == replacementHolder(pod);
  }
  if (pod.gang.empty() || !holder.starts_with(kGangHolderPrefix)) return false;
  holder.remove_prefix(kGangHolderPrefix.size());
  return holder.size() == pod.ns.size() + 1 + pod.gang.size() && holder.starts_with(pod.ns) &&
         holder[pod.ns.size()] == '/' && holder.ends_with(pod.gang);
}

bool holdsAny(const Pod& pod, std::span<const Reservation> reservations) {
  return std::any_of(reservations.begin(), reservations.end(),
                     [&](const Reservation& r) { return isHolder(pod, r.holder); });
}

std::string describe(const Reservation& r) {
  std::string text = formatGpus(r.gpus) + (r.gpus == kMilliPerGpu ? " GPU" : " GPUs") +
                     " reserved for " + (r.holderName.empty() ? r.holder : r.holderName);
  if (!r.reason.empty()) text += " (" + r.reason + ")";
  return text;
}

}  // namespace gpufair::policy
