#include "gpufair/k8s/api.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "api_support.h"

namespace gpufair::k8s {

using nlohmann::json;

std::string escapePathSegment(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(segment.size());
  for (unsigned char c : segment) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string ApiError::describe() const {
  std::string out =
      httpStatus == 0 ? message : "HTTP " + std::to_string(httpStatus) + ": " + message;
  for (const auto& cause : causes) {
    if (!cause.empty() && message.find(cause) == std::string::npos) out += "; " + cause;
  }
  return out;
}

ApiError apiError(const ApiResponse& response) {
  ApiError error;
  if (!response.transportError.empty()) {
    error.message = response.transportError;
    return error;
  }
  error.httpStatus = response.status;
  json body = json::parse(response.body, nullptr, false);
  if (body.is_object()) {
    error.reason = detail::stringField(body, "reason");
    error.message = detail::stringField(body, "message");
    if (auto details = body.find("details"); details != body.end() && details->is_object()) {
      if (auto causes = details->find("causes"); causes != details->end() && causes->is_array()) {
        for (const auto& cause : *causes) {
          if (cause.is_object()) error.causes.push_back(detail::stringField(cause, "message"));
        }
      }
    }
  }
  if (error.message.empty()) {
    constexpr std::size_t kMaxBody = 200;
    error.message = response.body.empty() ? "empty answer" : response.body.substr(0, kMaxBody);
  }
  return error;
}

std::string formatTime(Timestamp time) {
  const std::time_t seconds =
      std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(time));
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string formatMicroTime(Timestamp time) {
  const auto whole = std::chrono::floor<std::chrono::seconds>(time);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time - whole).count();
  std::string out = formatTime(whole);
  char frac[24];
  std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(micros));
  out.insert(out.size() - 1, frac);
  return out;
}

namespace detail {

std::string stringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string dumpJson(const json& value) {
  // Invalid UTF-8 (from a pod name or a message) must not throw: it is replaced by U+FFFD.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string podPath(std::string_view ns, std::string_view name) {
  return "/api/v1/namespaces/" + escapePathSegment(ns) + "/pods/" + escapePathSegment(name);
}

// Cuts `text` to at most `limit` bytes without splitting a UTF-8 sequence.
std::string truncateUtf8(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

}  // namespace detail

namespace detail {

namespace {

// Printable ASCII other than '"' and '\\': written as it is by any JSON writer.
bool plainJson(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

}  // namespace

std::string bindingBody(std::string_view ns, std::string_view name, std::string_view uid,
                        std::string_view node,
                        const std::map<std::string, std::string>& annotations) {
  const bool plainAnnotations = std::all_of(
      annotations.begin(), annotations.end(),
      [](const auto& entry) { return plainJson(entry.first) && plainJson(entry.second); });
  if (plainAnnotations && plainJson(ns) && plainJson(name) && plainJson(uid) && plainJson(node)) {
    std::string body;
    body.reserve(128 + ns.size() + name.size() + uid.size() + node.size());
    body.append(R"({"apiVersion":"v1","kind":"Binding","metadata":{)");
    if (!annotations.empty()) {
      // std::map's order is the byte order nlohmann::json sorts an object's keys in.
      body.append(R"("annotations":{)");
      const char* comma = "";
      for (const auto& [key, value] : annotations) {
        body.append(comma).append("\"").append(key).append(R"(":")").append(value).append("\"");
        comma = ",";
      }
      body.append("},");
    }
    body.append(R"("name":")").append(name);
    body.append(R"(","namespace":")").append(ns);
    if (!uid.empty()) body.append(R"(","uid":")").append(uid);
    body.append(R"("},"target":{"apiVersion":"v1","kind":"Node","name":")").append(node);
    body.append(R"("}})");
    return body;
  }
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) metadata["uid"] = uid;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", std::move(metadata)},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  return dumpJson(binding);
}

}  // namespace detail

ApiRequest detail::bindingRequest(std::string_view ns, std::string_view name, std::string_view uid,
                                  std::string_view node, std::chrono::milliseconds timeout,
                                  const std::map<std::string, std::string>& annotations) {
  ApiRequest request;
  request.method = "POST";
  request.path = detail::podPath(ns, name) + "/binding";
  request.body = detail::bindingBody(ns, name, uid, node, annotations);
  request.timeout = timeout;
  return request;
}

