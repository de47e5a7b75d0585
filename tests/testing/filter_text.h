// A filter answer as text (feasible nodes, failed and unresolvable ones with their reasons, then
// the admission reason), so equivalence tests compare two answers in one EXPECT_EQ with a readable
// difference.
#pragma once

#include <string>
#include <string_view>

#include "gpufair/policy/filter.h"

namespace gpufair::testing {

inline std::string describeFilter(const policy::FilterResult& r) {
  std::string out;
  for (std::string_view n : r.feasible) out += std::string(n) + " ok\n";
  for (const auto& v : r.failed) out += std::string(v.node) + " failed: " + v.reason + "\n";
  for (const auto& v : r.unresolvable)
    out += std::string(v.node) + " unresolvable: " + v.reason + "\n";
  return out + r.admission.status.reason();
}

}  // namespace gpufair::testing
