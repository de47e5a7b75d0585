// Fuzzes the quota parser with arbitrary documents: queues.yaml, a ConfigMap carrying one, or a
// List of them (parseQuotaSource accepts all three), then merges what parsed. Bad input must be an
// error naming the place, never a crash, a hang or an exception escaping.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "gpufair/config/quota.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufair;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)config::parseQuotaYaml(text, "fuzz.yaml");
  auto source = config::parseQuotaSource(text, "fuzz.yaml");
  if (source) (void)config::mergeQuotaSources(std::vector<config::QuotaSource>{*source});
  return 0;
}
