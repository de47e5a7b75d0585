#include "gpufair/policy/reservation.h"

namespace gpufair::policy {

bool isHolder(const Pod& pod, std::string_view holder) {
  if (holder.empty()) return false;
  if (holder == pod.uid) return true;
  if (pod.gang.empty() || !holder.starts_with(kGangHolderPrefix)) return false;
  holder.remove_prefix(kGangHolderPrefix.size());
  return holder.size() == pod.ns.size() + 1 + pod.gang.size() && holder.starts_with(pod.ns) &&
         holder[pod.ns.size()] == '/' && holder.ends_with(pod.gang);
}

std::string describe(const Reservation& r) {
  std::string text = formatGpus(r.gpus) + (r.gpus == kMilliPerGpu ? " GPU" : " GPUs") +
                     " reserved for " + (r.holderName.empty() ? r.holder : r.holderName);
  if (!r.reason.empty()) text += " (" + r.reason + ")";
  return text;
}

}  // namespace gpufair::policy
