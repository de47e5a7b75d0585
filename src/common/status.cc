#include "gpufair/common/status.h"

namespace gpufair {

const char* codeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kError:
      return "Error";
  }
  return "Unknown";
}

}  // namespace gpufair
