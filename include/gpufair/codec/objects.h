// Decoders from Kubernetes API JSON (as kube-apiserver and kube-scheduler send it) to the engine's
// model. Only the fields gpufair needs are read; unknown fields are ignored; keys match in any case
// (Go's encoding/json does) and null stands for absent. Errors name the field and the object.
// Thread-safety: free functions; simdjson elements must not be shared across threads while parsing.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"

namespace gpufair::codec {

// A Pod. The GPU request is nvidia.com/gpu computed as Kubernetes does (policy::effectiveRequest);
// a malformed quantity, a negative or fractional GPU count is an error. cpu and memory requests are
// computed the same way (Pod::cpuMilli, Pod::memoryBytes).
// Annotations: gpufair.io/gpu-fraction ("0.5", in (0, 1]) or gpufair.io/gpu-milli ("500", in
// (0, 1000]) ask for part of one GPU (Pod::gpuShare; "1" / "1000" is one whole GPU); both, either
// with an nvidia.com/gpu request, or out of range is an error naming the annotation.
// gpufair.io/gpu-index ("2") -> Pod::gpuIndex (unreadable: -1, unknown); gpufair.io/gpu-models
// ("V100M16|V100M32") -> Pod::gpuModels. The gang label and size annotation -> Pod::gang,
// gangSize, or gangError when unusable (policy::applyGangLabels; not a decode error).
Result<policy::Pod> decodePod(simdjson::dom::element pod);
Result<policy::Pod> decodePodJson(std::string_view json);

// A Node. Allocatable GPUs from status.allocatable["nvidia.com/gpu"] (absent: 0), cpu and memory
// from status.allocatable too; Node::gpuModel from the label nvidia.com/gpu.product.
Result<policy::Node> decodeNode(simdjson::dom::element node);
Result<policy::Node> decodeNodeJson(std::string_view json);

struct ConfigMap {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resourceVersion;
  policy::Labels labels;
  std::map<std::string, std::string> data;
};
Result<ConfigMap> decodeConfigMap(simdjson::dom::element configMap);
Result<ConfigMap> decodeConfigMapJson(std::string_view json);

// Case-insensitive field lookup in a JSON object; nullptr-like (false) when absent or null.
bool field(simdjson::dom::object object, std::string_view key, simdjson::dom::element& out);
// Whether an object's key names `wanted` as field() matches it: same length, equal ignoring ASCII
// case (Go's encoding/json). For readers that find a key without the DOM and must agree with it.
bool keyMatches(std::string_view key, std::string_view wanted);

// RFC 3339 timestamps as Kubernetes writes them ("2026-11-22T10:00:00Z", fractional seconds
// allowed).
Result<Timestamp> parseTimestamp(std::string_view text);

}  // namespace gpufair::codec
