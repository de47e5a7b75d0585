// What kube-apiserver v1.26 checks on the objects gpufair writes (see fake_validation.h).
#include "k8s/fake_validation.h"

#include <regex>

namespace gpufair::k8s::fake {
namespace {

using nlohmann::json;
using Errors = std::vector<FieldError>;

constexpr std::size_t kEventShortLimit = 128;  // reportingInstance, action, reason
constexpr std::size_t kEventNoteLimit = 1024;  // message
constexpr std::size_t kAnnotationsLimit = 256 * 1024;

std::string quoted(const std::string& value) {
  return "\"" + value + "\"";
}

FieldError required(std::string field) {
  return {std::move(field), "Required value", ""};
}
FieldError invalid(std::string field, const std::string& value, std::string why) {
  return {std::move(field), "Invalid value", quoted(value) + ": " + std::move(why)};
}
FieldError forbidden(std::string field, std::string why) {
  return {std::move(field), "Forbidden", std::move(why)};
}
FieldError immutable(std::string field) {
  return {std::move(field), "Invalid value", "field is immutable"};
}

std::string causeReason(const std::string& type) {
  if (type == "Required value") return "FieldValueRequired";
  if (type == "Forbidden") return "FieldValueForbidden";
  if (type == "Unsupported value") return "FieldValueNotSupported";
  return "FieldValueInvalid";
}

std::string text(const json& object, const json::json_pointer& at) {
  if (!object.contains(at)) return {};
  const json& value = object.at(at);
  return value.is_string() ? value.get<std::string>() : std::string();
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string groupKind(const ResourcePath& where) {
  std::string kind = kindOf(where.resource);
  // "/apis/coordination.k8s.io/v1/leases" -> "Lease.coordination.k8s.io"
  if (where.collection.rfind("/apis/", 0) == 0) {
    const auto groupStart = std::string("/apis/").size();
    const auto slash = where.collection.find('/', groupStart);
    kind += "." + where.collection.substr(groupStart, slash - groupStart);
  }
  return kind;
}

std::optional<Rejection> toRejection(const ResourcePath& where, const std::string& name,
                                     Errors errors) {
  if (errors.empty()) return std::nullopt;
  Rejection out;
  std::string list;
  for (const auto& e : errors) list += (list.empty() ? "" : ", ") + e.str();
  if (errors.size() > 1) list = "[" + list + "]";
  out.message = groupKind(where) + " " + quoted(name) + " is invalid: " + list;
  out.causes = std::move(errors);
  return out;
}

void validateMetadata(const json& meta, const std::string& kind, Errors& errors) {
  const std::string name = member(meta, "name").is_string() ? meta["name"].get<std::string>() : "";
  if (!name.empty() && kind != "Event" && !isDns1123Subdomain(name)) {
    errors.push_back(invalid("metadata.name", name,
                             "a lowercase RFC 1123 subdomain must consist of lower case "
                             "alphanumeric characters, '-' or '.', and must start and end with an "
                             "alphanumeric character"));
  }
  const json& labels = member(meta, "labels");
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      if (!isQualifiedName(key)) {
        errors.push_back(invalid("metadata.labels", key, "name part must be a qualified name"));
      }
      const std::string v = value.is_string() ? value.get<std::string>() : std::string("?");
      if (!value.is_string() || !isLabelValue(v)) {
        errors.push_back(invalid("metadata.labels", v,
                                 "a valid label must be an empty string or consist of "
                                 "alphanumeric characters, '-', '_' or '.', at most 63"));
      }
    }
  }
  const json& annotations = member(meta, "annotations");
  if (annotations.is_object()) {
    std::size_t total = 0;
    for (const auto& [key, value] : annotations.items()) {
      if (!isQualifiedName(key)) {
        errors.push_back(
            invalid("metadata.annotations", key, "name part must be a qualified name"));
      }
      if (!value.is_string()) {
        errors.push_back(invalid("metadata.annotations", key, "value must be a string"));
        continue;
      }
      total += key.size() + value.get<std::string>().size();
    }
    if (total > kAnnotationsLimit) {
      errors.push_back({"metadata.annotations", "Too long",
                        "must have at most " + std::to_string(kAnnotationsLimit) + " bytes"});
    }
  }
}

// legacyValidateEvent: what a core/v1 Event must satisfy on create and on every update.
void validateEvent(const json& event, const std::string& ns, Errors& errors) {
  const std::string involvedNs = text(event, "/involvedObject/namespace"_json_pointer);
  const bool hasEventTime = event.contains("eventTime") && !event["eventTime"].is_null() &&
                            !text(event, "/eventTime"_json_pointer).empty();
  if (!hasEventTime) {
    const bool ok = involvedNs.empty() ? (ns.empty() || ns == "default") : ns == involvedNs;
    if (!ok)
      errors.push_back(
          invalid("involvedObject.namespace", involvedNs, "does not match event.namespace"));
  } else {
    if (involvedNs.empty() && ns != "default" && ns != "kube-system") {
      errors.push_back(
          invalid("involvedObject.namespace", involvedNs, "does not match event.namespace"));
    }
    const std::string controller = text(event, "/reportingComponent"_json_pointer);
    if (controller.empty()) {
      errors.push_back(required("reportingController"));
    } else if (!isQualifiedName(controller)) {
      errors.push_back(invalid("reportingController", controller,
                               "name part must consist of alphanumeric characters, '-', '_' or "
                               "'.', and must start and end with an alphanumeric character"));
    }
    auto limited = [&](const char* field, bool mandatory, std::size_t limit) {
      const std::string value = text(event, json::json_pointer(std::string("/") + field));
      if (mandatory && value.empty()) errors.push_back(required(field));
      if (value.size() > limit) {
        errors.push_back({field, "Invalid value",
                          "\"\": can have at most " + std::to_string(limit) + " characters"});
      }
    };
    limited("reportingInstance", true, kEventShortLimit);
    limited("action", true, kEventShortLimit);
    limited("reason", true, kEventShortLimit);
    limited("message", false, kEventNoteLimit);
  }
  if (!isDns1123Subdomain(ns)) {
    errors.push_back(invalid("namespace", ns, "a lowercase RFC 1123 subdomain is required"));
  }
}

void validateLease(const json& lease, Errors& errors) {
  const json& spec = member(lease, "spec");
  const json& duration = member(spec, "leaseDurationSeconds");
  if (!duration.is_null() && (!duration.is_number_integer() || duration.get<long long>() <= 0)) {
    errors.push_back(
        invalid("spec.leaseDurationSeconds", duration.dump(), "must be greater than 0"));
  }
  const json& transitions = member(spec, "leaseTransitions");
  if (!transitions.is_null() &&
      (!transitions.is_number_integer() || transitions.get<long long>() < 0)) {
    errors.push_back(
        invalid("spec.leaseTransitions", transitions.dump(), "must be greater than or equal to 0"));
  }
}

// A pod's spec may change only in a few fields after creation (ValidatePodUpdate).
void validatePodSpecUpdate(const json& before, const json& after, Errors& errors) {
  json a = member(before, "spec");
  json b = member(after, "spec");
  for (const char* key :
       {"activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations"}) {
    if (a.is_object()) a.erase(key);
    if (b.is_object()) b.erase(key);
  }
  for (const char* list : {"containers", "initContainers"}) {
    for (json* spec : {&a, &b}) {
      if (!spec->is_object() || !spec->contains(list) || !(*spec)[list].is_array()) continue;
      for (auto& container : (*spec)[list]) {
        if (container.is_object()) container.erase("image");
      }
    }
  }
  if (a != b) {
    errors.push_back(
        forbidden("spec",
                  "pod updates may not change fields other than `spec.containers[*].image`, "
                  "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, "
                  "`spec.tolerations` (only additions to existing tolerations) or "
                  "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                  "previously negative)"));
  }
}

std::optional<Rejection> badRequest(std::string message) {
  Rejection out;
  out.code = 400;
  out.reason = "BadRequest";
  out.message = std::move(message);
  return out;
}

std::optional<Rejection> uidConflict(const std::string& wanted, const json& pod) {
  const std::string actual = text(pod, "/metadata/uid"_json_pointer);
  if (wanted.empty() || wanted == actual) return std::nullopt;
  Rejection out;
  out.code = 409;
  out.reason = "Conflict";
  out.message =
      "Operation cannot be fulfilled on Pod \"" + text(pod, "/metadata/name"_json_pointer) +
      "\": Precondition failed: UID in precondition: " + wanted + ", UID in object meta: " + actual;
  return out;
}

}  // namespace

std::string FieldError::str() const {
  return field + ": " + type + (detail.empty() ? "" : ": " + detail);
}

std::string Rejection::body() const {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  if (!causes.empty()) {
    json list = json::array();
    for (const auto& c : causes) {
      list.push_back({{"reason", causeReason(c.type)},
                      {"message", c.type + (c.detail.empty() ? "" : ": " + c.detail)},
                      {"field", c.field}});
    }
    status["details"] = {{"causes", std::move(list)}};
  }
  return status.dump();
}

bool isDns1123Subdomain(const std::string& value) {
  static const std::regex kPattern(
      R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  return !value.empty() && value.size() <= 253 && std::regex_match(value, kPattern);
}

bool isQualifiedName(const std::string& value) {
  static const std::regex kName(R"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])");
  std::string name = value;
  const auto slash = value.find('/');
  if (slash != std::string::npos) {
    if (!isDns1123Subdomain(value.substr(0, slash))) return false;
    name = value.substr(slash + 1);
  }
  return !name.empty() && name.size() <= 63 && std::regex_match(name, kName);
}

bool isLabelValue(const std::string& value) {
  static const std::regex kValue(R"((([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?)");
  return value.size() <= 63 && std::regex_match(value, kValue);
}

std::optional<Rejection> validateCreate(const ResourcePath& where, const json& object) {
  const std::string kind = kindOf(where.resource);
  const json& sentKind = member(object, "kind");
  if (sentKind.is_string() && sentKind.get<std::string>() != kind) {
    return badRequest("the kind in the data (" + sentKind.get<std::string>() +
                      ") does not match the resource (" + where.resource + ")");
  }
  Errors errors;
  const json& meta = member(object, "metadata");
  validateMetadata(meta, kind, errors);
  if (kind == "Event") validateEvent(object, where.ns, errors);
  if (kind == "Lease") validateLease(object, errors);
  return toRejection(where, text(object, "/metadata/name"_json_pointer), std::move(errors));
}

std::optional<Rejection> validateUpdate(const ResourcePath& where, const json& before,
                                        const json& after) {
  const std::string kind = kindOf(where.resource);
  Errors errors;
  const json& meta = member(after, "metadata");
  validateMetadata(meta, kind, errors);
  for (const char* field : {"name", "namespace", "uid", "creationTimestamp", "generateName"}) {
    const json& was = member(member(before, "metadata"), field);
    const json& now = member(meta, field);
    if (!now.is_null() && was != now) errors.push_back(immutable(std::string("metadata.") + field));
  }
  if (kind == "Event") {
    validateEvent(after, where.ns, errors);
  } else if (kind == "Lease") {
    validateLease(after, errors);
  } else if (kind == "Pod") {
    validatePodSpecUpdate(before, after, errors);
  }
  return toRejection(where, where.name, std::move(errors));
}

std::optional<Rejection> validateBinding(const ResourcePath& where, const json& binding,
                                         const json& pod) {
  const std::string name = text(binding, "/metadata/name"_json_pointer);
  if (name != where.name) return badRequest("name in URL does not match name in Binding object");
  const std::string ns = text(binding, "/metadata/namespace"_json_pointer);
  if (!ns.empty() && ns != where.ns) {
    return badRequest(
        "the namespace of the provided object does not match the namespace sent on "
        "the request");
  }
  Errors errors;
  const std::string kind = text(binding, "/target/kind"_json_pointer);
  if (!kind.empty() && kind != "Node") {
    errors.push_back(
        {"target.kind", "Unsupported value", quoted(kind) + ": supported values: \"Node\""});
  }
  if (text(binding, "/target/name"_json_pointer).empty()) errors.push_back(required("target.name"));
  validateMetadata(member(binding, "metadata"), "Binding", errors);
  if (auto rejected = toRejection(where, name, std::move(errors))) {
    // The binding REST handler returns the aggregate as an internal error, not a StatusError.
    rejected->code = 500;
    rejected->reason = "InternalError";
    return rejected;
  }
  return uidConflict(text(binding, "/metadata/uid"_json_pointer), pod);
}

std::optional<Rejection> validateEviction(const ResourcePath& where, const json& eviction,
                                          const json& pod) {
  const std::string kind = text(eviction, "/kind"_json_pointer);
  const std::string version = text(eviction, "/apiVersion"_json_pointer);
  if (kind != "Eviction" || (version != "policy/v1" && version != "policy/v1beta1")) {
    return badRequest("no kind \"" + kind + "\" is registered for version \"" + version +
                      "\" in the eviction subresource");
  }
  if (text(eviction, "/metadata/name"_json_pointer) != where.name) {
    return badRequest("name in URL does not match name in Eviction object");
  }
  return uidConflict(text(eviction, "/deleteOptions/preconditions/uid"_json_pointer), pod);
}

}  // namespace gpufair::k8s::fake
