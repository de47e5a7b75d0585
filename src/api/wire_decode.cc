#include <string>

#include "gpufair/api/wire.h"
#include "gpufair/codec/objects.h"

namespace gpufair::api {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

std::string typeError(std::string_view path, std::string_view expected, element value) {
  std::string message(path);
  message += ": expected ";
  message += expected;
  message += ", got ";
  message += jsonTypeName(value);
  return message;
}

std::string indexed(std::string_view path, std::size_t index) {
  std::string out(path);
  out += '[';
  out += std::to_string(index);
  out += ']';
  return out;
}

Status asObject(element value, std::string_view path, object& out) {
  if (value.get_object().get(out) != simdjson::SUCCESS) {
    return Status::error(typeError(path, "an object", value));
  }
  return Status::ok();
}

Status asArray(element value, std::string_view path, array& out) {
  if (value.get_array().get(out) != simdjson::SUCCESS) {
    return Status::error(typeError(path, "an array", value));
  }
  return Status::ok();
}

// An optional string field: absent or null leaves `out` empty.
Status stringField(object parent, std::string_view key, std::string& out) {
  element value;
  if (!codec::field(parent, key, value)) return Status::ok();
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    return Status::error(typeError(key, "a string", value));
  }
  out.assign(text);
  return Status::ok();
}

Status int64Field(object parent, std::string_view path, std::string_view key, std::int64_t& out) {
  element value;
  if (!codec::field(parent, key, value)) return Status::ok();
  if (value.get_int64().get(out) != simdjson::SUCCESS) {
    std::string where(path);
    where += '.';
    where += key;
    return Status::error(typeError(where, "an integer", value));
  }
  return Status::ok();
}

Status rootObject(element root, object& out) {
  if (root.get_object().get(out) != simdjson::SUCCESS) {
    return Status::error(typeError("request body", "a JSON object", root));
  }
  return Status::ok();
}

Status decodePodField(object root, policy::Pod& out) {
  element value;
  if (!codec::field(root, "Pod", value)) return Status::error("missing Pod");
  if (!value.is_object()) return Status::error(typeError("Pod", "an object", value));
  auto pod = codec::decodePod(value);
  if (!pod) return Status::error("Pod: " + pod.error());
  out = std::move(pod).value();
  return Status::ok();
}

Status decodeNodeNames(element value, ExtenderArgs& out) {
  array names;
  if (auto status = asArray(value, "NodeNames", names); !status.isOk()) return status;
  out.candidates.reserve(names.size());
  std::size_t index = 0;
  for (element name : names) {
    std::string_view text;
    if (name.get_string().get(text) != simdjson::SUCCESS) {
      return Status::error(typeError(indexed("NodeNames", index), "a string", name));
    }
    out.candidates.push_back(text);
    ++index;
  }
  return Status::ok();
}

Status decodeNodeList(element value, ExtenderArgs& out) {
  object list;
  if (auto status = asObject(value, "Nodes", list); !status.isOk()) return status;
  out.nodesMode = true;
  element itemsValue;
  if (!codec::field(list, "items", itemsValue)) return Status::ok();  // an empty NodeList
  array items;
  if (auto status = asArray(itemsValue, "Nodes.items", items); !status.isOk()) return status;
  std::size_t index = 0;
  for (element item : items) {
    const std::string path = indexed("Nodes.items", index++);
    if (!item.is_object()) return Status::error(typeError(path, "an object", item));
    auto node = codec::decodeNode(item);
    if (!node) return Status::error(path + ": " + node.error());
    if (node->name.empty()) return Status::error(path + ": node without metadata.name");
    out.nodes.push_back(std::move(node).value());
    out.nodeObjects.push_back(item);
  }
  // Views are taken only now: `nodes` no longer reallocates.
  out.candidates.reserve(out.nodes.size());
  for (const auto& node : out.nodes) out.candidates.push_back(node.name);
  return Status::ok();
}

Status decodeMetaVictims(element value, const std::string& path, MetaVictims& out) {
  if (value.is_null()) return Status::ok();
  object victims;
  if (auto status = asObject(value, path, victims); !status.isOk()) return status;
  if (auto status = int64Field(victims, path, "NumPDBViolations", out.numPdbViolations);
      !status.isOk()) {
    return status;
  }
  element podsValue;
  if (!codec::field(victims, "Pods", podsValue)) return Status::ok();
  array pods;
  if (auto status = asArray(podsValue, path + ".Pods", pods); !status.isOk()) return status;
  std::size_t index = 0;
  for (element pod : pods) {
    const std::string podPath = indexed(path + ".Pods", index++);
    if (pod.is_null()) continue;
    object metaPod;
    if (auto status = asObject(pod, podPath, metaPod); !status.isOk()) return status;
    std::string uid;
    if (auto status = stringField(metaPod, "UID", uid); !status.isOk()) {
      return Status::error(podPath + "." + status.reason());
    }
    out.podUids.push_back(std::move(uid));
  }
  return Status::ok();
}

