// Allowed: a module includes itself.
#include "gpufair/common/clock.h"
