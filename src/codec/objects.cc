#include "gpufair/codec/objects.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <limits>

#include "gpufair/common/labels.h"
#include "gpufair/policy/request.h"

namespace gpufair::codec {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Reads an optional string field; false with an error message when present but not a string.
bool optString(object obj, std::string_view key, std::string& out, std::string& error,
               std::string_view where) {
  element e;
  if (!field(obj, key, e)) return true;
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) {
    error = std::string(where) + "." + std::string(key) + " must be a string";
    return false;
  }
  out.assign(s);
  return true;
}

bool optObject(object obj, std::string_view key, object& out, bool& present, std::string& error,
               std::string_view where) {
  element e;
  present = field(obj, key, e);
  if (!present) return true;
  if (e.get_object().get(out) != simdjson::SUCCESS) {
    error = std::string(where) + "." + std::string(key) + " must be an object";
    return false;
  }
  return true;
}

bool stringMap(object obj, std::string_view key, policy::Labels& out, std::string& error,
               std::string_view where) {
  object m;
  bool present = false;
  if (!optObject(obj, key, m, present, error, where)) return false;
  if (!present) return true;
  for (auto [k, v] : m) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) {
      error = std::string(where) + "." + std::string(key) + "[\"" + std::string(k) +
              "\"] must be a string";
      return false;
    }
    out.emplace(std::string(k), std::string(s));
  }
  return true;
}

// A quantity as JSON gives it: a string ("500m") or, from YAML conversions, a number.
Result<Quantity> quantityOf(element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return Quantity::parse(s);
  int64_t i = 0;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return Quantity::parse(std::to_string(i));
  uint64_t u = 0;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return Quantity::parse(std::to_string(u));
  double d = 0;
  if (e.get_double().get(d) == simdjson::SUCCESS) {
    // The shortest text that reads back as d: 0.1 stays "0.1" (as the JSON had it), where
    // "%.17g" gave "0.10000000000000001" and so a milli value rounded up to 101.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d);
    return Quantity::parse(std::string_view(buf, static_cast<std::size_t>(res.ptr - buf)));
  }
  return Result<Quantity>::failure("quantity must be a string or a number");
}

// What gpufair reads of a resource list; -1 where absent.
struct Resources {
  MilliGpu gpus = -1;          // nvidia.com/gpu in milli-GPUs
  MilliGpu gpuMilli = -1;      // gpufair.io/gpu-milli: milli-GPUs of one shared GPU
  std::int64_t cpuMilli = -1;  // cpu in millicores
  std::int64_t memory = -1;    // memory in bytes
};

// Checks every quantity of a resource list and returns nvidia.com/gpu, cpu and memory.
bool resourceList(object list, std::string_view where, Resources& out, std::string& error) {
  out = Resources{};
  for (auto [name, value] : list) {
    Result<Quantity> q = quantityOf(value);
    if (!q) {
      error = std::string(where) + "[\"" + std::string(name) + "\"]: " + q.error();
      return false;
    }
    if (name == "cpu" || name == "memory") {
      if (q->isNegative()) {
        error = std::string(where) + "[\"" + std::string(name) + "\"]: must not be negative (got " +
                q->text() + ")";
        return false;
      }
      if (name == "cpu") {
        out.cpuMilli = q->milliValue();
      } else {
        out.memory = q->value();
      }
      continue;
    }
    if (name == kGpuResource) {
      if (q->isNegative()) {
        error = std::string(where) + "[\"nvidia.com/gpu\"]: must not be negative (got " +
                q->text() + ")";
        return false;
      }
      if (!q->isInteger()) {
        error = std::string(where) + "[\"nvidia.com/gpu\"]: must be a whole number of GPUs (got " +
                q->text() + ")";
        return false;
      }
      out.gpus = q->milliValue();
    } else if (name == kGpuMilliResource) {
      if (q->isNegative() || !q->isInteger()) {
        error = std::string(where) + "[\"" + kGpuMilliResource +
                "\"]: must be a whole number of milli-GPUs (got " + q->text() + ")";
        return false;
      }
      out.gpuMilli = q->value();
    }
  }
  return true;
}

// A container's requests, each as policy::effectiveRequest adds them up.
struct ContainerResources {
  policy::ContainerGpus gpus;
  policy::ContainerGpus cpu;
  policy::ContainerGpus memory;
  policy::ContainerGpus gpuMilli;
};

