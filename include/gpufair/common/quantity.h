// Kubernetes resource quantities ("500m", "12Gi", "1e3", "2"), parsed as k8s.io/apimachinery's
// resource.ParseQuantity does: an optional sign, a decimal number, and one suffix out of the binary
// SI (Ki Mi Gi Ti Pi Ei), decimal SI (n u m "" k M G T P E) or decimal exponent (e3, E-2) forms.
// Anything else is an error, never zero. Values are kept exact as a rational mantissa and
// exponents, and rounded up (as Quantity.MilliValue() and Quantity.Value() do) only when asked for
// an integer. Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpufair/common/status.h"

namespace gpufair {

// Milli-GPUs: 1000 is one whole GPU. Every GPU amount in gpufair is counted in these, so fractional
// GPUs and whole GPUs add up exactly.
using MilliGpu = std::int64_t;
inline constexpr MilliGpu kMilliPerGpu = 1000;

// Exact mantissas need more than 64 bits ("123456789012345678901234Ki" is a valid quantity).
__extension__ typedef unsigned __int128 QuantityMantissa;

class Quantity {
 public:
  // Parses the string form. Errors name what is wrong ("quantity \"12Gx\": unknown suffix \"Gx\"").
  static Result<Quantity> parse(std::string_view text);

  // The value rounded up to a whole number, or to thousandths; saturates at INT64 bounds.
  std::int64_t value() const;
  std::int64_t milliValue() const;
  // Whether the value is a whole number (Kubernetes requires this of extended resources).
  bool isInteger() const;
  bool isNegative() const { return negative_ && mantissa_ != 0; }
  const std::string& text() const { return text_; }

 private:
  // value = (-1 if negative_) * mantissa_ * 10^decimalExp_ * 2^binaryExp_
  std::int64_t scaled(int extraDecimalExp) const;
  QuantityMantissa mantissa_ = 0;
  int decimalExp_ = 0;
  int binaryExp_ = 0;
  bool negative_ = false;
  std::string text_;
};

// "30", "2.5", "0.25": a milli-GPU amount as GPUs for messages.
std::string formatGpus(MilliGpu milli);

}  // namespace gpufair
