#include <charconv>
#include <cstdint>
#include <cstring>

#include "gpufair/api/wire.h"
#include "gpufair/common/json.h"

namespace gpufair::api {
namespace {

void appendInt(std::string& out, std::int64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  (void)ec;  // 24 characters hold any int64
  out.append(buffer, end);
}

void appendVerdicts(std::string& out, std::string_view key,
                    const std::vector<policy::NodeVerdict>& verdicts) {
  out += '"';
  out += key;
  out += "\":{";
  bool first = true;
  for (const auto& verdict : verdicts) {
    if (!first) out += ',';
    first = false;
    appendJsonString(out, verdict.node);
    out += ':';
    appendJsonString(out, verdict.reason);
  }
  out += '}';
}

void appendNodeNames(std::string& out, const std::vector<std::string_view>& names) {
  out += '[';
  bool first = true;
  for (auto name : names) {
    if (!first) out += ',';
    first = false;
    appendJsonString(out, name);
  }
  out += ']';
}

// The feasible node objects as the scheduler sent them. `feasible` is in candidate order.
void appendNodeItems(std::string& out, const ExtenderArgs& args,
                     const std::vector<std::string_view>& feasible) {
  out += "{\"items\":[";
  std::size_t next = 0;
  bool first = true;
  for (std::size_t i = 0; i < args.nodes.size() && next < feasible.size(); ++i) {
    if (feasible[next] != args.nodes[i].name) continue;
    ++next;
    if (!first) out += ',';
    first = false;
    out += simdjson::minify(args.nodeObjects[i]);
  }
  out += "]}";
}

}  // namespace

void encodeFilterResult(const ExtenderArgs& args, const policy::FilterResult& result,
                        std::string_view error, std::string& out) {
  out.reserve(out.size() + 64 + 24 * result.feasible.size() + 96 * result.failed.size() +
              96 * result.unresolvable.size());
  if (args.nodesMode) {
    out += "{\"Nodes\":";
    appendNodeItems(out, args, result.feasible);
    out += ",\"NodeNames\":null,";
  } else {
    out += "{\"Nodes\":null,\"NodeNames\":";
    appendNodeNames(out, result.feasible);
    out += ',';
  }
  appendVerdicts(out, "FailedNodes", result.failed);
  out += ',';
  appendVerdicts(out, "FailedAndUnresolvableNodes", result.unresolvable);
  out += ",\"Error\":";
  appendJsonString(out, error);
  out += '}';
}

void encodeFilterError(std::string_view error, std::string& out) {
  out +=
      "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},"
      "\"Error\":";
  appendJsonString(out, error);
  out += '}';
}

void encodeHostPriorityList(std::span<const policy::NodeScore> scores, std::string& out) {
  out.reserve(out.size() + 2 + 40 * scores.size());
  out += '[';
  bool first = true;
  for (const auto& score : scores) {
    if (!first) out += ',';
    first = false;
    out += "{\"Host\":";
    appendJsonString(out, score.node);
    out += ",\"Score\":";
    appendInt(out, score.score);
    out += '}';
  }
  out += ']';
}

void encodePreemptionResult(std::span<const std::pair<std::string, MetaVictims>> victims,
                            std::string& out) {
  out += "{\"NodeNameToMetaVictims\":{";
  bool firstNode = true;
  for (const auto& [node, meta] : victims) {
    if (!firstNode) out += ',';
    firstNode = false;
    appendJsonString(out, node);
    out += ":{\"Pods\":[";
    bool firstPod = true;
    for (const auto& uid : meta.podUids) {
      if (!firstPod) out += ',';
      firstPod = false;
      out += "{\"UID\":";
      appendJsonString(out, uid);
      out += '}';
    }
    out += "],\"NumPDBViolations\":";
    appendInt(out, meta.numPdbViolations);
    out += '}';
  }
  out += "}}";
}

void encodeErrorResult(std::string_view error, std::string& out) {
  out += "{\"Error\":";
  appendJsonString(out, error);
  out += '}';
}

}  // namespace gpufair::api
