// Helpers shared by the decoders of objects.cc and pod.cc (private to the codec module): field
// readers that say what is wrong in words, resource lists and containers, and the JSON entry.
// Thread-safety: free functions; parseThen uses one parser per thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "gpufair/codec/objects.h"
#include "gpufair/common/labels.h"
#include "gpufair/common/quantity.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/request.h"

namespace gpufair::codec::detail {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// ASCII case-insensitive equality (Go decodes JSON keys case-insensitively).
bool equalsIgnoreCase(std::string_view a, std::string_view b);
// Reads an optional string field; false with an error message when present but not a string.
bool optString(object obj, std::string_view key, std::string& out, std::string& error,
               std::string_view where);
// optString without the copy: `out` views the parsed document (valid while it lives); left as it
// is when the field is absent (`present`, when given, says which). On an error `out` is empty.
bool optStringView(object obj, std::string_view key, std::string_view& out, std::string& error,
                   std::string_view where, bool* present = nullptr);
// Reads an optional object field (present says whether it was there); false when not an object.
bool optObject(object obj, std::string_view key, object& out, bool& present, std::string& error,
               std::string_view where);
// Reads an optional map of strings (labels, annotations).
bool stringMap(object obj, std::string_view key, policy::Labels& out, std::string& error,
               std::string_view where);
// A quantity as JSON gives it: a string ("500m") or, from YAML conversions, a number.
Result<Quantity> quantityOf(element e);

// What gpufair reads of a resource list; -1 where absent.
struct Resources {
  MilliGpu gpus = -1;          // nvidia.com/gpu in milli-GPUs
  MilliGpu gpuMilli = -1;      // gpufair.io/gpu-milli: milli-GPUs of one shared GPU
  std::int64_t cpuMilli = -1;  // cpu in millicores
  std::int64_t memory = -1;    // memory in bytes
};

// Checks every quantity of a resource list and returns nvidia.com/gpu, cpu and memory.
bool resourceList(object list, std::string_view where, Resources& out, std::string& error);

// A container's requests, each as policy::effectiveRequest adds them up.
struct ContainerResources {
  policy::ContainerGpus gpus;
  policy::ContainerGpus cpu;
  policy::ContainerGpus memory;
  policy::ContainerGpus gpuMilli;
};

// The containers (or, init, the initContainers) of spec.`key`, each with its requests.
bool containers(object spec, std::string_view key, bool init, std::vector<ContainerResources>& out,
                std::string& error);
// Reads an optional RFC 3339 timestamp field.
bool timestamp(object obj, std::string_view key, std::optional<Timestamp>& out, std::string& error,
               std::string_view where);
// Trims spaces and tabs at both ends.
std::string_view trim(std::string_view s);

template <typename T>
Result<T> fail(std::string what, const std::string& error) {
  return Result<T>::failure(what + ": " + error);
}

// Parses `json` and decodes its root with `decode`; `kind` names the object in the error.
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

}  // namespace gpufair::codec::detail
