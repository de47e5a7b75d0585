// Shared helpers for the codec tests.
#pragma once

#include <chrono>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"

namespace gpufair::codec::testing {

// A file under tests/codec/testdata.
inline std::string testdata(const std::string& name) {
  const std::string path = std::string(GPUFAIR_SOURCE_DIR) + "/tests/codec/testdata/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// UTC wall-clock time as a Timestamp.
inline Timestamp utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  using namespace std::chrono;
  return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

// Fails unless r is an error whose message contains every one of parts.
template <typename T>
::testing::AssertionResult failsWith(const Result<T>& r, std::initializer_list<std::string> parts) {
  if (r.ok()) return ::testing::AssertionFailure() << "decoded without error";
  for (const auto& part : parts) {
    if (r.error().find(part) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "error \"" << r.error() << "\" lacks \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace gpufair::codec::testing
