#include "gpufair/state/ports.h"

namespace gpufair::state {

const char* evictOutcomeName(EvictOutcome outcome) {
  switch (outcome) {
    case EvictOutcome::kEvicted:
      return "evicted";
    case EvictOutcome::kRefused:
      return "refused";
    case EvictOutcome::kNotFound:
      return "not-found";
    case EvictOutcome::kError:
      return "error";
  }
  return "unknown";
}

}  // namespace gpufair::state
