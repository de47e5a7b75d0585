#include "gpufair/config/duration.h"

#include <cstdint>
#include <limits>
#include <string>

namespace gpufair::config {
namespace {

using Nanos = std::chrono::nanoseconds;

struct Unit {
  std::string_view name;
  std::uint64_t nanos;
};
constexpr Unit kUnits[] = {
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // U+00B5 micro sign
    {"\xCE\xBCs", 1'000},  // U+03BC Greek mu
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
};

Result<Nanos> fail(std::string_view text, std::string_view what) {
  return Result<Nanos>::failure(std::string(what) + " in duration \"" + std::string(text) +
                                "\" (expected e.g. 90s, 10m, 1h30m)");
}

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

Result<Nanos> parseGoDuration(std::string_view text) {
  constexpr std::uint64_t kMax =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Nanos{0};
  if (s.empty()) return fail(text, "empty value");

  std::uint64_t total = 0;
  while (!s.empty()) {
    // The number: digits, optionally a fraction.
    std::uint64_t whole = 0;
    bool overflow = false;
    std::size_t i = 0;
    for (; i < s.size() && isDigit(s[i]); ++i) {
      if (whole > (kMax - static_cast<std::uint64_t>(s[i] - '0')) / 10) overflow = true;
      if (!overflow) whole = whole * 10 + static_cast<std::uint64_t>(s[i] - '0');
    }
    bool hasWhole = i > 0;
    std::uint64_t fraction = 0;
    double scale = 1;
    bool hasFraction = false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      std::size_t start = i;
      for (; i < s.size() && isDigit(s[i]); ++i) {
        if (fraction <= kMax / 10 - 1) {  // further digits are below nanosecond precision
          fraction = fraction * 10 + static_cast<std::uint64_t>(s[i] - '0');
          scale *= 10;
        }
      }
      hasFraction = i > start;
    }
    if (!hasWhole && !hasFraction) return fail(text, "expected a number");
    if (overflow) return fail(text, "value too large");
    s.remove_prefix(i);

    // The unit: everything up to the next number.
    std::size_t unitEnd = 0;
    while (unitEnd < s.size() && s[unitEnd] != '.' && !isDigit(s[unitEnd])) ++unitEnd;
    std::string_view unitName = s.substr(0, unitEnd);
    if (unitName.empty()) return fail(text, "missing unit");
    const Unit* unit = nullptr;
    for (const auto& u : kUnits) {
      if (u.name == unitName) unit = &u;
    }
    if (unit == nullptr) return fail(text, "unknown unit \"" + std::string(unitName) + "\"");
    s.remove_prefix(unitEnd);

    if (whole > kMax / unit->nanos) return fail(text, "value too large");
    std::uint64_t amount = whole * unit->nanos;
    if (fraction > 0) {
      amount += static_cast<std::uint64_t>(static_cast<double>(fraction) *
                                           (static_cast<double>(unit->nanos) / scale));
    }
    if (amount > kMax - total) return fail(text, "value too large");
    total += amount;
  }
  auto value = static_cast<std::int64_t>(total);
  return Nanos{negative ? -value : value};
}

Result<std::chrono::seconds> parseGoDurationSeconds(std::string_view text) {
  auto parsed = parseGoDuration(text);
  if (!parsed.ok()) return Result<std::chrono::seconds>::failure(parsed.error());
  if (parsed->count() < 0) {
    return Result<std::chrono::seconds>::failure("duration \"" + std::string(text) +
                                                 "\" must not be negative");
  }
  return std::chrono::ceil<std::chrono::seconds>(*parsed);
}

}  // namespace gpufair::config
