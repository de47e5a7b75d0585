#include "gpufair/policy/model.h"

#include <charconv>

#include "gpufair/common/labels.h"

namespace gpufair::policy {

const char* phaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

PodPhase parsePhase(std::string_view text) {
  if (text == "Pending" || text.empty()) return PodPhase::kPending;
  if (text == "Running") return PodPhase::kRunning;
  if (text == "Succeeded") return PodPhase::kSucceeded;
  if (text == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

}  // namespace gpufair::policy

namespace gpufair::policy {

bool Pod::allowsModel(std::string_view model) const {
  if (gpuModels.empty()) return true;
  for (const auto& m : gpuModels) {
    if (m == model) return true;
  }
  return false;
}

}  // namespace gpufair::policy

namespace gpufair::policy {

void applyGangLabels(Pod& pod) {
  pod.gang.clear();
  pod.gangSize = 0;
  pod.gangError.clear();
  const auto label = pod.labels.find(kGangLabel);
  if (label == pod.labels.end() || label->second.empty()) return;
  pod.gang = label->second;
  const auto size = pod.annotations.find(kGangSizeAnnotation);
  if (size == pod.annotations.end()) {
    pod.gangError = "pod " + pod.key() + " is in gang " + pod.gang + " (label " + kGangLabel +
                    ") but has no annotation " + kGangSizeAnnotation +
                    " saying how many pods the "
                    "gang has";
    return;
  }
  std::string_view text = size->second;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  constexpr int kMaxGangSize = 100000;
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < 1 ||
      n > kMaxGangSize) {
    pod.gangError = "annotation " + std::string(kGangSizeAnnotation) + " of pod " + pod.key() +
                    ": \"" + size->second + "\" is not a whole number from 1 to " +
                    std::to_string(kMaxGangSize);
    return;
  }
  pod.gangSize = n;
}

}  // namespace gpufair::policy
