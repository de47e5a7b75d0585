// Validation of what clients write, as kube-apiserver v1.26 does it, for the objects gpufair
// writes: Events (core/v1, including the rules for Events with eventTime), Bindings, Evictions,
// Leases, and metadata (names, labels, annotations) plus immutable fields on every create, update
// and patch. A fake that accepts what the real server rejects hides bugs (an Event without `action`
// passed every test and failed in every real cluster), so each rule here mirrors the upstream
// validation (pkg/apis/core/validation, apimachinery's ObjectMeta and label validation) and is
// answered as the real server answers: 422 Invalid with the field errors in the message and in
// details.causes, 400 BadRequest for a body that does not match its URL, 409 Conflict for a uid
// precondition.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/fake_store.h"

namespace gpufair::k8s::fake {

// One field error, printed as apimachinery prints it ("action: Required value").
struct FieldError {
  std::string field;
  std::string type;    // "Required value", "Invalid value", "Forbidden", "Too long"
  std::string detail;  // the value and/or explanation; may be empty
  std::string str() const;
};

// A rejection: the HTTP status, the Status reason and message, and the field causes.
struct Rejection {
  int code = 422;
  std::string reason = "Invalid";
  std::string message;
  std::vector<FieldError> causes;
  std::string body() const;  // the Status object as JSON text
};

// The rules, exposed for the validation's own tests.
bool isDns1123Subdomain(const std::string& value);
bool isQualifiedName(const std::string& value);
bool isLabelValue(const std::string& value);

// POST to a collection: `object` as sent (after the server filled name from generateName).
std::optional<Rejection> validateCreate(const ResourcePath& where, const nlohmann::json& object);
// PUT, or the result of a PATCH: `before` as stored, `after` as it would be stored.
std::optional<Rejection> validateUpdate(const ResourcePath& where, const nlohmann::json& before,
                                        const nlohmann::json& after);
// POST pods/NAME/binding, against the pod as stored.
std::optional<Rejection> validateBinding(const ResourcePath& where, const nlohmann::json& binding,
                                         const nlohmann::json& pod);
// POST pods/NAME/eviction, against the pod as stored.
std::optional<Rejection> validateEviction(const ResourcePath& where, const nlohmann::json& eviction,
                                          const nlohmann::json& pod);

}  // namespace gpufair::k8s::fake
