#include "gpufair/common/status.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpufair {
namespace {

TEST(Status, DefaultIsOkWithoutReason) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.code(), Code::kSuccess);
  EXPECT_EQ(s.reason(), "");
  EXPECT_TRUE(Status::ok().isOk());
}

TEST(Status, FactoriesSetCodeAndReason) {
  const struct {
    Status status;
    Code code;
    const char* name;
  } cases[] = {
      {Status::unschedulable("queue team-a at 30/30 GPUs (limit)"), Code::kUnschedulable,
       "Unschedulable"},
      {Status::unresolvable("pod asks for 9 GPUs, largest node has 8"),
       Code::kUnschedulableAndUnresolvable, "UnschedulableAndUnresolvable"},
      {Status::error("snapshot not ready"), Code::kError, "Error"},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(c.status.isOk()) << c.name;
    EXPECT_EQ(c.status.code(), c.code) << c.name;
    EXPECT_FALSE(c.status.reason().empty()) << c.name;
    EXPECT_STREQ(codeName(c.status.code()), c.name);
  }
  EXPECT_EQ(Status::unschedulable("x y").reason(), "x y");
}

TEST(Status, CodeNames) {
  EXPECT_STREQ(codeName(Code::kSuccess), "Success");
  EXPECT_STREQ(codeName(Code::kUnschedulable), "Unschedulable");
  EXPECT_STREQ(codeName(Code::kUnschedulableAndUnresolvable), "UnschedulableAndUnresolvable");
  EXPECT_STREQ(codeName(Code::kError), "Error");
  EXPECT_STREQ(codeName(static_cast<Code>(42)), "Unknown");
}

TEST(Result, HoldsAValue) {
  Result<std::string> r = std::string("hello");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), "hello");
  EXPECT_EQ(*r, "hello");
  EXPECT_EQ(r->size(), 5u);
  EXPECT_EQ(r.error(), "");
  r.value() += "!";
  EXPECT_EQ(std::move(r).value(), "hello!");
}

TEST(Result, HoldsAnError) {
  auto r = Result<int>::failure("quantity is empty");
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error(), "quantity is empty");
  EXPECT_EQ(r.value(), 0);  // value-initialized, never garbage
}

TEST(Result, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}

TEST(Result, CopiesKeepState) {
  auto failed = Result<std::vector<int>>::failure("bad");
  Result<std::vector<int>> good = std::vector<int>{1, 2};
  auto failedCopy = failed;
  auto goodCopy = good;
  EXPECT_FALSE(failedCopy.ok());
  EXPECT_EQ(failedCopy.error(), "bad");
  ASSERT_TRUE(goodCopy.ok());
  EXPECT_EQ(goodCopy->size(), 2u);
}

}  // namespace
}  // namespace gpufair
