// Fuzzes Kubernetes quantity parsing ("500m", "12Gi", "1e3") and the integer views of what parsed:
// every string is a value or an error; value() and milliValue() saturate instead of overflowing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpufair/common/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto quantity = gpufair::Quantity::parse(text);
  if (!quantity) return 0;
  (void)quantity->value();
  (void)quantity->milliValue();
  (void)quantity->isInteger();
  (void)quantity->isNegative();
  (void)gpufair::formatGpus(quantity->milliValue());
  return 0;
}