// Victims {Pods []*v1.Pod, NumPDBViolations}: each pod is reduced to metadata.uid.
Status decodeVictims(element value, const std::string& path, MetaVictims& out) {
  if (value.is_null()) return Status::ok();
  object victims;
  if (auto status = asObject(value, path, victims); !status.isOk()) return status;
  if (auto status = int64Field(victims, path, "NumPDBViolations", out.numPdbViolations);
      !status.isOk()) {
    return status;
  }
  element podsValue;
  if (!codec::field(victims, "Pods", podsValue)) return Status::ok();
  array pods;
  if (auto status = asArray(podsValue, path + ".Pods", pods); !status.isOk()) return status;
  std::size_t index = 0;
  for (element pod : pods) {
    const std::string podPath = indexed(path + ".Pods", index++);
    if (pod.is_null()) continue;
    object podObject;
    object metadata;
    element metadataValue;
    if (auto status = asObject(pod, podPath, podObject); !status.isOk()) return status;
    std::string uid;
    if (codec::field(podObject, "metadata", metadataValue)) {
      if (auto status = asObject(metadataValue, podPath + ".metadata", metadata); !status.isOk()) {
        return status;
      }
      if (auto status = stringField(metadata, "uid", uid); !status.isOk()) {
        return Status::error(podPath + ".metadata." + status.reason());
      }
    }
    out.podUids.push_back(std::move(uid));
  }
  return Status::ok();
}

Status decodeVictimMap(object root, std::string_view key, bool meta, PreemptionArgs& out) {
  element value;
  if (!codec::field(root, key, value)) return Status::ok();
  object map;
  if (auto status = asObject(value, key, map); !status.isOk()) return status;
  for (auto [node, victimsValue] : map) {
    std::string path(key);
    path += '[';
    path += node;
    path += ']';
    MetaVictims victims;
    auto status = meta ? decodeMetaVictims(victimsValue, path, victims)
                       : decodeVictims(victimsValue, path, victims);
    if (!status.isOk()) return status;
    out.victims.emplace_back(std::string(node), std::move(victims));
  }
  return Status::ok();
}

}  // namespace

void ExtenderArgs::clear() {
  pod = policy::Pod{};
  nodesMode = false;
  nodes.clear();
  nodeObjects.clear();
  candidates.clear();
  candidatesKnown = {};
}

const char* jsonTypeName(element value) {
  switch (value.type()) {
    case element_type::ARRAY:
      return "array";
    case element_type::OBJECT:
      return "object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "number";
    case element_type::STRING:
      return "string";
    case element_type::BOOL:
      return "boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "unknown";
}

Status decodeExtenderArgs(element root, ExtenderArgs& out) {
  out.clear();
  object args;
  if (auto status = rootObject(root, args); !status.isOk()) return status;
  if (auto status = decodePodField(args, out.pod); !status.isOk()) return status;
  element value;
  if (codec::field(args, "NodeNames", value)) return decodeNodeNames(value, out);
  if (codec::field(args, "Nodes", value)) return decodeNodeList(value, out);
  return Status::error("neither NodeNames nor Nodes given");
}

Status decodePreemptionArgs(element root, PreemptionArgs& out) {
  out = PreemptionArgs{};
  object args;
  if (auto status = rootObject(root, args); !status.isOk()) return status;
  if (auto status = decodePodField(args, out.pod); !status.isOk()) return status;
  element meta;
  if (codec::field(args, "NodeNameToMetaVictims", meta)) {
    return decodeVictimMap(args, "NodeNameToMetaVictims", true, out);
  }
  return decodeVictimMap(args, "NodeNameToVictims", false, out);
}

Status decodeBindingArgs(element root, BindingArgs& out) {
  out = BindingArgs{};
  object args;
  if (auto status = rootObject(root, args); !status.isOk()) return status;
  for (auto [key, target] :
       {std::pair{"PodName", &out.podName}, std::pair{"PodNamespace", &out.podNamespace},
        std::pair{"PodUID", &out.podUid}, std::pair{"Node", &out.node}}) {
    if (auto status = stringField(args, key, *target); !status.isOk()) return status;
  }
  if (out.node.empty()) return Status::error("missing Node");
  if (out.podUid.empty() && out.podName.empty()) return Status::error("missing PodUID and PodName");
  return Status::ok();
}

}  // namespace gpufair::api
