// GPU amounts in the service's JSON answers (/debug/snapshot, /debug/explain): whole GPUs as
// integers, fractions as decimals (2, 0.5).
#pragma once

#include <nlohmann/json.hpp>

#include "gpufair/common/quantity.h"

namespace gpufair::api::detail {

inline nlohmann::json gpusJson(MilliGpu milli) {
  if (milli % kMilliPerGpu == 0) return nlohmann::json(milli / kMilliPerGpu);
  return nlohmann::json(static_cast<double>(milli) / static_cast<double>(kMilliPerGpu));
}

}  // namespace gpufair::api::detail
