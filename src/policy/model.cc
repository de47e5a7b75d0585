#include "gpufair/policy/model.h"

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
