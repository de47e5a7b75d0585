// A private header. /* a block comment naming std::cout and rand() */
#pragma once

#include <thread>  // IMPURE
#include <vector>

namespace gpufair::policy {
namespace {
std::vector<int> cache;  // IMPURE
}  // namespace
thread_local int depth;  // IMPURE
}  // namespace gpufair::policy