bool containers(object spec, std::string_view key, bool init, std::vector<ContainerResources>& out,
                std::string& error) {
  element e;
  if (!field(spec, key, e)) return true;
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) {
    error = "spec." + std::string(key) + " must be an array";
    return false;
  }
  std::size_t index = 0;
  for (element c : arr) {
    object co;
    std::string where = "spec." + std::string(key) + "[" + std::to_string(index++) + "]";
    if (c.get_object().get(co) != simdjson::SUCCESS) {
      error = where + " must be an object";
      return false;
    }
    std::string name;
    if (!optString(co, "name", name, error, where)) return false;
    if (!name.empty()) where = std::string(init ? "init container " : "container ") + name;
    ContainerResources res;
    object resources;
    bool present = false;
    if (!optObject(co, "resources", resources, present, error, where)) return false;
    if (present) {
      Resources req;
      Resources lim;
      object list;
      bool has = false;
      if (!optObject(resources, "requests", list, has, error, where + ".resources")) return false;
      if (has && !resourceList(list, where + ".resources.requests", req, error)) return false;
      if (!optObject(resources, "limits", list, has, error, where + ".resources")) return false;
      if (has && !resourceList(list, where + ".resources.limits", lim, error)) return false;
      // The API server defaults a missing request to the limit.
      auto pick = [](std::int64_t r, std::int64_t l) { return r >= 0 ? r : (l >= 0 ? l : 0); };
      res.gpus.request = pick(req.gpus, lim.gpus);
      res.cpu.request = pick(req.cpuMilli, lim.cpuMilli);
      res.memory.request = pick(req.memory, lim.memory);
      res.gpuMilli.request = pick(req.gpuMilli, lim.gpuMilli);
    }
    if (init) {
      std::string policyName;
      if (!optString(co, "restartPolicy", policyName, error, where)) return false;
      const bool restartable = policyName == "Always";
      res.gpus.restartable = res.cpu.restartable = res.memory.restartable =
          res.gpuMilli.restartable = restartable;
    }
    out.push_back(res);
  }
  return true;
}

template <typename T>
Result<T> fail(std::string what, const std::string& error) {
  return Result<T>::failure(what + ": " + error);
}

bool timestamp(object obj, std::string_view key, std::optional<Timestamp>& out, std::string& error,
               std::string_view where) {
  std::string text;
  if (!optString(obj, key, text, error, where)) return false;
  if (text.empty()) return true;
  Result<Timestamp> t = parseTimestamp(text);
  if (!t) {
    error = std::string(where) + "." + std::string(key) + ": " + t.error();
    return false;
  }
  out = *t;
  return true;
}

template <typename T, typename F>
Result<T> parseThen(std::string_view json, const char* kind, F decode) {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element root;
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    return Result<T>::failure(std::string(kind) +
                              " is not valid JSON: " + simdjson::error_message(err));
  }
  return decode(root);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The fractional-GPU, GPU-index and GPU-model annotations, applied to a pod whose requests are
