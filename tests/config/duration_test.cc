#include "gpufair/config/duration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufair::config {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

struct ValidCase {
  const char* text;
  std::chrono::nanoseconds expected;
};

class GoDurationValid : public ::testing::TestWithParam<ValidCase> {};

TEST_P(GoDurationValid, ParsesAsGoDoes) {
  auto parsed = parseGoDuration(GetParam().text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, GoDurationValid,
    ::testing::Values(ValidCase{"0", 0ns}, ValidCase{"-0", 0ns}, ValidCase{"90s", 90s},
                      ValidCase{"10m", 10min}, ValidCase{"1h30m", 90min}, ValidCase{"1.5h", 90min},
                      ValidCase{"2h45m30.5s", 2h + 45min + 30500ms}, ValidCase{"300ms", 300ms},
                      ValidCase{"250us", 250us}, ValidCase{"250\xC2\xB5s", 250us},
                      ValidCase{"7ns", 7ns}, ValidCase{".5s", 500ms}, ValidCase{"1.s", 1s},
                      ValidCase{"+5m", 5min}, ValidCase{"-1m", -1min}, ValidCase{"0s", 0ns}));

struct InvalidCase {
  const char* text;
  const char* why;
};

class GoDurationInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(GoDurationInvalid, SaysWhatIsWrong) {
  auto parsed = parseGoDuration(GetParam().text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr(GetParam().why));
  EXPECT_THAT(parsed.error(), HasSubstr("\"" + std::string(GetParam().text) + "\""));
}

INSTANTIATE_TEST_SUITE_P(Forms, GoDurationInvalid,
                         ::testing::Values(InvalidCase{"", "empty value"},
                                           InvalidCase{"600", "missing unit"},
                                           InvalidCase{"10x", "unknown unit \"x\""},
                                           InvalidCase{"10 m", "unknown unit \" m\""},
                                           InvalidCase{"m", "expected a number"},
                                           InvalidCase{"1h.m", "expected a number"},
                                           InvalidCase{"10minutes", "unknown unit \"minutes\""},
                                           InvalidCase{"9999999999999999999h", "value too large"},
                                           InvalidCase{"3000000h", "value too large"}));

TEST(GoDurationSeconds, RoundsUpToWholeSeconds) {
  auto parsed = parseGoDurationSeconds("1500ms");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, 2s);
  EXPECT_EQ(*parseGoDurationSeconds("1h30m"), 5400s);
}

TEST(GoDurationSeconds, RejectsNegative) {
  auto parsed = parseGoDurationSeconds("-5m");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("must not be negative"));
}

}  // namespace
}  // namespace gpufair::config
