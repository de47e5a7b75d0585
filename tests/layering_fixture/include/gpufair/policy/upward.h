#pragma once
// Violation in a public header, angle-bracket form.
#include <gpufair/state/ports.h>
