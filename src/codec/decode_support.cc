#include "decode_support.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace gpufair::codec::detail {

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
bool optStringView(object obj, std::string_view key, std::string_view& out, std::string& error,
                   std::string_view where, bool* present) {
  element e;
  const bool found = field(obj, key, e);
  if (present != nullptr) *present = found;
  if (!found) return true;
  if (e.get_string().get(out) != simdjson::SUCCESS) {
    out = {};
    error = std::string(where) + "." + std::string(key) + " must be a string";
    return false;
  }
  return true;
}

bool optString(object obj, std::string_view key, std::string& out, std::string& error,
               std::string_view where) {
  std::string_view s;
  bool present = false;
  if (!optStringView(obj, key, s, error, where, &present)) return false;
  if (present) out.assign(s);
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
    // Where an error is: "spec.containers[0]", or "container NAME" once the name is read. Built
    // only for an error (every reader below starts its message with the `where` it is given, so
    // they are given "" and the text is put in front), not for every container of every pod.
    std::string_view name;
    auto failAt = [&](std::string_view suffix) {
      std::string where;
      if (name.empty()) {
        where = "spec." + std::string(key) + "[" + std::to_string(index) + "]";
      } else {
        where = std::string(init ? "init container " : "container ") + std::string(name);
      }
      error = where + std::string(suffix) + error;
      return false;
    };
    object co;
    if (c.get_object().get(co) != simdjson::SUCCESS) {
      error = " must be an object";
      return failAt("");
    }
    if (!optStringView(co, "name", name, error, "")) return failAt("");
    ContainerResources res;
    object resources;
    bool present = false;
    if (!optObject(co, "resources", resources, present, error, "")) return failAt("");
    if (present) {
      Resources req;
      Resources lim;
      object list;
      bool has = false;
      if (!optObject(resources, "requests", list, has, error, "")) return failAt(".resources");
      if (has && !resourceList(list, "", req, error)) return failAt(".resources.requests");
      if (!optObject(resources, "limits", list, has, error, "")) return failAt(".resources");
      if (has && !resourceList(list, "", lim, error)) return failAt(".resources.limits");
      // The API server defaults a missing request to the limit.
      auto pick = [](std::int64_t r, std::int64_t l) { return r >= 0 ? r : (l >= 0 ? l : 0); };
      res.gpus.request = pick(req.gpus, lim.gpus);
      res.cpu.request = pick(req.cpuMilli, lim.cpuMilli);
      res.memory.request = pick(req.memory, lim.memory);
      res.gpuMilli.request = pick(req.gpuMilli, lim.gpuMilli);
    }
    if (init) {
      std::string_view policyName;
      if (!optStringView(co, "restartPolicy", policyName, error, "")) return failAt("");
      const bool restartable = policyName == "Always";
      res.gpus.restartable = res.cpu.restartable = res.memory.restartable =
          res.gpuMilli.restartable = restartable;
    }
    out.push_back(res);
    ++index;
  }
  return true;
}

bool timestamp(object obj, std::string_view key, std::optional<Timestamp>& out, std::string& error,
               std::string_view where) {
  std::string_view text;  // read in place: a timestamp's text is longer than a short string
  if (!optStringView(obj, key, text, error, where)) return false;
  if (text.empty()) return true;
  Result<Timestamp> t = parseTimestamp(text);
  if (!t) {
    error = std::string(where) + "." + std::string(key) + ": " + t.error();
    return false;
  }
  out = *t;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace gpufair::codec::detail
