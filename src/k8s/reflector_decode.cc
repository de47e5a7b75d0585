#include "reflector_decode.h"

namespace gpufair::k8s {
namespace {

namespace od = simdjson::ondemand;

std::string errorText(simdjson::error_code error) { return simdjson::error_message(error); }

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
      if (auto error = value.get_array().get(array)) return R::failure("items: " + errorText(error));
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

Result<WatchEvent> WatchDecoder::decode(std::string_view line) {
  using R = Result<WatchEvent>;
  simdjson::dom::element doc;
  if (auto error = parser_.parse(line.data(), line.size()).get(doc)) {
    return R::failure(errorText(error));
  }
  WatchEvent event;
  std::string_view type;
  if (doc["type"].get(type)) return R::failure("the event has no type");
  event.type = type;
  simdjson::dom::element object;
  if (doc["object"].get(object)) return R::failure("the event has no object");
  if (event.type == "ERROR") {
    std::int64_t code = 0;
    if (!object["code"].get(code)) event.code = code;
    std::string_view message;
    if (!object["message"].get(message)) event.message = message;
    return event;
  }
  std::string_view rv;
  if (!object.at_pointer("/metadata/resourceVersion").get(rv)) event.resourceVersion = rv;
  if (event.type != "BOOKMARK") event.object = simdjson::minify(object);
  return event;
}

}  // namespace gpufair::k8s
