// Helpers for the simulator's tests: the openb trace in ../shared (never copied into the repo) and
// small slices of it.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace gpufair::sim::testing {

inline std::string traceFile(const std::string& name) {
  return std::string(GPUFAIR_SHARED_DIR) + "/traces/openb/" + name;
}

inline bool haveTrace() {
  return std::filesystem::exists(traceFile("openb_node_list_gpu_node.csv")) &&
         std::filesystem::exists(traceFile("openb_pod_list_default.csv"));
}

// The header and the `rows` lines after it, of one trace file.
inline std::string headOf(const std::string& name, int rows) {
  std::ifstream in(traceFile(name));
  std::string out, line;
  for (int i = 0; i <= rows && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

// The header and every `every`-th line (a spread-out slice, not just the first rows).
inline std::string sliceOf(const std::string& name, int every, int rows) {
  std::ifstream in(traceFile(name));
  std::string out, line;
  std::getline(in, line);
  out += line + "\n";
  for (int i = 0, taken = 0; taken < rows && std::getline(in, line); ++i) {
    if (i % every != 0) continue;
    out += line + "\n";
    ++taken;
  }
  return out;
}

}  // namespace gpufair::sim::testing
