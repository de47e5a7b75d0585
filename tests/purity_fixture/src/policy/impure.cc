#include "gpufair/policy/impure.h"

#include <chrono>
#include <cstdlib>
#include <ctime>  // IMPURE

namespace gpufair::policy {
namespace {

/* A block comment over lines:
   std::chrono::steady_clock::now(), getenv("HOME") */
static int square(int x) {
  return x * x;
}

}  // namespace

int rounds(const Options& options) {
  static int calls = 0;  // IMPURE
  const auto now = options.now;
  auto later = std::chrono::system_clock::now();  // IMPURE
  auto seconds = time(nullptr);                   // IMPURE
  int r = rand();                                 // IMPURE
  std::printf("%d\n", r);                         // IMPURE
  if (const char* home = getenv("HOME")) {        // IMPURE
    spdlog::info("home {}", home);                // IMPURE
  }
  (void)now, (void)later, (void)seconds, (void)calls;
  return square(options.rounds) + kLimit;
}

}  // namespace gpufair::policy
