#include "gpufair/config/cluster_file.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "gpufair/codec/objects.h"
#include "gpufair/config/quota.h"

#include "quota_document.h"
#include "yaml_support.h"

namespace gpufair::config {
namespace {

using detail::child;
using detail::Locator;

std::string inQuotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string plural(std::size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

class ClusterLoader {
 public:
  ClusterLoader(std::string_view text, std::string_view source, std::string_view gpufairNamespace)
      : text_(text), file_{std::string(source), 0, 0}, namespace_(gpufairNamespace) {}

  Result<ClusterObjects> load() {
    auto docs = detail::loadDocuments(text_, file_);
    if (!docs.ok()) return Result<ClusterObjects>::failure(docs.error());
    for (const auto& doc : *docs) {
      if (doc.IsDefined() && !doc.IsNull()) visit(doc, "");
    }
    if (objects_ == 0 && errors_.empty()) {
      return Result<ClusterObjects>::failure(file_.source + ": no Kubernetes objects found");
    }
    finish();
    if (!errors_.empty()) return Result<ClusterObjects>::failure(errors_.joined());
    return std::move(out_);
  }

 private:
  // One object, or the items of a List. Items of a typed list (NodeList) may omit their kind.
  void visit(const YAML::Node& object, std::string_view impliedKind) {
    if (!object.IsMap()) {
      errors_.add(file_, object.Mark(),
                  std::string("expected a Kubernetes object (a map with apiVersion, kind, "
                              "metadata), found ") +
                      detail::describe(object));
      return;
    }
    ++objects_;
    YAML::Node kindNode = child(object, "kind");
    std::string kind;
    if (kindNode.IsScalar()) {
      kind = kindNode.Scalar();
    } else if (!kindNode.IsDefined() || kindNode.IsNull()) {
      kind = impliedKind;
    }
    if (kind.empty()) {
      errors_.add(file_, object.Mark(),
                  "object has no kind (expected Node, Pod, ConfigMap or List)");
      return;
    }
    if (kind.ends_with("List")) {
      --objects_;
      YAML::Node items = child(object, "items");
      if (items.IsDefined() && !items.IsNull() && !items.IsSequence()) {
        errors_.add(file_, items.Mark(), "items of a " + kind + " must be a list");
        return;
      }
      std::string itemKind = kind == "List" ? "" : kind.substr(0, kind.size() - 4);
      if (items.IsSequence()) {
        for (const auto& item : items) visit(item, itemKind);
      }
      return;
    }
    if (kind == "Node") {
      addNode(object);
    } else if (kind == "Pod") {
      addPod(object);
    } else if (kind == "ConfigMap") {
      addConfigMap(object);
    } else {
      auto [at, fresh] = ignoredKinds_.emplace(kind, Ignored{0, file_.fileLine(object.Mark())});
      ++at->second.count;
    }
  }

  // "FILE:LINE: " for messages about a whole object.
  std::string at(const YAML::Node& object) const { return file_.line(object.Mark()) + ": "; }

  void addNode(const YAML::Node& object) {
    auto node = codec::decodeNodeJson(detail::toJson(object));
    if (!node.ok()) {
      errors_.addRaw(at(object) + node.error());
      return;
    }
    if (node->name.empty()) {
      errors_.addRaw(at(object) + "Node has no metadata.name");
      return;
    }
    auto [first, fresh] = nodeLines_.emplace(node->name, file_.fileLine(object.Mark()));
    if (!fresh) {
      errors_.addRaw(at(object) + "duplicate Node " + inQuotes(node->name) + " (first at line " +
                     std::to_string(first->second) + ")");
      return;
    }
    out_.nodes.push_back(std::move(node).value());
  }

  void addPod(const YAML::Node& object) {
    auto decoded = codec::decodePodJson(detail::toJson(object));
    if (!decoded.ok()) {
      errors_.addRaw(at(object) + decoded.error());
      return;
    }
    policy::Pod pod = std::move(decoded).value();
    if (pod.name.empty()) {
      errors_.addRaw(at(object) + "Pod has no metadata.name");
      return;
    }
    if (pod.ns.empty()) pod.ns = "default";
    if (pod.uid.empty()) pod.uid = pod.key();
    auto [first, fresh] = podLines_.emplace(pod.uid, file_.fileLine(object.Mark()));
    if (!fresh) {
      errors_.addRaw(at(object) + "duplicate Pod uid " + inQuotes(pod.uid) + " (Pod " + pod.key() +
                     "; first used at line " + std::to_string(first->second) + ")");
      return;
    }
    out_.pods.push_back(std::move(pod));
  }

  void addConfigMap(const YAML::Node& object) {
    auto decoded = codec::decodeConfigMapJson(detail::toJson(object));
    if (!decoded.ok()) {
      errors_.addRaw(at(object) + decoded.error());
      return;
    }
    const codec::ConfigMap& map = *decoded;
    const std::string ns = map.ns.empty() ? "default" : map.ns;
    const std::string name = "ConfigMap " + ns + "/" + map.name;
    auto label = map.labels.find(kQuotaConfigLabel);
    if (label == map.labels.end()) {
      ++unlabelledConfigMaps_;
      return;
    }
    if (label->second != "true") {
      out_.notes.push_back(at(object) + "ignored " + name + ": label " + kQuotaConfigLabel +
                           " is " + inQuotes(label->second) + ", not \"true\"");
      return;
    }
    if (ns != namespace_) {
      out_.notes.push_back(at(object) + "ignored " + name +
                           ": quota ConfigMaps are read only from " + "gpufair's namespace " +
                           inQuotes(namespace_) + ", so this one grants no quota");
      return;
    }
    if (auto source = detail::parseQuotaConfigMap(object, text_, file_, errors_)) {
      quotaSources_.push_back(std::move(*source));
    }
  }

  void finish() {
    if (!quotaSources_.empty()) {
      auto merged = mergeQuotaSources(quotaSources_);
      if (!merged.ok()) {
        errors_.addRaw(file_.source + ": " + merged.error());
        return;
      }
      out_.quota = std::move(merged).value();
    } else {
      out_.notes.push_back(file_.source + ": no quota ConfigMap (label " + kQuotaConfigLabel +
                           ": \"true\") in namespace " + inQuotes(namespace_) +
                           ": every namespace is in the default queue");
    }
    std::set<std::string, std::less<>> nodeNames;
    for (const auto& node : out_.nodes) nodeNames.insert(node.name);
    for (const auto& pod : out_.pods) {
      if (!pod.nodeName.empty() && !nodeNames.contains(pod.nodeName)) {
        out_.notes.push_back(file_.source + ": Pod " + pod.key() + " is bound to node " +
                             inQuotes(pod.nodeName) + ", which is not in the file");
      }
    }
    for (const auto& [kind, ignored] : ignoredKinds_) {
      out_.notes.push_back(file_.source + ":" + std::to_string(ignored.firstLine) + ": ignored " +
                           plural(ignored.count, kind + " object") +
                           " (gpufair reads Node, Pod and quota ConfigMap objects)");
    }
    if (unlabelledConfigMaps_ > 0) {
      out_.notes.push_back(file_.source + ": ignored " +
                           plural(unlabelledConfigMaps_, "ConfigMap") + " without label " +
                           kQuotaConfigLabel + ": \"true\"");
    }
    std::string summary = file_.source + ": read " + plural(out_.nodes.size(), "Node") + ", " +
                          plural(out_.pods.size(), "Pod") + ", " +
                          plural(quotaSources_.size(), "quota ConfigMap") + " (queues:";
    for (const auto& queue : out_.quota.queues) summary += " " + queue.name;
    summary += out_.quota.queues.empty() ? " none)" : ")";
    out_.notes.insert(out_.notes.begin(), std::move(summary));
  }

  struct Ignored {
    std::size_t count = 0;
    int firstLine = 0;
  };

  std::string_view text_;
  Locator file_;
  std::string namespace_;
  detail::ErrorList errors_;
  ClusterObjects out_;
  std::size_t objects_ = 0;
  std::vector<QuotaSource> quotaSources_;
  std::map<std::string, int, std::less<>> nodeLines_;
  std::map<std::string, int, std::less<>> podLines_;
  std::map<std::string, Ignored, std::less<>> ignoredKinds_;
  std::size_t unlabelledConfigMaps_ = 0;
};

}  // namespace

Result<ClusterObjects> parseClusterText(std::string_view text, std::string_view source,
                                        std::string_view gpufairNamespace) {
  return ClusterLoader(text, source, gpufairNamespace).load();
}

Result<ClusterObjects> loadClusterFile(const std::string& path, std::string_view gpufairNamespace) {
  auto text = detail::readFile(path);
  if (!text.ok()) return Result<ClusterObjects>::failure(text.error());
  return parseClusterText(*text, path, gpufairNamespace);
}

}  // namespace gpufair::config
