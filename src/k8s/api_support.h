// Private helpers shared by the k8s module's API operations.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpufair/common/status.h"
#include "gpufair/k8s/api.h"
#include "gpufair/k8s/client.h"

namespace gpufair::k8s::detail {

// object[key] when it is a string, else "".
std::string stringField(const nlohmann::json& object, const char* key);
// Compact JSON text; never throws.
std::string dumpJson(const nlohmann::json& value);
// The Binding of pod ns/name (with its uid as a precondition when not empty) to the node, with
// annotations kube-apiserver merges into the pod's as it binds, as dumpJson writes it; written
// directly when no field needs escaping (the per-bind JSON tree and its dump cost ~1% of the CPU
// per pod).
std::string bindingBody(std::string_view ns, std::string_view name, std::string_view uid,
                        std::string_view node,
                        const std::map<std::string, std::string>& annotations = {});
// "/api/v1/namespaces/{ns}/pods/{name}", escaped.
std::string podPath(std::string_view ns, std::string_view name);
// Cuts `text` to at most `limit` bytes without splitting a UTF-8 sequence.
std::string truncateUtf8(std::string_view text, std::size_t limit);

}  // namespace gpufair::k8s::detail

namespace gpufair::k8s::detail {

// JSON merge patch of metadata.<field> ("labels" or "annotations"): `set` adds or overwrites,
// `remove` deletes; a non-empty uid is a precondition.
Status patchPodMetadata(KubeClient& client, std::string_view ns, std::string_view name,
                        std::string_view field, const std::map<std::string, std::string>& set,
                        const std::vector<std::string>& remove, std::string_view uid,
                        std::chrono::milliseconds timeout, ApiError* error);
// The requests of bindPod and patchPodMetadata, and what their answers mean (Status::error naming
// the pod and the API server's message; `error` gets the answer's details when not null): apart,
// for the Binding sent asynchronously (binder_async.cc).
ApiRequest bindingRequest(std::string_view ns, std::string_view name, std::string_view uid,
                          std::string_view node, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& annotations = {});
Status bindingOutcome(std::string_view ns, std::string_view name, std::string_view node,
                      const ApiResponse& response);
ApiRequest metadataPatchRequest(std::string_view ns, std::string_view name, std::string_view field,
                                const std::map<std::string, std::string>& set,
                                const std::vector<std::string>& remove, std::string_view uid,
                                std::chrono::milliseconds timeout);
Status metadataPatchOutcome(std::string_view ns, std::string_view name, std::string_view field,
                            const ApiResponse& response, ApiError* error);

}  // namespace gpufair::k8s::detail
