// parseTimestamp: RFC 3339 as Kubernetes writes it and Go's time.Parse(time.RFC3339) reads it.
#include <chrono>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"

#include "codec_testing.h"

namespace gpufair::codec {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using testing::utc;

struct ValidCase {
  std::string name;
  std::string text;
  Timestamp want;
};
// gtest prints the case name, not the bytes, when a case fails.
void PrintTo(const ValidCase& c, std::ostream* os) {
  *os << c.name;
}

class ParseTimestampValid : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ParseTimestampValid, Parses) {
  Result<Timestamp> t = parseTimestamp(GetParam().text);
  ASSERT_TRUE(t.ok()) << GetParam().text << ": " << t.error();
  EXPECT_EQ(*t, GetParam().want) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    All, ParseTimestampValid,
    ::testing::Values(
        ValidCase{"Utc", "2026-11-22T10:00:00Z", utc(2026, 11, 22, 10)},
        // RFC 3339 allows lower-case t and z (Go does not; the API server never writes them).
        ValidCase{"LowerCaseSeparators", "2026-11-22t10:00:00z", utc(2026, 11, 22, 10)},
        ValidCase{"Nanoseconds", "2026-11-22T10:00:00.123456789Z",
                  utc(2026, 11, 22, 10) + nanoseconds(123456789)},
        ValidCase{"HalfSecond", "2026-11-22T10:00:00.5Z",
                  utc(2026, 11, 22, 10) + milliseconds(500)},
        ValidCase{"MicrosecondsAsKubernetesMicroTime", "2026-11-22T10:00:00.000001Z",
                  utc(2026, 11, 22, 10) + nanoseconds(1000)},
        ValidCase{"MoreThanNineDigitsTruncated", "2026-11-22T10:00:00.1234567899Z",
                  utc(2026, 11, 22, 10) + nanoseconds(123456789)},
        ValidCase{"PositiveOffset", "2026-11-22T12:00:00+02:00", utc(2026, 11, 22, 10)},
        ValidCase{"NegativeOffset", "2026-11-22T05:00:00-05:00", utc(2026, 11, 22, 10)},
        ValidCase{"HalfHourOffset", "2026-11-22T15:30:00+05:30", utc(2026, 11, 22, 10)},
        ValidCase{"ZeroOffset", "2026-11-22T10:00:00+00:00", utc(2026, 11, 22, 10)},
        ValidCase{"NegativeZeroOffset", "2026-11-22T10:00:00-00:00", utc(2026, 11, 22, 10)},
        ValidCase{"OffsetCrossesMidnight", "2026-11-22T01:00:00+02:00", utc(2026, 11, 21, 23)},
        ValidCase{"OffsetCrossesYear", "2026-12-31T23:00:00-02:00", utc(2027, 1, 1, 1)},
        ValidCase{"FractionWithOffset", "2026-11-22T12:00:00.25+02:00",
                  utc(2026, 11, 22, 10) + milliseconds(250)},
        ValidCase{"LeapDay", "2024-02-29T00:00:00Z", utc(2024, 2, 29)},
        ValidCase{"LeapDayCentury400", "2000-02-29T23:59:59Z", utc(2000, 2, 29, 23, 59, 59)},
        ValidCase{"LastSecondOfYear", "2026-12-31T23:59:59Z", utc(2026, 12, 31, 23, 59, 59)},
        ValidCase{"Epoch", "1970-01-01T00:00:00Z", Timestamp{}},
        ValidCase{"BeforeEpoch", "1969-12-31T23:59:59Z", Timestamp{} - std::chrono::seconds(1)},
        ValidCase{"FarFuture", "2262-01-01T00:00:00Z", utc(2262, 1, 1)}),
    [](const auto& info) { return info.param.name; });

struct InvalidCase {
  std::string name;
  std::string text;
};
void PrintTo(const InvalidCase& c, std::ostream* os) {
  *os << c.name;
}

class ParseTimestampInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ParseTimestampInvalid, IsAnError) {
  Result<Timestamp> t = parseTimestamp(GetParam().text);
  ASSERT_FALSE(t.ok()) << GetParam().text;
  EXPECT_NE(t.error().find("\"" + GetParam().text + "\""), std::string::npos) << t.error();
  EXPECT_NE(t.error().find("RFC 3339"), std::string::npos) << t.error();
}

