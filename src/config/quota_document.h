// Private: the queues.yaml parser over an already loaded YAML tree, so that callers which found the
// document inside a bigger file (a ConfigMap manifest, a cluster file) keep that file's line
// numbers.
#pragma once

#include <optional>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "gpufair/config/quota.h"

#include "yaml_support.h"

namespace gpufair::config::detail {

// Validates `root` as a queues.yaml document; problems go to `errors`, located by `where`.
QuotaSource parseQuotaNode(const YAML::Node& root, const Locator& where, ErrorList& errors);

// Loads `text` (one document) and parses it; all problems joined into the failure message.
Result<QuotaSource> parseQuotaText(std::string_view text, const Locator& where);

// The queues.yaml of a ConfigMap manifest node found in `fileText`, named
// "ConfigMap NS/NAME (file:LINE)". Problems (no such key, invalid document) go to `errors`.
std::optional<QuotaSource> parseQuotaConfigMap(const YAML::Node& configMap,
                                               std::string_view fileText, const Locator& file,
                                               ErrorList& errors);

}  // namespace gpufair::config::detail
