#include <algorithm>
#include <string>
#include <vector>

#include "gpufair/config/quota.h"

#include "quota_document.h"
#include "yaml_support.h"

namespace gpufair::config {
namespace detail {

std::optional<QuotaSource> parseQuotaConfigMap(const YAML::Node& configMap,
                                               std::string_view fileText, const Locator& file,
                                               ErrorList& errors) {
  YAML::Node metadata = child(configMap, "metadata");
  std::string ns = scalarAt(metadata, "namespace");
  std::string name =
      "ConfigMap " + (ns.empty() ? std::string() : ns + "/") + scalarAt(metadata, "name");
  YAML::Node value = child(child(configMap, "data"), kQuotaKey);
  if (!value.IsScalar()) {
    errors.add(file, configMap.Mark(),
               name + " has no data key \"" + kQuotaKey + "\" holding the queue quotas");
    return std::nullopt;
  }
  Locator inner = embeddedLocator(value, fileText, file, name + " " + kQuotaKey);
  auto parsed = parseQuotaText(value.Scalar(), inner);
  if (!parsed.ok()) {
    errors.addRaw(parsed.error());
    return std::nullopt;
  }
  QuotaSource source = std::move(parsed).value();
  source.source = name + " (" + file.line(configMap.Mark()) + ")";
  return source;
}

}  // namespace detail

namespace {

void collect(const YAML::Node& node, const std::string& fileText, const detail::Locator& file,
             detail::ErrorList& errors, std::vector<QuotaObject>& sources) {
  using detail::child;
  if (!node.IsMap()) {
    errors.add(file, node.Mark(),
               std::string("expected queues.yaml (a map with keys queues, defaultQueue) or a "
                           "ConfigMap, found ") +
                   detail::describe(node));
    return;
  }
  YAML::Node kindNode = child(node, "kind");
  if (!kindNode.IsDefined()) {
    QuotaSource source = detail::parseQuotaNode(node, file, errors);
    source.source = file.line(node.Mark());
    sources.push_back({"", std::move(source)});
    return;
  }
  const std::string kind = kindNode.IsScalar() ? kindNode.Scalar() : std::string();
  if (kind == "ConfigMap") {
    if (auto source = detail::parseQuotaConfigMap(node, fileText, file, errors)) {
      YAML::Node metadata = child(node, "metadata");
      sources.push_back({"ConfigMap " + detail::scalarAt(metadata, "namespace") + "/" +
                             detail::scalarAt(metadata, "name"),
                         std::move(*source)});
    }
    return;
  }
  if (kind.size() >= 4 && kind.ends_with("List")) {
    YAML::Node items = child(node, "items");
    if (!items.IsSequence()) {
      if (items.IsDefined() && !items.IsNull()) {
        errors.add(file, items.Mark(), "items of a " + kind + " must be a list");
      }
      return;
    }
    for (const auto& item : items) collect(item, fileText, file, errors, sources);
    return;
  }
  errors.add(file, kindNode.Mark(),
             "kind \"" + kind + "\": expected queues.yaml or a ConfigMap with a \"" + kQuotaKey +
                 "\" key");
}

}  // namespace

Result<std::vector<QuotaObject>> loadQuotaSources(const std::string& path) {
  using R = Result<std::vector<QuotaObject>>;
  auto text = detail::readFile(path);
  if (!text.ok()) return R::failure(text.error());
  const detail::Locator file{path, 0, 0};
  auto docs = detail::loadDocuments(*text, file);
  if (!docs.ok()) return R::failure(docs.error());

  detail::ErrorList errors;
  std::vector<QuotaObject> sources;
  for (const auto& doc : *docs) {
    if (doc.IsDefined() && !doc.IsNull()) collect(doc, *text, file, errors, sources);
  }
  if (!errors.empty()) return R::failure(errors.joined());
  if (sources.empty()) {
    return R::failure(path + ": no quotas found: expected queues.yaml or a ConfigMap with a \"" +
                      kQuotaKey + "\" key");
  }
  return sources;
}

Result<QuotaConfig> loadQuotaFile(const std::string& path) {
  auto sources = loadQuotaSources(path);
  if (!sources.ok()) return Result<QuotaConfig>::failure(sources.error());
  std::vector<QuotaSource> quotas;
  for (auto& entry : *sources) quotas.push_back(std::move(entry.quota));
  return mergeQuotaSources(quotas);
}

Result<QuotaConfig> mergeQuotaFiles(const std::vector<std::vector<QuotaObject>>& files,
                                    std::vector<std::string>* replaced) {
  std::vector<QuotaObject> applied;
  for (const auto& sources : files) {
    for (const auto& source : sources) {
      auto same = std::find_if(applied.begin(), applied.end(), [&](const QuotaObject& s) {
        return !source.object.empty() && s.object == source.object;
      });
      if (same == applied.end()) {
        applied.push_back(source);
        continue;
      }
      if (replaced != nullptr) {
        replaced->push_back(source.quota.source + " replaces " + same->quota.source +
                            " (the same object, as kubectl apply would)");
      }
      *same = source;
    }
  }
  std::vector<QuotaSource> merged;
  for (auto& entry : applied) merged.push_back(std::move(entry.quota));
  return mergeQuotaSources(merged);
}

}  // namespace gpufair::config
