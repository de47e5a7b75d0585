#include <charconv>
#include <cstdint>
#include <cstring>

#include "gpufair/api/wire.h"

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

// Names and reasons rarely need escaping: scan 8 bytes at a time for a control character, '"' or
// '\\' (the classic "has a zero byte" bit trick on word ^ pattern), then byte by byte within a hit.
bool needsEscape(unsigned char c) {
  return c < 0x20 || c == '"' || c == '\\';
}

bool wordNeedsEscape(std::uint64_t word) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  auto hasZeroByte = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const std::uint64_t control = (word - kOnes * 0x20) & ~word & kHighs;  // a byte below 0x20
  return (control | hasZeroByte(word ^ (kOnes * '"')) | hasZeroByte(word ^ (kOnes * '\\'))) != 0;
}

std::size_t firstToEscape(std::string_view text, std::size_t from) {
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, text.data() + i, sizeof word);
    if (wordNeedsEscape(word)) break;
  }
  if (i < text.size() && i + 8 > text.size() && text.size() >= 8) {
    // The tail: the last 8 bytes, overlapping bytes already known to be clean.
    std::uint64_t word;
    std::memcpy(&word, text.data() + text.size() - 8, sizeof word);
    if (!wordNeedsEscape(word)) return text.size();
  }
  for (; i < text.size(); ++i) {
    if (needsEscape(static_cast<unsigned char>(text[i]))) return i;
  }
  return text.size();
}

}  // namespace

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t i = firstToEscape(text, 0);
  if (i == text.size()) {  // the common case: one copy between quotes
    const std::size_t at = out.size();
    out.resize(at + text.size() + 2);
    char* to = out.data() + at;
    to[0] = '"';
    std::memcpy(to + 1, text.data(), text.size());
    to[text.size() + 1] = '"';
    return;
  }
  out += '"';
  std::size_t runStart = 0;
  for (; i < text.size(); i = firstToEscape(text, i + 1)) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.append(text.data() + runStart, i - runStart);
    runStart = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(text.data() + runStart, text.size() - runStart);
  out += '"';
}

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