// decoded; resourceMilli: the pod's effective gpufair.io/gpu-milli request (0: none), the same as
// the gpu-milli annotation. Errors name the annotation or resource.
Result<bool> gpuAnnotations(policy::Pod& pod, MilliGpu resourceMilli) {
  using R = Result<bool>;
  const auto fraction = pod.annotations.find(kGpuFractionAnnotation);
  const auto milli = pod.annotations.find(kGpuMilliAnnotation);
  const bool hasFraction = fraction != pod.annotations.end();
  const bool hasMilli = milli != pod.annotations.end();
  if (hasFraction && hasMilli) {
    return R::failure("annotations " + std::string(kGpuFractionAnnotation) + " and " +
                      kGpuMilliAnnotation + " are both set; use one");
  }
  if (resourceMilli > 0) {
    const std::string name = std::string("resource ") + kGpuMilliResource;
    if (pod.gpus > 0) {
      return R::failure(name + " asks for part of a GPU but the pod also requests " +
                        formatGpus(pod.gpus) + " nvidia.com/gpu; use one or the other");
    }
    if (resourceMilli > kMilliPerGpu) {
      return R::failure(name + ": " + std::to_string(resourceMilli) +
                        " is out of range (0, 1000]: it is a share of one GPU; ask for whole "
                        "GPUs with nvidia.com/gpu");
    }
  }
  if (hasFraction || hasMilli) {
    const std::string name = hasFraction ? kGpuFractionAnnotation : kGpuMilliAnnotation;
    const std::string& text = hasFraction ? fraction->second : milli->second;
    if (pod.gpus > 0) {
      return R::failure("annotation " + name +
                        " asks for part of a GPU but the pod also requests " +
                        formatGpus(pod.gpus) + " nvidia.com/gpu; use one or the other");
    }
    MilliGpu share = 0;
    if (hasFraction) {
      Result<Quantity> q = Quantity::parse(trim(text));
      if (!q) return R::failure("annotation " + name + ": " + q.error());
      share = q->isNegative() ? -1 : q->milliValue();
    } else {
      const std::string_view t = trim(text);
      long long v = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec != std::errc() || end != t.data() + t.size() || t.empty()) {
        return R::failure("annotation " + name + ": \"" + text + "\" is not a whole number");
      }
      share = v;
    }
    if (share <= 0 || share > kMilliPerGpu) {
      return R::failure("annotation " + name + ": \"" + text + "\" is out of range (" +
                        (hasFraction ? "0, 1]" : "0, 1000]") + ")");
    }
    if (resourceMilli > 0 && share != resourceMilli) {
      return R::failure("annotation " + name + " (" + text + ") and resource " + kGpuMilliResource +
                        " (" + std::to_string(resourceMilli) + ") disagree; set one");
    }
    pod.setGpuShare(share);
  } else if (resourceMilli > 0) {
    pod.setGpuShare(resourceMilli);
  }
  if (auto it = pod.annotations.find(kGpuIndexAnnotation); it != pod.annotations.end()) {
    // Written by gpufair's binder; anything unreadable means "unknown" (the node places it).
    const std::string_view t = trim(it->second);
    int v = -1;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    pod.gpuIndex = (ec == std::errc() && end == t.data() + t.size() && v >= 0) ? v : -1;
  }
  if (auto it = pod.annotations.find(kGpuModelsAnnotation); it != pod.annotations.end()) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      const std::string_view part = trim(rest.substr(0, bar));
      if (!part.empty()) pod.gpuModels.emplace_back(part);
      rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
    }
  }
  return true;
}

}  // namespace

bool field(object obj, std::string_view key, element& out) {
  for (auto [k, v] : obj) {
    if (equalsIgnoreCase(k, key)) {
      if (v.type() == element_type::NULL_VALUE) return false;
      out = v;
      return true;
    }
  }
  return false;
}

