#include "gpufair/common/quantity.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <limits>

namespace gpufair {
namespace {

using u128 = QuantityMantissa;
constexpr u128 kMantissaCap = static_cast<u128>(1) << 120;  // keeps room for one more digit
// Decimal exponents beyond this are clamped: every such value already saturates int64 or rounds to
// the smallest unit, so clamping keeps the arithmetic bounded without changing any result.
constexpr int kExponentClamp = 100000;

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
      {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
      {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
      {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
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
    // ParseQuantity takes any exponent strconv.ParseInt reads as an int64 ("1e1001" is valid):
    // reject only what overflows int64, and clamp the rest.
    const std::uint64_t limit = neg ? 9223372036854775808ull : 9223372036854775807ull;
    std::uint64_t exp = 0;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      const auto digit = static_cast<std::uint64_t>(s[i] - '0');
      if (exp > (limit - digit) / 10) return false;
      exp = exp * 10 + digit;
    }
    const int clamped = static_cast<int>(std::min<std::uint64_t>(exp, kExponentClamp));
    out = {neg ? -clamped : clamped, 0};
    return true;
  }
  return false;
}

std::string quoted(std::string_view text) {
  return "quantity \"" + std::string(text) + "\"";
}

// A 256-bit unsigned integer, just enough for mantissa (< 2^127) * 2^60 and exact division by 10.
class Wide {
 public:
  explicit Wide(u128 v) {
    for (auto& w : words_) {
      w = static_cast<std::uint32_t>(v);
      v >>= 32;
    }
  }
  void shiftLeft(int bits) {  // bits <= 64; the caller keeps the result below 2^256
    while (bits > 0) {
      const int n = std::min(bits, 31);
      std::uint32_t carry = 0;
      for (auto& w : words_) {
        const std::uint32_t next = w >> (32 - n);
        w = (w << n) | carry;
        carry = next;
      }
      bits -= n;
    }
  }
  void times10() {  // only called while the value fits int64
    std::uint64_t carry = 0;
    for (auto& w : words_) {
      const std::uint64_t x = static_cast<std::uint64_t>(w) * 10 + carry;
      w = static_cast<std::uint32_t>(x);
      carry = x >> 32;
    }
  }
  unsigned divide10() {  // returns the remainder
    std::uint64_t rem = 0;
    for (auto it = words_.rbegin(); it != words_.rend(); ++it) {
      const std::uint64_t x = (rem << 32) | *it;
      *it = static_cast<std::uint32_t>(x / 10);
      rem = x % 10;
    }
    return static_cast<unsigned>(rem);
  }
  bool isZero() const {
    for (auto w : words_) {
      if (w != 0) return false;
    }
    return true;
  }
  bool exceedsInt64() const {
    for (std::size_t i = 2; i < words_.size(); ++i) {
      if (words_[i] != 0) return true;
    }
    return (words_[1] & 0x80000000u) != 0;
  }
  std::int64_t toInt64() const {  // requires !exceedsInt64()
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(words_[1]) << 32) | words_[0]);
  }

 private:
  std::array<std::uint32_t, 8> words_{};
};

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
  bool droppedNonZero = false;  // a non-zero digit beyond the mantissa's precision
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
      // Digits past the mantissa's precision: before the point they scale the value; their value
      // is remembered as a sticky digit below so rounding up and isInteger() stay exact.
      if (!dot && q.decimalExp_ < kExponentClamp) ++q.decimalExp_;
      droppedNonZero = droppedNonZero || c != '0';
      continue;
    }
    q.mantissa_ = q.mantissa_ * 10 + static_cast<unsigned>(c - '0');
    if (dot) ++fractionDigits;
  }
  if (!digits) return Result<Quantity>::failure(quoted(text) + ": no digits");
  if (droppedNonZero) {
    // m*10^e < value < (m+1)*10^e: a trailing 1 keeps the value strictly inside that interval,
    // which is all ceil() at milli or unit scale and isInteger() can distinguish at this size.
    q.mantissa_ = q.mantissa_ * 10 + 1;
    --q.decimalExp_;
  }
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

// value * 10^extra rounded away from zero (as k8s Value() and MilliValue() do), saturating.
std::int64_t Quantity::scaled(int extraDecimalExp) const {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  if (mantissa_ == 0) return 0;
  const auto over = [&] { return negative_ ? kMin : kMax; };
  // Exact: the binary factor first (it can only grow the value), then the decimal exponent.
  Wide v(mantissa_);
  v.shiftLeft(binaryExp_);
  int dec = decimalExp_ + extraDecimalExp;
  bool inexact = false;  // true when the exact magnitude is larger than v
  for (; dec > 0; --dec) {
    if (v.exceedsInt64()) return over();
    v.times10();
  }
  for (; dec < 0; ++dec) {
    if (v.divide10() != 0) inexact = true;
    if (v.isZero()) {
      inexact = true;
      break;
    }
  }
  if (v.exceedsInt64()) return over();
  std::int64_t magnitude = v.toInt64();
  if (inexact) {
    if (magnitude == kMax) return over();
    ++magnitude;
  }
  return negative_ ? -magnitude : magnitude;
}

std::int64_t Quantity::value() const {
  return scaled(0);
}
std::int64_t Quantity::milliValue() const {
  return scaled(3);
}

bool Quantity::isInteger() const {
  if (mantissa_ == 0 || decimalExp_ >= 0) return true;
  // mantissa * 2^binaryExp / (2^j * 5^j) is whole iff 5^j and 2^(j - binaryExp) divide the
  // mantissa.
  const int j = -decimalExp_;
  u128 v = mantissa_;
  for (int i = 0; i < j; ++i) {
    if (v % 5 != 0) return false;
    v /= 5;
  }
  for (int i = 0; i < j - binaryExp_; ++i) {
    if (v % 2 != 0) return false;
    v /= 2;
  }
  return true;
}

std::string formatGpus(MilliGpu milli) {
  const bool neg = milli < 0;
  // Negate in unsigned arithmetic: -INT64_MIN does not fit int64.
  const auto abs =
      neg ? 0ull - static_cast<unsigned long long>(milli) : static_cast<unsigned long long>(milli);
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
