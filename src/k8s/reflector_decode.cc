#include "reflector_decode.h"

namespace gpufair::k8s {
namespace {

namespace od = simdjson::ondemand;

std::string errorText(simdjson::error_code error) {
  return simdjson::error_message(error);
}

}  // namespace

Result<ListPage> ListDecoder::decode(std::string& body, std::vector<std::string>& items) {
  using R = Result<ListPage>;
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (auto error = parser_.iterate(body).get(doc)) return R::failure(errorText(error));
  od::object top;
  if (doc.get_object().get(top)) return R::failure("the list is not an object");
  ListPage page;
  bool sawItems = false;
  for (auto field : top) {
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return R::failure(errorText(error));
    if (key == "metadata") {
      od::object metadata;
      if (auto error = field.value().get_object().get(metadata)) {
        return R::failure("metadata: " + errorText(error));
      }
      for (auto entry : metadata) {
        std::string_view name;
        if (auto error = entry.unescaped_key().get(name)) return R::failure(errorText(error));
        std::string_view value;
        if (name == "resourceVersion" || name == "continue") {
          if (auto error = entry.value().get_string().get(value)) {
            return R::failure("metadata." + std::string(name) + ": " + errorText(error));
          }
          (name == "continue" ? page.continueToken : page.resourceVersion) = value;
        }
      }
    } else if (key == "items") {
      sawItems = true;
      od::value value;
      if (auto error = field.value().get(value)) return R::failure(errorText(error));
      if (value.is_null()) continue;  // "items": null for an empty list
      od::array array;
      if (auto error = value.get_array().get(array))
        return R::failure("items: " + errorText(error));
      for (auto element : array) {
        od::object item;
        if (auto error = element.get_object().get(item)) {
          return R::failure("items[]: " + errorText(error));
        }
        std::string_view raw;
        if (auto error = item.raw_json().get(raw)) return R::failure(errorText(error));
        items.emplace_back(raw);
      }
    }
  }
  if (!sawItems) return R::failure("the list has no items field");
  if (page.resourceVersion.empty()) return R::failure("the list has no metadata.resourceVersion");
  return page;
}

namespace {

std::string_view trimJsonSpace(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// The API server writes every event as {"type":"<TYPE>","object":<object>} (Go's encoding of a
// metav1.WatchEvent, fields in that order, no spaces). For such a line, the object's text and the
// type, without parsing; anything else returns false and takes the general path.
bool splitCanonical(std::string_view line, std::string_view& type, std::string_view& object) {
  constexpr std::string_view kHead = R"({"type":")";
  constexpr std::string_view kObject = R"(","object":)";
  line = trimJsonSpace(line);
  if (line.size() < kHead.size() + kObject.size() + 3 || line.substr(0, kHead.size()) != kHead ||
      line.back() != '}') {
    return false;
  }
  const std::size_t end = line.find('"', kHead.size());
  if (end == std::string_view::npos || line.substr(end, kObject.size()) != kObject) return false;
  type = line.substr(kHead.size(), end - kHead.size());
  for (char c : type) {
    if (c < 'A' || c > 'Z') return false;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  }
  object =
      trimJsonSpace(line.substr(end + kObject.size(), line.size() - 1 - (end + kObject.size())));
  return !object.empty() && object.front() == '{' && object.back() == '}';
}

}  // namespace

Result<WatchEvent> WatchDecoder::decode(std::string_view line) {
  using R = Result<WatchEvent>;
  WatchEvent event;
  simdjson::dom::element object;
  std::string_view type;
  std::string_view text;
  // The object is parsed once here (validating it and reading what the reflector needs) and
  // passed on as the server's own text, not re-encoded. A line of another shape (or one the split
  // misreads) is parsed whole.
  if (splitCanonical(line, type, text) &&
      parser_.parse(text.data(), text.size()).get(object) == simdjson::SUCCESS) {
    event.type = type;
  } else {
    simdjson::dom::element doc;
    if (auto error = parser_.parse(line.data(), line.size()).get(doc)) {
      return R::failure(errorText(error));
    }
    if (doc["type"].get(type)) return R::failure("the event has no type");
    event.type = type;
    if (doc["object"].get(object)) return R::failure("the event has no object");
    text = {};
  }
  if (event.type == "ERROR") {
    std::int64_t code = 0;
    if (!object["code"].get(code)) event.code = code;
    std::string_view message;
    if (!object["message"].get(message)) event.message = message;
    return event;
  }
  simdjson::dom::object fields;
  if (object.get(fields)) return R::failure("the event's object is not a JSON object");
  std::string_view rv;
  if (!object.at_pointer("/metadata/resourceVersion").get(rv)) event.resourceVersion = rv;
  if (event.type == "BOOKMARK") return event;
  if (text.empty()) {
    minified_ = simdjson::minify(object);
    text = minified_;
  }
  event.object = text;
  event.parsed = object;
  return event;
}

}  // namespace gpufair::k8s
