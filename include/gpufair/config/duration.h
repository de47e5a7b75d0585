// Durations as Go's time.ParseDuration reads them, the form Kubernetes users know from manifests:
// "90s", "10m", "1h30m", "1.5h", "300ms", "0". A sequence of decimal numbers, each with a unit
// (ns, us, µs, ms, s, m, h); a leading sign; "0" alone needs no unit.
// Thread-safety: free functions.
#pragma once

#include <chrono>
#include <string_view>

#include "gpufair/common/status.h"

namespace gpufair::config {

// The exact duration, or an error naming what is wrong ("missing unit in duration \"600\"").
Result<std::chrono::nanoseconds> parseGoDuration(std::string_view text);

// A non-negative duration rounded up to whole seconds (a minimum is never shortened).
Result<std::chrono::seconds> parseGoDurationSeconds(std::string_view text);

}  // namespace gpufair::config
