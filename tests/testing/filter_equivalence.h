// For tests that a fast filter or ranking path answers as the plain one does: the pod kinds each
// such test asks about, and a filter answer as text, so two answers compare in one EXPECT_EQ with
// a readable difference.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/filter.h"

#include "testing/builders.h"

namespace gpufair::testing {

// Whole GPUs (1, 2 with CPU, 4 from another pod name), a share of one GPU, a GPU model
// restriction, CPU only; all in queue team-b. Each test adds the kinds its path treats apart.
inline std::vector<policy::Pod> filterEquivalencePods() {
  return {
      MakePod("team-b", "p").gpus(1),
      MakePod("team-b", "p").gpus(2).cpu(8),
      MakePod("team-b", "other").gpus(4),
      MakePod("team-b", "p").share(0.5),
      MakePod("team-b", "p").gpus(1).models({"A100"}),
      MakePod("team-b", "p").cpu(4),
  };
}

// Feasible nodes, failed and unresolvable ones with their reasons, then the admission reason.
inline std::string describeFilter(const policy::FilterResult& r) {
  std::string out;
  for (std::string_view n : r.feasible) out += std::string(n) + " ok\n";
  for (const auto& v : r.failed) out += std::string(v.node) + " failed: " + v.reason + "\n";
  for (const auto& v : r.unresolvable)
    out += std::string(v.node) + " unresolvable: " + v.reason + "\n";
  return out + r.admission.status.reason();
}

}  // namespace gpufair::testing
