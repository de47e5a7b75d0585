// Fuzzes the openb trace loader (Alibaba cluster-trace-gpu-v2023 node and pod CSV files): any text
// must give rows or an error naming file and line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpufair/sim/openb_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufair::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parseNodeCsv(text, "nodes.csv");
  (void)parsePodCsv(text, "pods.csv");
  return 0;
}
