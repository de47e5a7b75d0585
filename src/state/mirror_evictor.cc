#include "gpufair/state/mirror_evictor.h"

namespace gpufair::state {

EvictResult MirrorEvictor::evict(const policy::Pod& pod, const std::string& /*reason*/) {
  auto current = mirror_.findPod(pod.uid);
  if (current == nullptr || current->isFinished()) {
    return {EvictOutcome::kNotFound, "pod " + pod.key() + " is gone"};
  }
  mirror_.deletePod(pod.uid);
  return {EvictOutcome::kEvicted, ""};
}

}  // namespace gpufair::state
