#include "gpufair/common/quantity.h"

#include <cctype>
#include <cstdio>
#include <limits>

namespace gpufair {
namespace {

using u128 = QuantityMantissa;
constexpr u128 kMantissaCap = static_cast<u128>(1) << 120;  // keeps room for one more digit

struct Suffix {
  int decimalExp = 0;
  int binaryExp = 0;
};

// The suffixes resource.ParseQuantity accepts (k8s.io/apimachinery/pkg/api/resource/suffix.go).
bool parseSuffix(std::string_view s, Suffix& out) {
  struct Entry {
    std::string_view text;
    int dec;
    int bin;
  };
  static constexpr Entry kTable[] = {
      {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},
      {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
      {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50},
      {"Ei", 0, 60},
  };
  for (const auto& e : kTable) {
    if (s == e.text) {
      out = {e.dec, e.bin};
      return true;
    }
  }
  // Decimal exponent: e or E, optional sign, digits.
  if (s.size() >= 2 && (s[0] == 'e' || s[0] == 'E')) {
    std::size_t i = 1;
    bool neg = false;
    if (s[i] == '+' || s[i] == '-') {
      neg = s[i] == '-';
      ++i;
    }
    if (i == s.size()) return false;
    int exp = 0;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      exp = exp * 10 + (s[i] - '0');
      if (exp > 1000) return false;
    }
    out = {neg ? -exp : exp, 0};
    return true;
  }
  return false;
}

std::string quoted(std::string_view text) { return "quantity \"" + std::string(text) + "\""; }

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  Quantity q;
  q.text_ = std::string(text);
  if (text.empty()) return Result<Quantity>::failure("quantity is empty");
  std::size_t i = 0;
  if (text[i] == '+' || text[i] == '-') {
    q.negative_ = text[i] == '-';
    ++i;
  }
  bool digits = false;
  bool dot = false;
  int fractionDigits = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (dot) return Result<Quantity>::failure(quoted(text) + ": more than one decimal point");
      dot = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    digits = true;
    if (q.mantissa_ >= kMantissaCap) {
      // Further digits only matter after the decimal point; before it they scale the value.
      if (!dot) ++q.decimalExp_;
      continue;
    }
    q.mantissa_ = q.mantissa_ * 10 + static_cast<unsigned>(c - '0');
    if (dot) ++fractionDigits;
  }
  if (!digits) return Result<Quantity>::failure(quoted(text) + ": no digits");
  Suffix suffix;
  const std::string_view rest = text.substr(i);
  if (!parseSuffix(rest, suffix)) {
    return Result<Quantity>::failure(quoted(text) + ": unknown suffix \"" + std::string(rest) +
                                     "\" (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei "
                                     "or an exponent like e3)");
  }
  q.decimalExp_ += suffix.decimalExp - fractionDigits;
  q.binaryExp_ = suffix.binaryExp;
  return q;
}

// ceil(value * 10^extra), saturating.
std::int64_t Quantity::scaled(int extraDecimalExp) const {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  if (mantissa_ == 0) return 0;
  int dec = decimalExp_ + extraDecimalExp;
  u128 v = mantissa_;
  const u128 cap = static_cast<u128>(kMax);
  bool inexact = false;  // true when the exact value is larger in magnitude than v
  int bin = binaryExp_;
  // Multiply first where exponents are positive, checking overflow.
  auto over = [&] { return negative_ ? kMin : kMax; };
  while (bin > 0) {
    if (v > cap) return over();
    v <<= 1;
    --bin;
  }
  while (dec > 0) {
    if (v > cap) return over();
    v *= 10;
    --dec;
  }
  while (dec < 0) {
    if (v % 10 != 0) inexact = true;
    v /= 10;
    ++dec;
    if (v == 0) {
      inexact = true;
      break;
    }
  }
  if (v > cap) return over();
  auto result = static_cast<std::int64_t>(v);
  // Round away from zero toward +inf: k8s rounds up (ceil) for positive values; for negatives the
  // truncated magnitude already is the ceiling.
  if (inexact && !negative_) {
    if (result == kMax) return kMax;
    ++result;
  }
  return negative_ ? -result : result;
}

std::int64_t Quantity::value() const { return scaled(0); }
std::int64_t Quantity::milliValue() const { return scaled(3); }

bool Quantity::isInteger() const {
  if (mantissa_ == 0 || decimalExp_ >= 0) return true;
  u128 v = mantissa_;
  for (int d = decimalExp_; d < 0; ++d) {
    if (v % 10 != 0) return false;
    v /= 10;
  }
  return true;
}

std::string formatGpus(MilliGpu milli) {
  const bool neg = milli < 0;
  const auto abs = static_cast<unsigned long long>(neg ? -milli : milli);
  std::string out = neg ? "-" : "";
  out += std::to_string(abs / 1000);
  if (unsigned frac = static_cast<unsigned>(abs % 1000); frac != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03u", frac);
    std::string f(buf);
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out;
}

}  // namespace gpufair
