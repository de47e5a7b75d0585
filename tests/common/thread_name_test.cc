#include "gpufair/common/thread_name.h"

#include <thread>

#include <gtest/gtest.h>

namespace gpufair {
namespace {

TEST(ThreadName, NamesTheCallingThreadOnly) {
  const std::string before = thisThreadName();
  std::string inside;
  std::thread worker([&inside] {
    nameThisThread("gpufair-io");
    inside = thisThreadName();
  });
  worker.join();
  EXPECT_EQ(inside, "gpufair-io");
  EXPECT_EQ(thisThreadName(), before);
}

TEST(ThreadName, CutsToTheKernelsFifteenBytes) {
  std::string inside;
  std::thread worker([&inside] {
    nameThisThread("watch-persistentvolumeclaims");
    inside = thisThreadName();
  });
  worker.join();
  EXPECT_EQ(inside, "watch-persisten");
}

}  // namespace
}  // namespace gpufair
