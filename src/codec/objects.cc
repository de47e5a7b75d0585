#include "gpufair/codec/objects.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <limits>

#include "gpufair/common/labels.h"
#include "gpufair/policy/request.h"

#include "decode_support.h"

namespace gpufair::codec {

using detail::element;
using detail::element_type;
using detail::equalsIgnoreCase;
using detail::fail;
using detail::object;
using detail::optObject;
using detail::optString;
using detail::parseThen;
using detail::resourceList;
using detail::Resources;
using detail::stringMap;
using detail::timestamp;

bool keyMatches(std::string_view key, std::string_view wanted) {
  // The API server's own keys match exactly (memcmp); the loop only for another spelling.
  return key.size() == wanted.size() && (key == wanted || equalsIgnoreCase(key, wanted));
}

bool field(object obj, std::string_view key, element& out) {
  for (auto [k, v] : obj) {
    // Most keys differ in length: skipped here, inline.
    if (k.size() != key.size()) continue;
    if (keyMatches(k, key)) {
      if (v.type() == element_type::NULL_VALUE) return false;
      out = v;
      return true;
    }
  }
  return false;
}

Result<policy::Node> decodeNode(element root) {
  using R = Result<policy::Node>;
  object node;
  if (root.get_object().get(node) != simdjson::SUCCESS)
    return R::failure("Node must be a JSON object");
  policy::Node out;
  std::string error;
  object meta;
  bool present = false;
  if (!optObject(node, "metadata", meta, present, error, "node")) return R::failure(error);
  if (!present) return R::failure("node has no metadata");
  std::optional<Timestamp> deleted;
  if (!optString(meta, "name", out.name, error, "metadata") ||
      !stringMap(meta, "labels", out.labels, error, "metadata") ||
      !timestamp(meta, "deletionTimestamp", deleted, error, "metadata")) {
    return fail<policy::Node>("node " + out.name, error);
  }
  if (out.name.empty()) return R::failure("node has no metadata.name");
  out.deleting = deleted.has_value();
  if (auto it = out.labels.find(kGpuProductLabel); it != out.labels.end()) {
    out.gpuModel = it->second;
  }
  const std::string what = "node " + out.name;
  object spec;
  if (!optObject(node, "spec", spec, present, error, "node"))
    return fail<policy::Node>(what, error);
  if (present) {
    element e;
    if (field(spec, "unschedulable", e)) {
      bool b = false;
      if (e.get_bool().get(b) != simdjson::SUCCESS) {
        return fail<policy::Node>(what, "spec.unschedulable must be true or false");
      }
      out.unschedulable = b;
    }
  }
  object status;
  if (!optObject(node, "status", status, present, error, "node"))
    return fail<policy::Node>(what, error);
  if (present) {
    object allocatable;
    bool has = false;
    if (!optObject(status, "allocatable", allocatable, has, error, "status")) {
      return fail<policy::Node>(what, error);
    }
    Resources r;
    if (has && !resourceList(allocatable, "status.allocatable", r, error)) {
      return fail<policy::Node>(what, error);
    }
    out.allocatable = std::max<MilliGpu>(r.gpus, 0);
    out.cpuMilli = std::max<std::int64_t>(r.cpuMilli, 0);
    out.memoryBytes = std::max<std::int64_t>(r.memory, 0);
  }
  return out;
}

Result<policy::Node> decodeNodeJson(std::string_view json) {
  return parseThen<policy::Node>(json, "Node", [](element e) { return decodeNode(e); });
}

Result<ConfigMap> decodeConfigMap(element root) {
  using R = Result<ConfigMap>;
  object cm;
  if (root.get_object().get(cm) != simdjson::SUCCESS)
    return R::failure("ConfigMap must be a JSON object");
  ConfigMap out;
  std::string error;
  object meta;
  bool present = false;
  if (!optObject(cm, "metadata", meta, present, error, "configmap")) return R::failure(error);
  if (!present) return R::failure("configmap has no metadata");
  policy::Labels data;
  if (!optString(meta, "name", out.name, error, "metadata") ||
      !optString(meta, "namespace", out.ns, error, "metadata") ||
      !optString(meta, "uid", out.uid, error, "metadata") ||
      !optString(meta, "resourceVersion", out.resourceVersion, error, "metadata") ||
      !stringMap(meta, "labels", out.labels, error, "metadata") ||
      !stringMap(cm, "data", data, error, "configmap")) {
    return R::failure("configmap " + out.ns + "/" + out.name + ": " + error);
  }
  if (out.name.empty()) return R::failure("configmap has no metadata.name");
  if (out.ns.empty()) out.ns = "default";
  out.data.insert(data.begin(), data.end());
  return out;
}

Result<ConfigMap> decodeConfigMapJson(std::string_view json) {
  return parseThen<ConfigMap>(json, "ConfigMap", [](element e) { return decodeConfigMap(e); });
}

Result<Timestamp> parseTimestamp(std::string_view text) {
  using R = Result<Timestamp>;
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  auto digits = [&](std::size_t pos, std::size_t n, int& out) {
    if (pos + n > text.size()) return false;
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      out = out * 10 + (text[i] - '0');
    }
    return true;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  // The error, built only when there is one (this runs for every pod's timestamps).
  auto bad = [text] { return "timestamp \"" + std::string(text) + "\" is not RFC 3339"; };
  if (text.size() < 20 || !digits(0, 4, year) || text[4] != '-' || !digits(5, 2, month) ||
      text[7] != '-' || !digits(8, 2, day) || (text[10] != 'T' && text[10] != 't') ||
      !digits(11, 2, hour) || text[13] != ':' || !digits(14, 2, minute) || text[16] != ':' ||
      !digits(17, 2, second)) {
    return R::failure(bad());
  }
  // Ranges as Go's time.Parse(time.RFC3339) checks them: the day within its month, no leap second.
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0) ||
      hour > 23 || minute > 59 || second > 59) {
    return R::failure(bad());
  }
  std::size_t pos = 19;
  long nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    long scale = 100000000;
    std::size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      nanos += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return R::failure(bad());
  }
  int offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z') && pos + 1 == text.size()) {
    offset = 0;
  } else if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-') &&
             text[pos + 3] == ':') {
    int oh = 0, om = 0;
    if (!digits(pos + 1, 2, oh) || !digits(pos + 4, 2, om) || oh > 23 || om > 59) {
      return R::failure(bad());
    }
    offset = (oh * 60 + om) * 60 * (text[pos] == '-' ? -1 : 1);
  } else {
    return R::failure(bad());
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t t = timegm(&tm);
  // Timestamp counts nanoseconds in int64 (years 1677..2262); outside that the conversion would
  // overflow, so such a time is an error rather than a wrapped-around value.
  using std::chrono::seconds;
  constexpr auto kMaxSeconds =
      std::chrono::duration_cast<seconds>(Timestamp::duration::max()).count();
  constexpr auto kMinSeconds =
      std::chrono::duration_cast<seconds>(Timestamp::duration::min()).count();
  const long long utcSeconds = static_cast<long long>(t) - offset;
  if (utcSeconds >= kMaxSeconds || utcSeconds <= kMinSeconds) {
    return R::failure("timestamp \"" + std::string(text) + "\" is out of range");
  }
  return Timestamp{seconds{utcSeconds}} +
         std::chrono::duration_cast<Timestamp::duration>(std::chrono::nanoseconds{nanos});
}

}  // namespace gpufair::codec
