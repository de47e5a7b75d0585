#include <algorithm>
#include <map>
#include <string>

#include "gpufair/config/quota.h"

namespace gpufair::config {
namespace {

std::string inQuotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

}  // namespace

Result<QuotaConfig> mergeQuotaSources(const std::vector<QuotaSource>& sources) {
  QuotaConfig merged;
  std::vector<std::string> errors;
  std::map<std::string, const QuotaSource*, std::less<>> queueSource;
  struct NamespaceOwner {
    std::string queue;
    const QuotaSource* source;
  };
  std::map<std::string, NamespaceOwner, std::less<>> namespaceOwner;
  const QuotaSource* defaultSource = nullptr;
  QueueLocations locations;

  for (const auto& source : sources) {
    for (const auto& queue : source.config.queues) {
      auto [at, fresh] = queueSource.emplace(queue.name, &source);
      if (!fresh) {
        errors.push_back("queue " + inQuotes(queue.name) + " is defined in both " +
                         at->second->source + " and " + source.source);
        continue;
      }
      for (const auto& ns : queue.namespaces) {
        auto [owner, first] = namespaceOwner.emplace(ns, NamespaceOwner{queue.name, &source});
        if (!first) {
          errors.push_back("namespace " + inQuotes(ns) + " is in queue " +
                           inQuotes(owner->second.queue) + " (" + owner->second.source->source +
                           ") and in queue " + inQuotes(queue.name) + " (" + source.source + ")");
        }
      }
      merged.queues.push_back(queue);
      if (auto at = source.locations.find(queue.name); at != source.locations.end())
        locations.emplace(queue.name, at->second);
    }
    if (source.setsDefaultQueue) {
      if (defaultSource != nullptr) {
        errors.push_back("defaultQueue is set in both " + defaultSource->source + " and " +
                         source.source + "; set it in one place only");
      } else {
        defaultSource = &source;
        merged.defaultQueue = source.config.defaultQueue;
      }
    }
  }
  if (errors.empty()) {
    if (Status tree = validateQueueTree(merged, locations); !tree.isOk())
      errors.push_back(tree.reason());
  }
  if (!errors.empty()) {
    std::string message;
    for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e;
    return Result<QuotaConfig>::failure(std::move(message));
  }
  std::stable_sort(merged.queues.begin(), merged.queues.end(),
                   [](const QueueQuota& a, const QueueQuota& b) { return a.name < b.name; });
  merged.defaultQueue.name = kDefaultQueueName;
  merged.defaultQueue.namespaces.clear();
  return merged;
}

Result<QuotaConfig> mergeQuotaConfigs(
    const std::vector<std::pair<std::string, QuotaConfig>>& sources) {
  const QueueQuota unset = QuotaConfig{}.defaultQueue;
  std::vector<QuotaSource> converted;
  converted.reserve(sources.size());
  for (const auto& [name, config] : sources) {
    converted.push_back(QuotaSource{name, config, !(config.defaultQueue == unset), {}});
  }
  return mergeQuotaSources(converted);
}

}  // namespace gpufair::config
