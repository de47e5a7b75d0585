// Quantity::parse against k8s.io/apimachinery resource.ParseQuantity, and the rounding of
// Value()/MilliValue(). Expected values were worked out from the upstream algorithm.
#include "gpufair/common/quantity.h"

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

namespace gpufair {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// A readable gtest parameter name from a case label.
template <typename Case>
std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

struct ValidCase {
  std::string name;
  std::string text;
  std::int64_t value;
  std::int64_t milli;
  bool integer;
};
// gtest prints the case name, not the bytes, when a case fails.
void PrintTo(const ValidCase& c, std::ostream* os) {
  *os << c.name;
}

class QuantityParseValid : public ::testing::TestWithParam<ValidCase> {};

TEST_P(QuantityParseValid, ParsesAndRoundsUp) {
  const ValidCase& c = GetParam();
  Result<Quantity> q = Quantity::parse(c.text);
  ASSERT_TRUE(q.ok()) << c.text << ": " << q.error();
  EXPECT_EQ(q->value(), c.value) << c.text;
  EXPECT_EQ(q->milliValue(), c.milli) << c.text;
  EXPECT_EQ(q->isInteger(), c.integer) << c.text;
  EXPECT_EQ(q->text(), c.text);
}

INSTANTIATE_TEST_SUITE_P(
    Plain, QuantityParseValid,
    ::testing::Values(ValidCase{"Two", "2", 2, 2000, true}, ValidCase{"Zero", "0", 0, 0, true},
                      ValidCase{"ZeroWithSuffix", "0Gi", 0, 0, true},
                      ValidCase{"LeadingZeros", "007", 7, 7000, true},
                      ValidCase{"ExplicitPlus", "+3", 3, 3000, true},
                      ValidCase{"Negative", "-1", -1, -1000, true},
                      ValidCase{"NegativeZero", "-0", 0, 0, true},
                      ValidCase{"Fraction", "1.5", 2, 1500, false},
                      ValidCase{"LeadingDot", ".5", 1, 500, false},
                      ValidCase{"TrailingDot", "5.", 5, 5000, true},
                      ValidCase{"TrailingDotWithSuffix", "1.G", 1000000000, 1000000000000, true},
                      ValidCase{"FractionOfZeros", "2.000", 2, 2000, true},
                      ValidCase{"Int64Max", "9223372036854775807", kMax, kMax, true}),
    caseName<ValidCase>);

INSTANTIATE_TEST_SUITE_P(
    DecimalSuffixes, QuantityParseValid,
    ::testing::Values(ValidCase{"Nano", "100n", 1, 1, false}, ValidCase{"Micro", "1u", 1, 1, false},
                      ValidCase{"Milli", "500m", 1, 500, false},
                      ValidCase{"OneMilli", "1m", 1, 1, false},
                      ValidCase{"ThousandMilli", "1000m", 1, 1000, true},
                      ValidCase{"SubMilli", "0.1m", 1, 1, false},
                      ValidCase{"Kilo", "1k", 1000, 1000000, true},
                      ValidCase{"Mega", "1M", 1000000, 1000000000, true},
                      ValidCase{"Giga", "2G", 2000000000, 2000000000000, true},
                      ValidCase{"Tera", "1T", 1000000000000, 1000000000000000, true},
                      ValidCase{"Peta", "1P", 1000000000000000, 1000000000000000000, true},
                      ValidCase{"Exa", "1E", 1000000000000000000, kMax, true},
                      ValidCase{"FractionalKilo", "1.5k", 1500, 1500000, true},
                      ValidCase{"FractionalMilli", "1.5m", 1, 2, false}),
    caseName<ValidCase>);

INSTANTIATE_TEST_SUITE_P(
    BinarySuffixes, QuantityParseValid,
    ::testing::Values(ValidCase{"Kibi", "1Ki", 1024, 1024000, true},
                      ValidCase{"Mebi", "1Mi", 1048576, 1048576000, true},
                      ValidCase{"Gibi", "12Gi", 12884901888, 12884901888000, true},
                      ValidCase{"Tebi", "1Ti", 1099511627776, 1099511627776000, true},
                      ValidCase{"Pebi", "1Pi", 1125899906842624, 1125899906842624000, true},
                      ValidCase{"Exbi", "1Ei", 1152921504606846976, kMax, true},
                      ValidCase{"SevenExbi", "7Ei", 8070450532247928832, kMax, true},
                      ValidCase{"EightExbiSaturates", "8Ei", kMax, kMax, true},
                      ValidCase{"HalfKibiIsWhole", "0.5Ki", 512, 512000, true},
                      ValidCase{"FractionalGibi", "1.5Gi", 1610612736, 1610612736000, true},
                      ValidCase{"TenthKibi", "0.1Ki", 103, 102400, false},
                      ValidCase{"ThousandthKibi", "0.001Ki", 2, 1024, false},
                      ValidCase{"TinyKibi", "0.000000001Ki", 1, 1, false}),
    caseName<ValidCase>);

INSTANTIATE_TEST_SUITE_P(
    Exponents, QuantityParseValid,
    ::testing::Values(ValidCase{"LowerE", "1e3", 1000, 1000000, true},
                      ValidCase{"UpperE", "1E3", 1000, 1000000, true},
                      ValidCase{"PlusExponent", "1e+3", 1000, 1000000, true},
                      ValidCase{"NegativeExponent", "2e-3", 1, 2, false},
                      ValidCase{"UpperNegativeExponent", "1E-2", 1, 10, false},
                      ValidCase{"ZeroExponent", "5e0", 5, 5000, true},
                      ValidCase{"FractionWithExponent", "1.5e1", 15, 15000, true},
                      ValidCase{"ExponentLeadingZero", "1e03", 1000, 1000000, true},
                      ValidCase{"NegativeFractionExponent", "-1.5e1", -15, -15000, true},
                      ValidCase{"Huge", "1e30", kMax, kMax, true},
                      ValidCase{"HugeNegative", "-1e30", kMin, kMin, true},
                      ValidCase{"ExponentBeyondOldLimit", "1e1001", kMax, kMax, true},
                      ValidCase{"ExponentBeyondInt32", "1e9999999999", kMax, kMax, true},
                      ValidCase{"ZeroTimesHugeExponent", "0e999999", 0, 0, true},
                      ValidCase{"VeryNegativeExponent", "1e-1000000", 1, 1, false},
                      ValidCase{"ExponentAtInt64Min", "1e-9223372036854775808", 1, 1, false},
                      ValidCase{"MilliJustFits", "9223372036854775.807", 9223372036854776, kMax,
                                false}),
    caseName<ValidCase>);

// Negative values round away from zero, as Quantity.Value() does for int64 amounts.
INSTANTIATE_TEST_SUITE_P(
    NegativeRounding, QuantityParseValid,
    ::testing::Values(ValidCase{"MinusOneAndAHalf", "-1.5", -2, -1500, false},
                      ValidCase{"MinusHalf", "-500m", -1, -500, false},
                      ValidCase{"MinusTenthMilli", "-0.1m", -1, -1, false},
                      ValidCase{"Int64Min", "-9223372036854775808", kMin, kMin, true},
                      ValidCase{"BelowInt64Min", "-9223372036854775809", kMin, kMin, true}),
    caseName<ValidCase>);

// More digits than the 128-bit mantissa keeps: the dropped digits must still round up.
INSTANTIATE_TEST_SUITE_P(
    LongMantissas, QuantityParseValid,
    ::testing::Values(
        ValidCase{"LongFractionJustAboveOne", "1.0000000000000000000000000000000000000001", 2, 1001,
                  false},
        ValidCase{"LongFractionExactlyOne", "1.0000000000000000000000000000000000000000", 1, 1000,
                  true},
        // 1 + 10^-39, and exactly 1, each written with 40 integer digits.
        ValidCase{"LongIntegerScaledDown", "1" + std::string(38, '0') + "1e-39", 2, 1001, false},
        ValidCase{"LongIntegerScaledExactly", "1" + std::string(39, '0') + "e-39", 1, 1000, true},
        ValidCase{"LongMantissaWithBinarySuffix", "0.12345678901234567890Ki", 127, 126420, false},
        ValidCase{"LongMantissaKi", "123456789012345678901234Ki", kMax, kMax, true}),
    caseName<ValidCase>);

struct InvalidCase {
  std::string name;
  std::string text;
};
void PrintTo(const InvalidCase& c, std::ostream* os) {
  *os << c.name;
}

class QuantityParseInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(QuantityParseInvalid, IsAnErrorNamingTheInput) {
  const InvalidCase& c = GetParam();
  Result<Quantity> q = Quantity::parse(c.text);
  ASSERT_FALSE(q.ok()) << "\"" << c.text << "\" parsed as " << q->milliValue() << "m";
  EXPECT_FALSE(q.error().empty());
  if (!c.text.empty()) {
    EXPECT_NE(q.error().find("\"" + c.text + "\""), std::string::npos) << q.error();
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, QuantityParseInvalid,
    ::testing::Values(
        InvalidCase{"Empty", ""}, InvalidCase{"Letters", "abc"},
        InvalidCase{"TwoDecimalPoints", "1.2.3"}, InvalidCase{"UnknownSuffix", "12Gx"},
        InvalidCase{"ExponentWithoutDigits", "1e"}, InvalidCase{"ExponentSignWithoutDigits", "1e+"},
        InvalidCase{"NegativeExponentWithoutDigits", "-3.01e-"}, InvalidCase{"DoubleSign", "--1"},
        InvalidCase{"PlusMinus", "+-1"}, InvalidCase{"TrailingSpace", "1 "},
        InvalidCase{"LeadingSpace", " 1"}, InvalidCase{"SpaceBeforeSuffix", "1 Ki"},
        InvalidCase{"UpperCaseKibi", "1KI"}, InvalidCase{"LowerCaseKibi", "1ki"},
        InvalidCase{"CapitalKilo", "1K"}, InvalidCase{"BytesSuffix", "1KiB"},
        InvalidCase{"DoubleE", "1ee3"}, InvalidCase{"BareI", "1i"},
        InvalidCase{"FractionBareI", ".5i"}, InvalidCase{"MilliI", "0.1mi"},
        InvalidCase{"AttoLike", "0.1am"}, InvalidCase{"SignInside", "1+1.0M"},
        InvalidCase{"DoubleDotSuffix", "1.1.M"}, InvalidCase{"FractionalExponent", "1e1.5"},
        InvalidCase{"ExponentThenSuffix", "1e3k"}, InvalidCase{"ExponentThenBinary", "1E3Ki"},
        InvalidCase{"DoubleExponentSign", "1e+-3"}, InvalidCase{"Hex", "0x10"},
        InvalidCase{"ExponentOverflowsInt64", "1e99999999999999999999"},
        InvalidCase{"NegativeExponentOverflowsInt64", "1e-9223372036854775809"},
        InvalidCase{"Comma", "1,5"}, InvalidCase{"Underscore", "1_000"},
        InvalidCase{"Infinity", "Inf"}, InvalidCase{"NaN", "NaN"},
        InvalidCase{"MicroSign", "1\u00b5"}, InvalidCase{"FullWidthDigit", "\uff11"},
        InvalidCase{"EmbeddedNul", std::string("1\0", 2)}),
    caseName<InvalidCase>);

// resource.ParseQuantity reads these as zero (its scanner defaults a missing number to "0"), but
// the API server never emits them (it re-serializes canonically, as "0"). gpufair rejects them:
// a typo must never become a zero request.
INSTANTIATE_TEST_SUITE_P(
    StricterThanKubernetes, QuantityParseInvalid,
    ::testing::Values(InvalidCase{"SuffixOnly", "Gi"}, InvalidCase{"DotOnly", "."},
                      InvalidCase{"MinusOnly", "-"}, InvalidCase{"PlusOnly", "+"},
                      InvalidCase{"SignedSuffix", "-Mi"}, InvalidCase{"DotSuffix", ".k"}),
    caseName<InvalidCase>);

TEST(QuantityParse, ErrorMessagesSayWhatIsWrong) {
  EXPECT_EQ(Quantity::parse("").error(), "quantity is empty");
  EXPECT_NE(Quantity::parse("12Gx").error().find("unknown suffix \"Gx\""), std::string::npos);
  EXPECT_NE(Quantity::parse("1.2.3").error().find("more than one decimal point"),
            std::string::npos);
  EXPECT_NE(Quantity::parse("Gi").error().find("no digits"), std::string::npos);
}

TEST(QuantityParse, IsNegativeIgnoresNegativeZero) {
  EXPECT_TRUE(Quantity::parse("-1m")->isNegative());
  EXPECT_TRUE(Quantity::parse("-0.000000001n")->isNegative());
  EXPECT_FALSE(Quantity::parse("-0")->isNegative());
  EXPECT_FALSE(Quantity::parse("-0.000Gi")->isNegative());
  EXPECT_FALSE(Quantity::parse("+5")->isNegative());
}

TEST(QuantityParse, EveryDecimalSuffixScalesByItsPower) {
  const struct {
    const char* suffix;
    int exponent;
  } suffixes[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
                  {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  for (const auto& s : suffixes) {
    // 7<suffix> must equal 7e<exponent> in every rounding.
    auto a = Quantity::parse(std::string("7") + s.suffix);
    auto b = Quantity::parse("7e" + std::to_string(s.exponent));
    ASSERT_TRUE(a.ok() && b.ok()) << s.suffix;
    EXPECT_EQ(a->value(), b->value()) << s.suffix;
    EXPECT_EQ(a->milliValue(), b->milliValue()) << s.suffix;
    EXPECT_EQ(a->isInteger(), b->isInteger()) << s.suffix;
  }
}

TEST(QuantityParse, MilliValueIsCeilingOfThousandths) {
  // Every 3-decimal value in [0, 2] survives the round trip through its text exactly.
  for (int milli = 0; milli <= 2000; ++milli) {
    const std::string text = std::to_string(milli / 1000) + "." +
                             std::string(3 - std::to_string(milli % 1000).size(), '0') +
                             std::to_string(milli % 1000);
    auto q = Quantity::parse(text);
    ASSERT_TRUE(q.ok()) << text;
    EXPECT_EQ(q->milliValue(), milli) << text;
    EXPECT_EQ(q->value(), (milli + 999) / 1000) << text;
    EXPECT_EQ(q->isInteger(), milli % 1000 == 0) << text;
    EXPECT_EQ(Quantity::parse(std::to_string(milli) + "m")->milliValue(), milli);
  }
}

struct FormatCase {
  std::string name;
  MilliGpu milli;
  std::string text;
};
void PrintTo(const FormatCase& c, std::ostream* os) {
  *os << c.name;
}

class FormatGpus : public ::testing::TestWithParam<FormatCase> {};

TEST_P(FormatGpus, PrintsShortestDecimal) {
  EXPECT_EQ(formatGpus(GetParam().milli), GetParam().text);
}

INSTANTIATE_TEST_SUITE_P(
    All, FormatGpus,
    ::testing::Values(FormatCase{"Zero", 0, "0"}, FormatCase{"One", 1000, "1"},
                      FormatCase{"TwoAndAHalf", 2500, "2.5"}, FormatCase{"Quarter", 250, "0.25"},
                      FormatCase{"OneMilli", 1, "0.001"}, FormatCase{"Thirty", 30000, "30"},
                      FormatCase{"TrailingZeroTrimmed", 1230, "1.23"},
                      FormatCase{"NegativeHalf", -500, "-0.5"}, FormatCase{"MinusTwo", -2000, "-2"},
                      FormatCase{"Max", kMax, "9223372036854775.807"},
                      FormatCase{"Min", kMin, "-9223372036854775.808"}),
    caseName<FormatCase>);

}  // namespace
}  // namespace gpufair