Status detail::bindingOutcome(std::string_view ns, std::string_view name, std::string_view node,
                              const ApiResponse& response) {
  if (response.ok()) return Status::ok();
  return Status::error("binding " + std::string(ns) + "/" + std::string(name) + " to " +
                       std::string(node) + ": " + apiError(response).describe());
}

Status bindPod(KubeClient& client, std::string_view ns, std::string_view name, std::string_view uid,
               std::string_view node, std::chrono::milliseconds timeout,
               const std::map<std::string, std::string>& annotations) {
  return detail::bindingOutcome(
      ns, name, node,
      client.send(detail::bindingRequest(ns, name, uid, node, timeout, annotations)));
}

Status patchPodLabels(KubeClient& client, std::string_view ns, std::string_view name,
                      const std::map<std::string, std::string>& set,
                      const std::vector<std::string>& remove, std::string_view uid,
                      std::chrono::milliseconds timeout) {
  return detail::patchPodMetadata(client, ns, name, "labels", set, remove, uid, timeout, nullptr);
}

Status patchPodAnnotations(KubeClient& client, std::string_view ns, std::string_view name,
                           const std::map<std::string, std::string>& set, std::string_view uid,
                           std::chrono::milliseconds timeout) {
  return detail::patchPodMetadata(client, ns, name, "annotations", set, {}, uid, timeout, nullptr);
}

ApiRequest detail::metadataPatchRequest(std::string_view ns, std::string_view name,
                                        std::string_view field,
                                        const std::map<std::string, std::string>& set,
                                        const std::vector<std::string>& remove,
                                        std::string_view uid, std::chrono::milliseconds timeout) {
  json entries = json::object();
  for (const auto& key : remove) entries[key] = nullptr;
  for (const auto& [key, value] : set) entries[key] = value;
  json metadata = {{std::string(field), std::move(entries)}};
  if (!uid.empty()) metadata["uid"] = uid;
  ApiRequest request;
  request.method = "PATCH";
  request.path = detail::podPath(ns, name);
  request.contentType = "application/merge-patch+json";
  request.body = detail::dumpJson(json{{"metadata", std::move(metadata)}});
  request.timeout = timeout;
  return request;
}

Status detail::metadataPatchOutcome(std::string_view ns, std::string_view name,
                                    std::string_view field, const ApiResponse& response,
                                    ApiError* errorOut) {
  if (response.ok()) return Status::ok();
  ApiError error = apiError(response);
  std::string message = (field == "labels" ? "labelling " : "annotating ") + std::string(ns) + "/" +
                        std::string(name) + ": " + error.describe();
  if (errorOut != nullptr) *errorOut = std::move(error);
  return Status::error(std::move(message));
}

Status detail::patchPodMetadata(KubeClient& client, std::string_view ns, std::string_view name,
                                std::string_view field,
                                const std::map<std::string, std::string>& set,
                                const std::vector<std::string>& remove, std::string_view uid,
                                std::chrono::milliseconds timeout, ApiError* errorOut) {
  return metadataPatchOutcome(
      ns, name, field,
      client.send(metadataPatchRequest(ns, name, field, set, remove, uid, timeout)), errorOut);
}

const char* evictionOutcomeName(EvictionOutcome outcome) {
  switch (outcome) {
    case EvictionOutcome::kEvicted:
      return "evicted";
    case EvictionOutcome::kBlocked:
      return "blocked";
    case EvictionOutcome::kNotFound:
      return "not found";
    case EvictionOutcome::kError:
      return "error";
  }
  return "error";
}

