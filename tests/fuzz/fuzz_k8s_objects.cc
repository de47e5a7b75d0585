// Fuzzes the Kubernetes object decoders (Pod, Node, ConfigMap as the API server sends them) and the
// RFC 3339 timestamp parser with arbitrary JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpufair/codec/objects.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufair::codec;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  (void)decodePodJson(json);
  (void)decodeNodeJson(json);
  (void)decodeConfigMapJson(json);
  (void)parseTimestamp(json);
  return 0;
}
