// policy::effectiveRequest: a pod's nvidia.com/gpu request as k8s.io/component-helpers
// resource.PodRequests computes it (counts are milli-GPUs; 1000 = one GPU).
#include "gpufair/policy/request.h"

#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpufair::policy {
namespace {

ContainerGpus app(MilliGpu m) {
  return {m, false};
}
ContainerGpus sidecar(MilliGpu m) {
  return {m, true};
}  // init container, restartPolicy: Always

struct RequestCase {
  std::string name;
  std::vector<ContainerGpus> containers;
  std::vector<ContainerGpus> init;
  MilliGpu overhead;
  MilliGpu want;
};
// gtest prints the case name, not the bytes, when a case fails.
void PrintTo(const RequestCase& c, std::ostream* os) {
  *os << c.name;
}

class EffectiveRequest : public ::testing::TestWithParam<RequestCase> {};

TEST_P(EffectiveRequest, MatchesPodRequests) {
  const RequestCase& c = GetParam();
  EXPECT_EQ(effectiveRequest(c.containers, c.init, c.overhead), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    All, EffectiveRequest,
    ::testing::Values(
        RequestCase{"NoContainers", {}, {}, 0, 0},
        RequestCase{"OneContainer", {app(4000)}, {}, 0, 4000},
        RequestCase{"ContainersAdd", {app(1000), app(2000), app(0)}, {}, 0, 3000},
        RequestCase{"FractionsAddExactly", {app(500), app(250)}, {}, 0, 750},
        RequestCase{"InitBelowSumIsHidden", {app(4000)}, {app(2000)}, 0, 4000},
        RequestCase{"LargestInitWins", {app(1000)}, {app(3000), app(2000)}, 0, 3000},
        RequestCase{"InitContainersDoNotAdd", {app(1000)}, {app(2000), app(2000)}, 0, 2000},
        RequestCase{"OnlyInitContainers", {}, {app(2000)}, 0, 2000},
        RequestCase{"SidecarAddsToContainers", {app(1000)}, {sidecar(1000)}, 0, 2000},
        // A regular init container after a sidecar runs alongside it: 3 + 1.
        RequestCase{"InitAfterSidecarRunsWithIt", {app(1000)}, {sidecar(1000), app(3000)}, 0, 4000},
        // Before the sidecar starts, the init container runs alone: max(3, 1 + 1).
        RequestCase{"InitBeforeSidecarRunsAlone", {app(1000)}, {app(3000), sidecar(1000)}, 0, 3000},
        RequestCase{
            "SidecarsAccumulate", {app(1000)}, {sidecar(1000), sidecar(2000), app(2000)}, 0, 5000},
        RequestCase{"SidecarsOnly", {}, {sidecar(1000), sidecar(1000)}, 0, 2000},
        RequestCase{"OverheadAdds", {app(2000)}, {}, 1000, 3000},
        RequestCase{"OverheadAddsOnTopOfInitPeak", {app(1000)}, {app(4000)}, 500, 4500},
        RequestCase{"OverheadAlone", {}, {}, 250, 250}),
    [](const ::testing::TestParamInfo<RequestCase>& info) { return info.param.name; });

TEST(EffectiveRequestDefaults, OverheadDefaultsToZero) {
  EXPECT_EQ(effectiveRequest({app(2000)}, {sidecar(1000)}), 3000);
}

TEST(EffectiveRequestDefaults, OrderOfRegularContainersDoesNotMatter) {
  const std::vector<ContainerGpus> init = {app(2500), sidecar(500)};
  EXPECT_EQ(effectiveRequest({app(1000), app(2000)}, init),
            effectiveRequest({app(2000), app(1000)}, init));
}

}  // namespace
}  // namespace gpufair::policy
