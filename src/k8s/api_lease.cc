// coordination.k8s.io/v1 Lease: get, create, update (with resourceVersion), decode.
#include <nlohmann/json.hpp>

#include "gpufair/codec/objects.h"
#include "gpufair/k8s/api.h"

#include "api_support.h"

namespace gpufair::k8s {

using nlohmann::json;

namespace {

std::string leasesPath(std::string_view ns) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + escapePathSegment(ns) + "/leases";
}

Result<std::optional<Timestamp>> timeField(const json& spec, const char* key) {
  using R = Result<std::optional<Timestamp>>;
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return std::optional<Timestamp>{};
  if (!it->is_string()) return R::failure(std::string("spec.") + key + " is not a string");
  auto parsed = codec::parseTimestamp(it->get_ref<const std::string&>());
  if (!parsed) return R::failure(std::string("spec.") + key + ": " + parsed.error());
  return std::optional<Timestamp>{*parsed};
}

Result<int> intField(const json& spec, const char* key) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return 0;
  if (!it->is_number_integer()) {
    return Result<int>::failure(std::string("spec.") + key + " is not an integer");
  }
  return it->get<int>();
}

std::string encodeLease(const Lease& lease) {
  json object = json::parse(lease.raw, nullptr, false);
  if (!object.is_object()) object = json::object();
  object["apiVersion"] = "coordination.k8s.io/v1";
  object["kind"] = "Lease";
  json& meta = object["metadata"];
  if (!meta.is_object()) meta = json::object();
  meta["name"] = lease.name;
  meta["namespace"] = lease.ns;
  if (lease.resourceVersion.empty()) {
    meta.erase("resourceVersion");
  } else {
    meta["resourceVersion"] = lease.resourceVersion;
  }
  json& spec = object["spec"];
  if (!spec.is_object()) spec = json::object();
  spec["holderIdentity"] = lease.holderIdentity;
  spec["leaseDurationSeconds"] = lease.leaseDurationSeconds;
  spec["leaseTransitions"] = lease.leaseTransitions;
  auto setTime = [&](const char* key, const std::optional<Timestamp>& time) {
    if (time) {
      spec[key] = formatMicroTime(*time);
    } else {
      spec.erase(key);
    }
  };
  setTime("acquireTime", lease.acquireTime);
  setTime("renewTime", lease.renewTime);
  return detail::dumpJson(object);
}

LeaseResult answer(const ApiResponse& response, const std::string& what) {
  LeaseResult result;
  if (response.ok()) {
    auto lease = decodeLease(response.body);
    if (lease) {
      result.kind = LeaseResult::Kind::kOk;
      result.lease = std::move(lease).value();
    } else {
      result.message = what + ": " + lease.error();
    }
    return result;
  }
  ApiError error = apiError(response);
  if (error.httpStatus == 404) result.kind = LeaseResult::Kind::kNotFound;
  if (error.httpStatus == 409) result.kind = LeaseResult::Kind::kConflict;
  result.message = what + ": " + error.describe();
  return result;
}

}  // namespace

bool Lease::sameRecord(const Lease& other) const {
  return holderIdentity == other.holderIdentity &&
         leaseDurationSeconds == other.leaseDurationSeconds && acquireTime == other.acquireTime &&
         renewTime == other.renewTime && leaseTransitions == other.leaseTransitions;
}

Result<Lease> decodeLease(std::string_view text) {
  using R = Result<Lease>;
  json object = json::parse(text, nullptr, false);
  if (!object.is_object()) return R::failure("lease is not a JSON object");
  Lease lease;
  lease.raw = std::string(text);
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    lease.name = detail::stringField(*meta, "name");
    lease.ns = detail::stringField(*meta, "namespace");
    lease.resourceVersion = detail::stringField(*meta, "resourceVersion");
  }
  if (lease.name.empty()) return R::failure("lease has no metadata.name");
  auto specIt = object.find("spec");
  if (specIt == object.end() || specIt->is_null()) return lease;
  if (!specIt->is_object()) return R::failure("lease " + lease.name + ": spec is not an object");
  const json& spec = *specIt;
  lease.holderIdentity = detail::stringField(spec, "holderIdentity");
  auto duration = intField(spec, "leaseDurationSeconds");
  auto transitions = intField(spec, "leaseTransitions");
  auto acquired = timeField(spec, "acquireTime");
  auto renewed = timeField(spec, "renewTime");
  for (const std::string* error :
       {&duration.error(), &transitions.error(), &acquired.error(), &renewed.error()}) {
    if (!error->empty()) return R::failure("lease " + lease.name + ": " + *error);
  }
  lease.leaseDurationSeconds = *duration;
  lease.leaseTransitions = *transitions;
  lease.acquireTime = *acquired;
  lease.renewTime = *renewed;
  return lease;
}

LeaseResult getLease(KubeClient& client, std::string_view ns, std::string_view name,
                     std::chrono::milliseconds timeout) {
  ApiRequest request;
  request.path = leasesPath(ns) + "/" + escapePathSegment(name);
  request.timeout = timeout;
  return answer(client.send(request), "reading lease " + std::string(ns) + "/" + std::string(name));
}

LeaseResult createLease(KubeClient& client, const Lease& lease, std::chrono::milliseconds timeout) {
  Lease fresh = lease;
  fresh.resourceVersion.clear();
  ApiRequest request;
  request.method = "POST";
  request.path = leasesPath(lease.ns);
  request.body = encodeLease(fresh);
  request.timeout = timeout;
  return answer(client.send(request), "creating lease " + lease.ns + "/" + lease.name);
}

LeaseResult updateLease(KubeClient& client, const Lease& lease, std::chrono::milliseconds timeout) {
  ApiRequest request;
  request.method = "PUT";
  request.path = leasesPath(lease.ns) + "/" + escapePathSegment(lease.name);
  request.body = encodeLease(lease);
  request.timeout = timeout;
  return answer(client.send(request), "updating lease " + lease.ns + "/" + lease.name);
}

}  // namespace gpufair::k8s
