// Allowed: policy -> common, policy -> policy.
#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"
// Violation: policy may not depend on state (an upward include).
#include "gpufair/state/mirror.h"
