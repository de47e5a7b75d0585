#include "gpufair/k8s/sinks.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "gpufair/codec/objects.h"
#include "gpufair/codec/pod_conditions.h"
#include "gpufair/state/pod_cache.h"

namespace gpufair::k8s {

std::string ObjectMeta::describe() const {
  if (name.empty()) return "(unnamed object)";
  return ns.empty() ? name : ns + "/" + name;
}

ObjectMeta peekMeta(std::string_view json) {
  thread_local simdjson::dom::parser parser;
  ObjectMeta meta;
  simdjson::padded_string padded(json);
  simdjson::dom::object root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) return meta;
  simdjson::dom::element metadata;
  simdjson::dom::object fields;
  if (!codec::field(root, "metadata", metadata) || metadata.get(fields) != simdjson::SUCCESS) {
    return meta;
  }
  auto read = [&](std::string_view key, std::string& out) {
    simdjson::dom::element value;
    std::string_view text;
    if (codec::field(fields, key, value) && value.get(text) == simdjson::SUCCESS) out = text;
  };
  read("namespace", meta.ns);
  read("name", meta.name);
  read("uid", meta.uid);
  return meta;
}

// --- nodes --------------------------------------------------------------------------------------

NodeSink::NodeSink(state::Mirror& mirror) : mirror_(mirror) {}

void NodeSink::replace(const std::vector<std::string>& items) {
  beginList();
  std::vector<std::string> page = items;
  listPage(page);
  endList();
}

void NodeSink::beginList() {
  listed_.clear();
}

void NodeSink::listPage(std::vector<std::string>& items) {
  for (const auto& item : items) {
    auto node = codec::decodeNodeJson(item);
    if (!node) {
      ++decodeErrors_;
      spdlog::warn("node {} skipped: {}", peekMeta(item).describe(), node.error());
      continue;
    }
    listed_.push_back(std::move(node).value());
  }
}

void NodeSink::endList() {
  spdlog::info("node list: {} nodes", listed_.size());
  mirror_.replaceNodes(std::move(listed_));
  listed_ = {};
}

void NodeSink::added(std::string_view object) {
  modified(object);
}

void NodeSink::modified(std::string_view object) {
  upsert(codec::decodeNodeJson(object), object);
}

void NodeSink::changed(Change change, std::string_view object, simdjson::dom::element parsed) {
  if (change == Change::kDeleted) return deleted(object);
  upsert(codec::decodeNode(parsed), object);
}

void NodeSink::upsert(Result<policy::Node> node, std::string_view object) {
  if (!node) {
    ++decodeErrors_;
    spdlog::warn("node {} skipped: {}", peekMeta(object).describe(), node.error());
    return;
  }
  mirror_.upsertNode(std::move(node).value());
}

void NodeSink::deleted(std::string_view object) {
  ObjectMeta meta = peekMeta(object);
  if (meta.name.empty()) {
    ++decodeErrors_;
    spdlog::warn("deleted node without metadata.name ignored");
    return;
  }
  spdlog::info("node {} deleted", meta.name);
  mirror_.deleteNode(meta.name);
}

// --- pods ---------------------------------------------------------------------------------------

PodSink::PodSink(state::Mirror& mirror, PodSinkOptions options)
    : mirror_(mirror), options_(options) {}

void PodSink::replace(const std::vector<std::string>& items) {
  beginList();
  std::vector<std::string> page = items;
  listPage(page);
  endList();
}

void PodSink::beginList() {
  listed_.clear();
  listedFailed_.clear();
  listedItems_ = 0;
}

Result<policy::Pod> PodSink::decode(std::string_view object, bool& failed) const {
  if (!options_.failures) return codec::decodePodJson(object);
  return codec::decodePodJson(object, failed);
}

void PodSink::listPage(std::vector<std::string>& items) {
  listedItems_ += items.size();
  for (const auto& item : items) {
    bool failed = false;
    auto pod = decode(item, failed);
    if (!pod) {
      ++decodeErrors_;
      spdlog::warn("pod {} skipped: {}", peekMeta(item).describe(), pod.error());
      continue;
    }
    if (options_.gpuPodsOnly && pod->gpus <= 0) continue;
    if (failed) listedFailed_.insert(state::PodCache::keyOf(*pod));
    listed_.push_back(std::move(pod).value());
  }
}

void PodSink::endList() {
  spdlog::info("pod list: {} of {} pods use GPUs", listed_.size(), listedItems_);
  mirror_.replacePods(std::move(listed_));
  if (options_.failures) options_.failures->replace(std::move(listedFailed_));
  listed_ = {};
  listedFailed_ = {};
  listedItems_ = 0;
}

void PodSink::added(std::string_view object) {
  bool failed = false;
  auto pod = decode(object, failed);
  upsert(std::move(pod), object, failed);
}
void PodSink::modified(std::string_view object) {
  added(object);
}

void PodSink::changed(Change change, std::string_view object, simdjson::dom::element parsed) {
  if (change == Change::kDeleted) return deleted(object);
  upsert(codec::decodePod(parsed), object, options_.failures && codec::schedulingFailed(parsed));
}

void PodSink::upsert(Result<policy::Pod> pod, std::string_view object, bool failed) {
  if (!pod) {
    ++decodeErrors_;
    spdlog::warn("pod {} skipped: {}", peekMeta(object).describe(), pod.error());
    return;
  }
  const std::string key = state::PodCache::keyOf(*pod);
  if (options_.gpuPodsOnly && pod->gpus <= 0) {
    if (options_.failures) options_.failures->erase(key);
    mirror_.deletePod(key);
    return;
  }
  if (options_.failures) options_.failures->set(key, failed);
  mirror_.upsertPod(std::move(pod).value());
}

void PodSink::deleted(std::string_view object) {
  ObjectMeta meta = peekMeta(object);
  std::string key = !meta.uid.empty() ? meta.uid
                    : meta.name.empty()
                        ? std::string()
                        : (meta.ns.empty() ? std::string("default") : meta.ns) + "/" + meta.name;
  if (!key.empty()) {
    if (options_.failures) options_.failures->erase(key);
    mirror_.deletePod(key);
  } else {
    ++decodeErrors_;
    spdlog::warn("deleted pod without metadata.name ignored");
  }
}

}  // namespace gpufair::k8s
