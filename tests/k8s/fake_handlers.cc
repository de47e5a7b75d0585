// REST semantics of FakeApiServer: GET/LIST/POST/PUT/PATCH/DELETE and the binding and eviction
// subresources, answering like kube-apiserver (objects, lists, Status bodies).
#include <charconv>

#include "k8s/fake_server_state.h"
#include "k8s/fake_validation.h"

namespace gpufair::k8s::fake {
namespace {

using nlohmann::json;

HttpResponse notFound(const ResourcePath& where) {
  return statusResponse(404, "NotFound", where.resource + " \"" + where.name + "\" not found");
}

HttpResponse fromResult(const StoreResult& result) {
  if (!result.ok() && !result.body.empty()) return {result.code, result.body, "application/json"};
  if (!result.ok()) return statusResponse(result.code, result.reason, result.message);
  return objectResponse(result.code, result.object);
}

std::optional<json> parseBody(const HttpRequest& request) {
  auto body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return std::nullopt;
  return body;
}

HttpResponse badBody() {
  return statusResponse(400, "BadRequest", "the request body is not a JSON object");
}

HttpResponse rejectionResponse(const Rejection& rejection) {
  return {rejection.code, rejection.body(), "application/json"};
}

// The answer a store mutation gives when the changed object fails validation.
StoreResult rejectedMutation(const Rejection& rejection) {
  StoreResult out = StoreResult::failure(rejection.code, rejection.reason, rejection.message);
  out.body = rejection.body();
  return out;
}

std::uint64_t toNumber(const std::string& text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

HttpResponse list(FakeApiServer::State& state, const ResourcePath& where,
                  const HttpRequest& request) {
  Selector selector;
  try {
    selector =
        Selector::parse(request.queryValue("labelSelector"), request.queryValue("fieldSelector"));
  } catch (const std::exception& e) {
    return statusResponse(400, "BadRequest", e.what());
  }
  auto limit = toNumber(request.queryValue("limit"));
  auto token = request.queryValue("continue");
  ListSnapshot snapshot;
  std::size_t offset = 0;
  if (!token.empty()) {
    auto colon = token.find(':');
    auto found = colon == std::string::npos
                     ? std::nullopt
                     : state.store.findSnapshot(toNumber(token.substr(0, colon)));
    if (!found) {
      return statusResponse(410, "Expired",
                            "The provided continue parameter is too old to display a consistent "
                            "list result. You can start a new list without the continue "
                            "parameter.");
    }
    snapshot = std::move(*found);
    offset = toNumber(token.substr(colon + 1));
  } else {
    snapshot = state.store.snapshot(where);
  }
  std::string items;
  std::size_t count = 0;
  std::size_t next = snapshot.items.size();
  for (std::size_t i = offset; i < snapshot.items.size(); ++i) {
    const auto& object = snapshot.items[i];
    if (!selector.matches(object->value)) continue;
    if (limit > 0 && count == limit) {
      next = i;
      break;
    }
    if (count++ > 0) items += ',';
    items += object->text;
  }
  std::string continueToken;
  if (next < snapshot.items.size()) {
    auto id = snapshot.id != 0 ? snapshot.id : state.store.keepSnapshot(snapshot);
    continueToken = std::to_string(id) + ":" + std::to_string(next);
  }
  json metadata = {{"resourceVersion", std::to_string(snapshot.rv)}};
  if (!continueToken.empty()) metadata["continue"] = continueToken;
  auto kind = kindOf(where.resource) + "List";
  std::string body = R"({"kind":")" + kind + R"(","apiVersion":"v1","metadata":)" +
                     metadata.dump() + R"(,"items":[)";
  body.reserve(body.size() + items.size() + 2);
  body += items;
  body += "]}";
  return {200, std::move(body), "application/json"};
}

HttpResponse create(FakeApiServer::State& state, const ResourcePath& where,
                    const HttpRequest& request) {
  auto body = parseBody(request);
  if (!body) return badBody();
  auto& meta = (*body)["metadata"];
  if (meta.is_object() && meta.contains("namespace") && !where.ns.empty() &&
      meta["namespace"] != where.ns) {
    return statusResponse(400, "BadRequest",
                          "the namespace of the provided object does not match the namespace "
                          "sent on the request");
  }
  json named = *body;
  if (named["metadata"].is_object() && !named["metadata"].contains("name") &&
      named["metadata"].contains("generateName")) {
    named["metadata"]["name"] = named["metadata"]["generateName"];
  }
  if (auto rejected = validateCreate(where, named)) return rejectionResponse(*rejected);
  return fromResult(state.store.create(where, std::move(*body)));
}

HttpResponse bind(FakeApiServer::State& state, const ResourcePath& where,
                  const HttpRequest& request) {
  auto body = parseBody(request);
  if (!body) return badBody();
  // An empty target is refused by validateBinding, as kube-apiserver's ValidatePodBinding does.
  auto node = body->value("/target/name"_json_pointer, std::string());
  ResourcePath pod = where;
  pod.subresource.clear();
  auto result = state.store.mutate(pod, [&](json& object) {
    if (auto rejected = validateBinding(where, *body, object)) return rejectedMutation(*rejected);
    auto current = object.value("/spec/nodeName"_json_pointer, std::string());
    if (!current.empty()) {
      return StoreResult::failure(409, "Conflict",
                                  "Operation cannot be fulfilled on pods/binding \"" + where.name +
                                      "\": pod " + where.name + " is already assigned to node \"" +
                                      current + "\"");
    }
    object["spec"]["nodeName"] = node;
    // kube-apiserver's setPodHostAndAnnotations: the Binding's annotations are merged into the
    // pod's in the same write.
    const json annotations = body->value("/metadata/annotations"_json_pointer, json::object());
    if (annotations.is_object()) {
      for (const auto& [key, value] : annotations.items()) {
        object["metadata"]["annotations"][key] = value;
      }
    }
    return StoreResult{201, "", "", nullptr, {}};
  });
  if (!result.ok()) return fromResult(result);
  return statusResponse(201, "", "");
}

HttpResponse evict(FakeApiServer::State& state, const ResourcePath& where,
                   const HttpRequest& request) {
  auto body = parseBody(request);
  if (!body) return badBody();
  {
    ResourcePath item = where;
    item.subresource.clear();
    auto pod = state.store.get(item);
    if (!pod) return notFound(item);
    if (auto rejected = validateEviction(where, *body, pod->value)) {
      return rejectionResponse(*rejected);
    }
  }
  {
    std::lock_guard lock(state.mu);
    if (state.protectedPods.count(where.ns + "/" + where.name) != 0) {
      return statusResponse(429, "TooManyRequests",
                            "Cannot evict pod as it would violate the pod's disruption budget.");
    }
  }
  ResourcePath pod = where;
  pod.subresource.clear();
  auto result = state.store.remove(pod);
  if (!result.ok()) return statusResponse(result.code, result.reason, result.message);
  return statusResponse(201, "", "");
}

HttpResponse patch(FakeApiServer::State& state, const ResourcePath& where,
                   const HttpRequest& request) {
  auto type = request.contentType.substr(0, request.contentType.find(';'));
  bool jsonPatch = type == "application/json-patch+json";
  if (!jsonPatch && type != "application/merge-patch+json" &&
      type != "application/strategic-merge-patch+json") {
    return statusResponse(415, "UnsupportedMediaType",
                          "the body of the request was in an unknown format - accepted media "
                          "types include: application/json-patch+json, "
                          "application/merge-patch+json, application/strategic-merge-patch+json");
  }
  auto body = json::parse(request.body, nullptr, false);
  if (body.is_discarded()) return badBody();
  ResourcePath item = where;
  item.subresource.clear();
  auto result = state.store.mutate(item, [&](json& object) {
    const json before = object;
    try {
      if (jsonPatch) {
        object = object.patch(body);
      } else {
        object.merge_patch(body);
      }
    } catch (const std::exception& e) {
      return StoreResult::failure(422, "Invalid", std::string("the patch failed: ") + e.what());
    }
    if (auto rejected = validateUpdate(where, before, object)) return rejectedMutation(*rejected);
    object["metadata"]["name"] = where.name;
    return StoreResult{};
  });
  return fromResult(result);
}

}  // namespace

HttpResponse statusResponse(int code, const std::string& reason, const std::string& message) {
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", json::object()},
                 {"status", code < 300 ? "Success" : "Failure"},
                 {"code", code}};
  if (!message.empty()) status["message"] = message;
  if (!reason.empty()) status["reason"] = reason;
  return {code, status.dump(), "application/json"};
}

HttpResponse objectResponse(int code, const ObjectPtr& object) {
  return {code, object->text, "application/json"};
}

HttpResponse handleRest(FakeApiServer::State& state, const HttpRequest& request) {
  auto where = parseResourcePath(request.path);
  if (!where) {
    return statusResponse(404, "NotFound", "the server could not find the requested resource");
  }
  const auto& method = request.method;
  if (where->name.empty()) {
    if (method == "GET") return list(state, *where, request);
    if (method == "POST") return create(state, *where, request);
    return statusResponse(405, "MethodNotAllowed", method + " is not supported on collections");
  }
  const auto& sub = where->subresource;
  if (sub == "binding" && method == "POST") return bind(state, *where, request);
  if (sub == "eviction" && method == "POST") return evict(state, *where, request);
  if (!sub.empty() && sub != "status") {
    return statusResponse(404, "NotFound", "the server could not find the requested resource");
  }
  ResourcePath item = *where;
  item.subresource.clear();
  if (method == "GET") {
    auto object = state.store.get(item);
    return object ? objectResponse(200, object) : notFound(item);
  }
  if (method == "PUT") {
    auto body = parseBody(request);
    if (!body) return badBody();
    auto current = state.store.get(item);
    if (!current) return notFound(item);
    json merged = *body;
    // The server keeps what it owns (uid, creationTimestamp) when the client leaves it out.
    for (const char* key : {"uid", "creationTimestamp"}) {
      if (!merged["metadata"].contains(key) && current->value["metadata"].contains(key)) {
        merged["metadata"][key] = current->value["metadata"][key];
      }
    }
    if (auto rejected = validateUpdate(item, current->value, merged)) {
      return rejectionResponse(*rejected);
    }
    return fromResult(state.store.update(item, std::move(*body)));
  }
  if (method == "PATCH") return patch(state, item, request);
  if (method == "DELETE") return fromResult(state.store.remove(item));
  return statusResponse(405, "MethodNotAllowed", method + " is not supported");
}

}  // namespace gpufair::k8s::fake