EvictionResult evictPod(KubeClient& client, std::string_view ns, std::string_view name,
                        std::string_view uid, std::chrono::milliseconds timeout) {
  json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (!uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  ApiRequest request;
  request.method = "POST";
  request.path = detail::podPath(ns, name) + "/eviction";
  request.body = detail::dumpJson(eviction);
  request.timeout = timeout;
  ApiResponse response = client.send(request);
  if (response.ok()) return {EvictionOutcome::kEvicted, ""};
  ApiError error = apiError(response);
  std::string message =
      "evicting " + std::string(ns) + "/" + std::string(name) + ": " + error.describe();
  switch (error.httpStatus) {
    case 429:
      return {EvictionOutcome::kBlocked, std::move(message)};
    case 404:
      return {EvictionOutcome::kNotFound, std::move(message)};
    case 409:
      // The uid precondition failed: the pod we meant is gone and another took its name.
      if (!uid.empty()) return {EvictionOutcome::kNotFound, std::move(message)};
      break;
    default:
      break;
  }
  return {EvictionOutcome::kError, std::move(message)};
}

std::string eventNamespace(const ObjectRef& object) {
  return object.ns.empty() ? std::string("default") : object.ns;
}

Result<std::string> createEvent(KubeClient& client, const EventSpec& event) {
  constexpr std::size_t kMaxMessage = 1024;  // the API server's limit on an Event's note
  constexpr std::size_t kMaxShort = 128;     // reason, action, reportingInstance
  if (event.reason.empty() || event.action.empty()) {
    return Result<std::string>::failure("not writing an Event for " + event.object.kind + " " +
                                        event.object.name +
                                        " without reason and action (reason \"" + event.reason +
                                        "\", action \"" + event.action + "\")");
  }
  const std::string ns = eventNamespace(event.object);
  json involved = {{"kind", event.object.kind},
                   {"apiVersion", event.object.apiVersion},
                   {"name", event.object.name}};
  if (!event.object.ns.empty()) involved["namespace"] = event.object.ns;
  if (!event.object.uid.empty()) involved["uid"] = event.object.uid;
  if (!event.object.resourceVersion.empty()) {
    involved["resourceVersion"] = event.object.resourceVersion;
  }
  const std::string instance =
      event.reportingInstance.empty() ? std::string(kComponent) : event.reportingInstance;
  json body = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"generateName", event.object.name + "."}, {"namespace", ns}}},
               {"involvedObject", std::move(involved)},
               {"reason", detail::truncateUtf8(event.reason, kMaxShort)},
               {"message", detail::truncateUtf8(event.message, kMaxMessage)},
               {"type", event.type == EventType::kWarning ? "Warning" : "Normal"},
               {"source", {{"component", kComponent}}},
               {"firstTimestamp", formatTime(event.firstTimestamp)},
               {"lastTimestamp", formatTime(event.lastTimestamp)},
               {"eventTime", formatMicroTime(event.firstTimestamp)},
               {"count", event.count},
               {"reportingComponent", kComponent},
               {"reportingInstance", detail::truncateUtf8(instance, kMaxShort)},
               {"action", detail::truncateUtf8(event.action, kMaxShort)}};
  ApiRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/" + escapePathSegment(ns) + "/events";
  request.body = detail::dumpJson(body);
  ApiResponse response = client.send(request);
  if (!response.ok()) {
    return Result<std::string>::failure("creating event " + event.reason + " for " +
                                        event.object.kind + " " + event.object.name + ": " +
                                        apiError(response).describe());
  }
  json created = json::parse(response.body, nullptr, false);
  std::string name;
  if (created.is_object()) {
    if (auto meta = created.find("metadata"); meta != created.end() && meta->is_object()) {
      name = detail::stringField(*meta, "name");
    }
  }
  return name;
}

Status updateEvent(KubeClient& client, std::string_view ns, std::string_view name, int count,
                   Timestamp lastTimestamp, std::string_view message, bool* notFound) {
  constexpr std::size_t kMaxMessage = 1024;
  ApiRequest request;
  request.method = "PATCH";
  request.path =
      "/api/v1/namespaces/" + escapePathSegment(ns) + "/events/" + escapePathSegment(name);
  request.contentType = "application/merge-patch+json";
  request.body = detail::dumpJson(json{{"count", count},
                                       {"lastTimestamp", formatTime(lastTimestamp)},
                                       {"message", detail::truncateUtf8(message, kMaxMessage)}});
  ApiResponse response = client.send(request);
  if (notFound != nullptr) *notFound = response.transportError.empty() && response.status == 404;
  if (response.ok()) return Status::ok();
  return Status::error("updating event " + std::string(ns) + "/" + std::string(name) + ": " +
                       apiError(response).describe());
}

}  // namespace gpufair::k8s
