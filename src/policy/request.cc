#include "gpufair/policy/request.h"

#include <algorithm>

namespace gpufair::policy {

MilliGpu effectiveRequest(const std::vector<ContainerGpus>& containers,
                          const std::vector<ContainerGpus>& initContainers, MilliGpu overhead) {
  MilliGpu sum = 0;
  for (const auto& c : containers) sum += c.request;
  MilliGpu restartable = 0;  // sidecars started so far keep running
  MilliGpu initPeak = 0;
  for (const auto& c : initContainers) {
    MilliGpu during = 0;
    if (c.restartable) {
      sum += c.request;
      restartable += c.request;
      during = restartable;
    } else {
      during = c.request + restartable;
    }
    initPeak = std::max(initPeak, during);
  }
  return std::max(sum, initPeak) + overhead;
}

}  // namespace gpufair::policy
