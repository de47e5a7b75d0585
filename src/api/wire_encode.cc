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

// Writes `text` between quotes at `to`, returning the end. For a plain string (isPlainJsonString).
char* putPlainString(char* to, std::string_view text) {
  *to++ = '"';
  if (!text.empty()) std::memcpy(to, text.data(), text.size());  // data() may be null when empty
  to += text.size();
  *to++ = '"';
  return to;
}

char* putText(char* to, std::string_view text) {
  std::memcpy(to, text.data(), text.size());
  return to + text.size();
}

// The JSON answers' long lists (every feasible node in all mode: thousands of names per request)
// are written into room made once, not appended piece by piece; a name that needs escaping (never
// one of Kubernetes', but the body may be anything) sends the rest of the list the general way.
void appendNodeNames(std::string& out, const std::vector<std::string_view>& names) {
  std::size_t room = 2;
  for (auto name : names) room += name.size() + 3;
  const std::size_t start = out.size();
  out.resize(start + room);
  char* to = out.data() + start;
  *to++ = '[';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) *to++ = ',';
    if (!isPlainJsonString(names[i])) {
      out.resize(static_cast<std::size_t>(to - out.data()));
      for (std::size_t j = i; j < names.size(); ++j) {
        if (j > i) out += ',';
        appendJsonString(out, names[j]);
      }
      out += ']';
      return;
    }
    to = putPlainString(to, names[i]);
  }
  *to++ = ']';
  out.resize(static_cast<std::size_t>(to - out.data()));
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

namespace {

constexpr std::string_view kHost = "{\"Host\":";
constexpr std::string_view kScore = ",\"Score\":";

// HostPriority entries appended one by one, the general way.
void appendScores(std::string& out, std::span<const policy::NodeScore> scores) {
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (i > 0) out += ',';
    out += kHost;
    appendJsonString(out, scores[i].node);
    out += kScore;
    appendInt(out, scores[i].score);
    out += '}';
  }
}

}  // namespace

void encodeHostPriorityList(std::span<const policy::NodeScore> scores, std::string& out) {
  constexpr std::size_t kDigits = 20;  // any int64, sign included
  std::size_t room = 2;
  // Per entry: the name's two quotes, the score, '}' and the ',' before the next.
  for (const auto& score : scores) {
    room += kHost.size() + score.node.size() + 2 + kScore.size() + kDigits + 2;
  }
  const std::size_t start = out.size();
  out.resize(start + room);  // as appendNodeNames: room made once
  char* to = out.data() + start;
  *to++ = '[';
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (i > 0) *to++ = ',';
    if (!isPlainJsonString(scores[i].node)) {
      out.resize(static_cast<std::size_t>(to - out.data()));
      appendScores(out, scores.subspan(i));
      out += ']';
      return;
    }
    to = putPlainString(putText(to, kHost), scores[i].node);
    to = putText(to, kScore);
    to = std::to_chars(to, to + kDigits, scores[i].score).ptr;
    *to++ = '}';
  }
  *to++ = ']';
  out.resize(static_cast<std::size_t>(to - out.data()));
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