INSTANTIATE_TEST_SUITE_P(
    All, ParseTimestampInvalid,
    ::testing::Values(InvalidCase{"Empty", ""}, InvalidCase{"Word", "yesterday"},
                      InvalidCase{"DateOnly", "2026-11-22"},
                      InvalidCase{"MissingZone", "2026-11-22T10:00:00"},
                      InvalidCase{"MissingZoneWithFraction", "2026-11-22T10:00:00.5"},
                      InvalidCase{"MissingSeconds", "2026-11-22T10:00Z"},
                      InvalidCase{"SpaceSeparator", "2026-11-22 10:00:00Z"},
                      InvalidCase{"MonthZero", "2026-00-22T10:00:00Z"},
                      InvalidCase{"MonthThirteen", "2026-13-22T10:00:00Z"},
                      InvalidCase{"DayZero", "2026-11-00T10:00:00Z"},
                      InvalidCase{"DayThirtyTwo", "2026-01-32T10:00:00Z"},
                      InvalidCase{"April31", "2026-04-31T10:00:00Z"},
                      InvalidCase{"Feb30", "2024-02-30T10:00:00Z"},
                      InvalidCase{"Feb29NonLeap", "2026-02-29T10:00:00Z"},
                      InvalidCase{"Feb29Century", "1900-02-29T10:00:00Z"},
                      InvalidCase{"Hour24", "2026-11-22T24:00:00Z"},
                      InvalidCase{"Minute60", "2026-11-22T10:60:00Z"},
                      InvalidCase{"LeapSecond", "2026-12-31T23:59:60Z"},
                      InvalidCase{"OneDigitMonth", "2026-1-22T10:00:00Z"},
                      InvalidCase{"LetterInYear", "20x6-11-22T10:00:00Z"},
                      InvalidCase{"SignInDigits", "2026-+1-22T10:00:00Z"},
                      InvalidCase{"EmptyFraction", "2026-11-22T10:00:00.Z"},
                      InvalidCase{"CommaFraction", "2026-11-22T10:00:00,5Z"},
                      InvalidCase{"OffsetWithoutColon", "2026-11-22T10:00:00+0200"},
                      InvalidCase{"OffsetHoursOnly", "2026-11-22T10:00:00+02"},
                      InvalidCase{"OffsetHour24", "2026-11-22T10:00:00+24:00"},
                      InvalidCase{"OffsetMinute60", "2026-11-22T10:00:00+02:60"},
                      InvalidCase{"OffsetLetters", "2026-11-22T10:00:00+ab:cd"},
                      InvalidCase{"ZoneName", "2026-11-22T10:00:00UTC"},
                      InvalidCase{"DoubleZ", "2026-11-22T10:00:00ZZ"},
                      InvalidCase{"TrailingSpace", "2026-11-22T10:00:00Z "},
                      InvalidCase{"LeadingSpace", " 2026-11-22T10:00:00Z"},
                      InvalidCase{"TrailingGarbage", "2026-11-22T10:00:00+02:00x"},
                      InvalidCase{"EmbeddedNul", std::string("2026-11-22T10:00:00\0Z", 21)}),
    [](const auto& info) { return info.param.name; });

TEST(ParseTimestamp, OffsetsCompareEqualToUtc) {
  auto a = parseTimestamp("2026-11-22T12:00:00.123456789+02:00");
  auto b = parseTimestamp("2026-11-22T10:00:00.123456789Z");
  auto c = parseTimestamp("2026-11-22T06:30:00.123456789-03:30");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*c, *b);
}

TEST(ParseTimestamp, OrdersByInstantNotText) {
  // Later wall-clock text, earlier instant.
  auto early = parseTimestamp("2026-11-22T11:00:00+02:00");
  auto late = parseTimestamp("2026-11-22T10:00:00Z");
  ASSERT_TRUE(early.ok() && late.ok());
  EXPECT_LT(*early, *late);
}

TEST(ParseTimestamp, EveryDayOfALeapYear) {
  const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  Timestamp previous = utc(2023, 12, 31);
  for (int m = 1; m <= 12; ++m) {
    for (int d = 1; d <= 32; ++d) {
      char text[32];
      std::snprintf(text, sizeof text, "2024-%02d-%02dT00:00:00Z", m, d);
      auto t = parseTimestamp(text);
      if (d > days[m - 1]) {
        EXPECT_FALSE(t.ok()) << text;
        continue;
      }
      ASSERT_TRUE(t.ok()) << text << ": " << t.error();
      EXPECT_EQ(*t - previous, std::chrono::hours(24)) << text;
      previous = *t;
    }
  }
}

TEST(ParseTimestamp, OutsideTimestampRangeIsAnError) {
  // Timestamp holds int64 nanoseconds: roughly 1677-09-21 to 2262-04-11.
  for (const char* text : {"9999-12-31T23:59:59Z", "2263-01-01T00:00:00Z", "0000-01-01T00:00:00Z",
                           "1600-01-01T00:00:00+01:00"}) {
    auto t = parseTimestamp(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_NE(t.error().find("out of range"), std::string::npos) << t.error();
  }
  EXPECT_TRUE(parseTimestamp("1700-01-01T00:00:00Z").ok());
  EXPECT_TRUE(parseTimestamp("2262-04-10T00:00:00Z").ok());
}

}  // namespace
}  // namespace gpufair::codec
