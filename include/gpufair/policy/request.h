// A pod's effective GPU request, computed as Kubernetes computes a pod's resource requests
// (k8s.io/component-helpers resource.PodRequests): the sum over containers, raised to the largest
// init container's request (init containers run one at a time), where restartable init containers
// ("sidecars", restartPolicy: Always) keep running and so add to both; plus pod overhead.
// A container's request defaults to its limit when only the limit is set, as the API server does.
#pragma once

#include <vector>

#include "gpufair/common/quantity.h"

namespace gpufair::policy {

struct ContainerGpus {
  MilliGpu request = 0;
  bool restartable = false;  // an init container with restartPolicy: Always
};

MilliGpu effectiveRequest(const std::vector<ContainerGpus>& containers,
                          const std::vector<ContainerGpus>& initContainers, MilliGpu overhead = 0);

}  // namespace gpufair::policy
