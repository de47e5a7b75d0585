#include "gpufair/k8s/quota_watcher.h"

#include <spdlog/spdlog.h>

#include "gpufair/common/quantity.h"
#include "gpufair/config/quota.h"
#include "gpufair/k8s/api.h"
#include "gpufair/k8s/sinks.h"

namespace gpufair::k8s {

namespace {

std::string keyOf(const codec::ConfigMap& cm) {
  return cm.ns + "/" + cm.name;
}
std::string sourceOf(const codec::ConfigMap& cm) {
  return "ConfigMap " + keyOf(cm);
}

}  // namespace

std::string describeQuota(const QuotaConfig& config) {
  std::string out = std::to_string(config.queues.size()) + " queues";
  const char* sep = ": ";
  for (const auto& queue : config.queues) {
    out += sep + queue.name + " " + formatGpus(queue.gpu.deserved) + "/" +
           (queue.gpu.limit ? formatGpus(*queue.gpu.limit) : std::string("-"));
    sep = ", ";
  }
  out += "; default queue " + formatGpus(config.defaultQueue.gpu.deserved) + "/" +
         (config.defaultQueue.gpu.limit ? formatGpus(*config.defaultQueue.gpu.limit)
                                        : std::string("-"));
  return out;
}

QuotaWatcher::QuotaWatcher(state::Mirror& mirror, std::string ns, EventRecorder* events)
    : mirror_(mirror), ns_(std::move(ns)), events_(events) {}

ReflectorOptions QuotaWatcher::reflectorOptions() const {
  ReflectorOptions options;
  options.name = "quota-configmaps";
  options.listPath = "/api/v1/namespaces/" + escapePathSegment(ns_) + "/configmaps";
  options.labelSelector = std::string(config::kQuotaConfigLabel) + "=true";
  return options;
}

bool QuotaWatcher::admissible(const codec::ConfigMap& cm) {
  if (cm.ns != ns_) {
    ++ignored_;
    spdlog::warn("ignoring ConfigMap {}: quota ConfigMaps count only in gpufair's namespace {}",
                 keyOf(cm), ns_);
    return false;
  }
  auto label = cm.labels.find(config::kQuotaConfigLabel);
  if (label == cm.labels.end() || label->second != "true") {
    ++ignored_;
    spdlog::info("ignoring ConfigMap {}: not labelled {}=true", keyOf(cm),
                 config::kQuotaConfigLabel);
    return false;
  }
  return true;
}

void QuotaWatcher::replace(const std::vector<std::string>& items) {
  std::lock_guard lock(mu_);
  configMaps_.clear();
  for (const auto& item : items) {
    auto cm = codec::decodeConfigMapJson(item);
    if (!cm) {
      ++ignored_;
      spdlog::warn("ConfigMap {} skipped: {}", peekMeta(item).describe(), cm.error());
      continue;
    }
    if (admissible(*cm)) configMaps_[cm->name] = std::move(cm).value();
  }
  recomputeLocked("");
}

void QuotaWatcher::added(std::string_view object) {
  upsert(object);
}
void QuotaWatcher::modified(std::string_view object) {
  upsert(object);
}

void QuotaWatcher::upsert(std::string_view object) {
  auto cm = codec::decodeConfigMapJson(object);
  std::lock_guard lock(mu_);
  if (!cm) {
    ++ignored_;
    spdlog::warn("ConfigMap {} skipped: {}", peekMeta(object).describe(), cm.error());
    return;
  }
  if (!admissible(*cm)) {
    // A quota ConfigMap that lost its label is no longer one.
    if (cm->ns == ns_ && configMaps_.erase(cm->name) > 0) recomputeLocked("");
    return;
  }
  auto it = configMaps_.find(cm->name);
  if (it != configMaps_.end() && it->second.data == cm->data) {
    it->second = std::move(cm).value();  // a new resourceVersion without a new config
    return;
  }
  const std::string name = cm->name;
  configMaps_[name] = std::move(cm).value();
  recomputeLocked(name);
}

void QuotaWatcher::deleted(std::string_view object) {
  ObjectMeta meta = peekMeta(object);
  std::lock_guard lock(mu_);
  if (meta.ns != ns_ || configMaps_.erase(meta.name) == 0) return;
  spdlog::info("quota ConfigMap {}/{} deleted", ns_, meta.name);
  recomputeLocked("");
}

void QuotaWatcher::recomputeLocked(const std::string& changed) {
  std::vector<config::QuotaSource> sources;
  std::vector<std::string> errors;
  std::vector<const codec::ConfigMap*> offenders;
  for (const auto& [name, cm] : configMaps_) {
    auto text = cm.data.find(config::kQuotaKey);
    if (text == cm.data.end()) {
      errors.push_back(sourceOf(cm) + ": has no key " + config::kQuotaKey);
      offenders.push_back(&cm);
      continue;
    }
    auto source = config::parseQuotaSource(text->second, sourceOf(cm));
    if (!source) {
      errors.push_back(source.error());
      offenders.push_back(&cm);
      continue;
    }
    sources.push_back(std::move(source).value());
  }
  std::optional<QuotaConfig> merged;
  if (errors.empty()) {
    auto result = config::mergeQuotaSources(sources);
    if (result) {
      merged = std::move(result).value();
    } else {
      errors.push_back(result.error());
      for (const auto& [name, cm] : configMaps_) {
        if (result.error().find(sourceOf(cm)) != std::string::npos || name == changed) {
          offenders.push_back(&cm);
        }
      }
    }
  }

  if (merged) {
    healthy_ = true;
    lastError_.clear();
    if (applied_ && *applied_ == *merged) return;
    if (configMaps_.empty()) {
      spdlog::warn(
          "no quota ConfigMap (label {}=true) in namespace {}: using the default quota "
          "config, every namespace in the default queue",
          config::kQuotaConfigLabel, ns_);
    } else {
      spdlog::info("quota config from {} ConfigMaps in {} applied: {}", configMaps_.size(), ns_,
                   describeQuota(*merged));
    }
    mirror_.setQuotaConfig(*merged);
    applied_ = std::move(merged);
    ++appliedCount_;
    return;
  }

  healthy_ = false;
  ++rejected_;
  lastError_.clear();
  for (const auto& error : errors) lastError_ += (lastError_.empty() ? "" : "\n") + error;
  spdlog::error("quota config rejected; the {} config stays in force:",
                applied_ ? "previous" : "default");
  for (const auto& error : errors) {
    std::size_t start = 0;
    while (start <= error.size()) {
      std::size_t end = error.find('\n', start);
      if (end == std::string::npos) end = error.size();
      if (end > start) spdlog::error("  {}", error.substr(start, end - start));
      start = end + 1;
    }
  }
  if (events_ == nullptr) return;
  const std::string message = std::string("queues.yaml rejected, the ") +
                              (applied_ ? "previous" : "default") +
                              " quota config stays in force: " + lastError_;
  for (const codec::ConfigMap* cm : offenders) {
    ObjectRef ref{"ConfigMap", "v1", cm->ns, cm->name, cm->uid, cm->resourceVersion};
    events_->record(ref, EventType::kWarning, events::kInvalidQuotaConfig, message);
  }
}

bool QuotaWatcher::healthy() const {
  std::lock_guard lock(mu_);
  return healthy_;
}

std::string QuotaWatcher::lastError() const {
  std::lock_guard lock(mu_);
  return lastError_;
}

std::uint64_t QuotaWatcher::rejectedChanges() const {
  std::lock_guard lock(mu_);
  return rejected_;
}

std::uint64_t QuotaWatcher::appliedChanges() const {
  std::lock_guard lock(mu_);
  return appliedCount_;
}

std::uint64_t QuotaWatcher::ignoredObjects() const {
  std::lock_guard lock(mu_);
  return ignored_;
}

std::size_t QuotaWatcher::configMaps() const {
  std::lock_guard lock(mu_);
  return configMaps_.size();
}

}  // namespace gpufair::k8s
