// A public header: reads the clock through the injected interface's default, SystemClock, or
// time().
#pragma once

#include <chrono>
#include <iostream>  // IMPURE
#include <string>

#include "gpufair/common/clock.h"

namespace gpufair::policy {

constexpr int kLimit = 3;
const std::string kName = "printf(\"not a call\") time()";
extern int requestCount;  // IMPURE
int evaluations = 0;      // IMPURE

struct Options {
  Timestamp now{};
  int rounds = 0;
  static int instances;  // IMPURE
  static Options defaults();
};

inline Timestamp stamp() {
  return SystemClock().now();  // IMPURE
}

bool operator==(const Options& a, const Options& b);

}  // namespace gpufair::policy