Result<policy::Pod> decodePod(element root) {
  using R = Result<policy::Pod>;
  object pod;
  if (root.get_object().get(pod) != simdjson::SUCCESS)
    return R::failure("Pod must be a JSON object");
  policy::Pod out;
  std::string error;
  object meta;
  bool present = false;
  if (!optObject(pod, "metadata", meta, present, error, "pod")) return R::failure(error);
  if (!present) return R::failure("pod has no metadata");
  std::optional<Timestamp> deleted;
  if (!optString(meta, "name", out.name, error, "metadata") ||
      !optString(meta, "namespace", out.ns, error, "metadata") ||
      !optString(meta, "uid", out.uid, error, "metadata") ||
      !stringMap(meta, "labels", out.labels, error, "metadata") ||
      !stringMap(meta, "annotations", out.annotations, error, "metadata") ||
      !timestamp(meta, "creationTimestamp", out.created, error, "metadata") ||
      !timestamp(meta, "deletionTimestamp", deleted, error, "metadata")) {
    return fail<policy::Pod>("pod " + out.ns + "/" + out.name, error);
  }
  if (out.name.empty()) return R::failure("pod has no metadata.name");
  if (out.ns.empty()) out.ns = "default";
  out.terminating = deleted.has_value();
  const std::string what = "pod " + out.key();
  if (auto it = out.labels.find(kOverQuotaLabel); it != out.labels.end()) {
    out.overQuota = it->second == "true";
  }

  object spec;
  MilliGpu gpuMilliRequest = 0;  // gpufair.io/gpu-milli, as Kubernetes adds up requests
  if (!optObject(pod, "spec", spec, present, error, "pod")) return fail<policy::Pod>(what, error);
  if (present) {
    std::vector<ContainerResources> regularAll;
    std::vector<ContainerResources> initAll;
    Resources overheads;
    object overheadList;
    bool hasOverhead = false;
    if (!optString(spec, "nodeName", out.nodeName, error, "spec") ||
        !optString(spec, "schedulerName", out.schedulerName, error, "spec") ||
        !containers(spec, "containers", false, regularAll, error) ||
        !containers(spec, "initContainers", true, initAll, error) ||
        !optObject(spec, "overhead", overheadList, hasOverhead, error, "spec")) {
      return fail<policy::Pod>(what, error);
    }
    if (hasOverhead && !resourceList(overheadList, "spec.overhead", overheads, error)) {
      return fail<policy::Pod>(what, error);
    }
    auto column = [](const std::vector<ContainerResources>& all, auto member) {
      std::vector<policy::ContainerGpus> out;
      out.reserve(all.size());
      for (const auto& c : all) out.push_back(c.*member);
      return out;
    };
    const auto regular = column(regularAll, &ContainerResources::gpus);
    const auto init = column(initAll, &ContainerResources::gpus);
    const MilliGpu overhead = std::max<MilliGpu>(overheads.gpus, 0);
    // effectiveRequest adds these up; a huge count ("10E" in two containers, each saturating
    // int64) must not wrap around to a negative request.
    for (const auto member :
         {&ContainerResources::gpus, &ContainerResources::cpu, &ContainerResources::memory,
          &ContainerResources::gpuMilli}) {
      std::int64_t total = 0;
      for (const auto* list : {&regularAll, &initAll}) {
        for (const auto& c : *list) {
          if (__builtin_add_overflow(total, (c.*member).request, &total)) {
            const char* name = member == &ContainerResources::gpus       ? "nvidia.com/gpu"
                               : member == &ContainerResources::cpu      ? "cpu"
                               : member == &ContainerResources::gpuMilli ? kGpuMilliResource
                                                                         : "memory";
            return fail<policy::Pod>(
                what, std::string(name) + " requests add up to more than " +
                          (member == &ContainerResources::gpus
                               ? formatGpus(std::numeric_limits<MilliGpu>::max()) + " GPUs"
                               : std::string("the largest quantity")));
          }
        }
      }
    }
    out.gpus = policy::effectiveRequest(regular, init, overhead);
    out.cpuMilli = policy::effectiveRequest(column(regularAll, &ContainerResources::cpu),
                                            column(initAll, &ContainerResources::cpu),
                                            std::max<std::int64_t>(overheads.cpuMilli, 0));
    out.memoryBytes = policy::effectiveRequest(column(regularAll, &ContainerResources::memory),
                                               column(initAll, &ContainerResources::memory),
                                               std::max<std::int64_t>(overheads.memory, 0));
    gpuMilliRequest = policy::effectiveRequest(column(regularAll, &ContainerResources::gpuMilli),
                                               column(initAll, &ContainerResources::gpuMilli), 0);
  }
  if (Result<bool> r = gpuAnnotations(out, gpuMilliRequest); !r) {
    return fail<policy::Pod>(what, r.error());
  }
  // A bad gang label or size is not a decode error: the pod still exists (and may hold GPUs);
  // filter refuses it with Pod::gangError.
  policy::applyGangLabels(out);

  object status;
  if (!optObject(pod, "status", status, present, error, "pod"))
    return fail<policy::Pod>(what, error);
  if (present) {
    std::string phase;
    if (!optString(status, "phase", phase, error, "status") ||
        !timestamp(status, "startTime", out.started, error, "status")) {
      return fail<policy::Pod>(what, error);
    }
    out.phase = policy::parsePhase(phase);
  }
  return out;
}

Result<policy::Pod> decodePodJson(std::string_view json) {
  return parseThen<policy::Pod>(json, "Pod", [](element e) { return decodePod(e); });
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
  const std::string bad = "timestamp \"" + std::string(text) + "\" is not RFC 3339";
  if (text.size() < 20 || !digits(0, 4, year) || text[4] != '-' || !digits(5, 2, month) ||
      text[7] != '-' || !digits(8, 2, day) || (text[10] != 'T' && text[10] != 't') ||
      !digits(11, 2, hour) || text[13] != ':' || !digits(14, 2, minute) || text[16] != ':' ||
      !digits(17, 2, second)) {
    return R::failure(bad);
  }
  // Ranges as Go's time.Parse(time.RFC3339) checks them: the day within its month, no leap second.
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0) ||
      hour > 23 || minute > 59 || second > 59) {
    return R::failure(bad);
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
    if (pos == start) return R::failure(bad);
  }
  int offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z') && pos + 1 == text.size()) {
    offset = 0;
  } else if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-') &&
             text[pos + 3] == ':') {
    int oh = 0, om = 0;
    if (!digits(pos + 1, 2, oh) || !digits(pos + 4, 2, om) || oh > 23 || om > 59) {
      return R::failure(bad);
    }
    offset = (oh * 60 + om) * 60 * (text[pos] == '-' ? -1 : 1);
  } else {
    return R::failure(bad);
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
