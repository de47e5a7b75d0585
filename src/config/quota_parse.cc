#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpufair/common/quantity.h"
#include "gpufair/config/duration.h"
#include "gpufair/config/quota.h"

#include "quota_document.h"
#include "yaml_support.h"

namespace gpufair::config {
namespace detail {
namespace {

constexpr std::string_view kTopKeys[] = {"queues", "defaultQueue"};
constexpr std::string_view kQueueKeys[] = {"name",   "namespaces", "gpu", "reclaimMinRuntime",
                                           "parent", "priority"};
constexpr std::string_view kDefaultQueueKeys[] = {"gpu", "reclaimMinRuntime"};
constexpr std::string_view kGpuKeys[] = {"deserved", "limit", "overQuotaWeight"};

std::string inQuotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

bool present(const YAML::Node& node) {
  return node.IsDefined() && !node.IsNull();
}

class QuotaParser {
 public:
  QuotaParser(const Locator& where, ErrorList& errors) : where_(where), errors_(errors) {}

  QuotaSource parse(const YAML::Node& root) {
    QuotaSource out = parseTop(root);
    out.locations = std::move(locations_);
    return out;
  }

 private:
  QuotaSource parseTop(const YAML::Node& root) {
    QuotaSource out;
    out.source = where_.source;
    if (!root.IsMap()) {
      error(root.Mark(), std::string("expected a map with keys ") + joinWords(kTopKeys) +
                             ", found " + describe(root));
      return out;
    }
    visitKeys(root, "the top level", kTopKeys, [&](std::string_view key, const YAML::Node& value) {
      if (key == "queues") {
        parseQueues(value, out.config.queues);
      } else if (key == "defaultQueue") {
        out.setsDefaultQueue = true;
        parseDefaultQueue(value, out.config.defaultQueue);
      }
    });
    return out;
  }

  void error(const YAML::Mark& mark, std::string_view what) { errors_.add(where_, mark, what); }

  // Calls onKey(key, value) for each allowed key in document order, and reports unknown and
  // repeated keys where they stand.
  template <typename OnKey>
  void visitKeys(const YAML::Node& map, std::string_view owner,
                 std::span<const std::string_view> allowed, OnKey&& onKey) {
    std::map<std::string, int, std::less<>> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      const YAML::Mark mark = it->first.Mark();
      if (auto [at, fresh] = seen.emplace(key, where_.fileLine(mark)); !fresh) {
        error(mark, "duplicate key " + inQuotes(key) + " in " + std::string(owner) +
                        " (first at line " + std::to_string(at->second) + ")");
        continue;
      }
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
        onKey(key, it->second);
        continue;
      }
      std::string what = "unknown key " + inQuotes(key) + " in " + std::string(owner);
      if (auto guess = closestWord(key, allowed); !guess.empty()) {
        what += " (did you mean " + inQuotes(guess) + "?)";
      }
      error(mark, what + "; allowed keys: " + joinWords(allowed));
    }
  }

  void parseQueues(const YAML::Node& queues, std::vector<QueueQuota>& out) {
    if (!present(queues)) return;
    if (!queues.IsSequence()) {
      error(queues.Mark(),
            std::string("queues must be a list of queues, found ") + describe(queues));
      return;
    }
    std::size_t index = 0;
    for (const auto& queue : queues) parseQueue(queue, index++, out);
  }

  void parseQueue(const YAML::Node& node, std::size_t index, std::vector<QueueQuota>& queues) {
    std::string owner = "queues[" + std::to_string(index) + "]";
    if (!node.IsMap()) {
      error(node.Mark(), owner + " must be a map with keys " + joinWords(kQueueKeys) + ", found " +
                             describe(node));
      return;
    }
    QueueQuota queue;
    YAML::Node name = child(node, "name");
    if (!present(name)) error(node.Mark(), owner + " has no name");
    if (name.IsScalar() && !name.Scalar().empty()) owner = "queue " + inQuotes(name.Scalar());
    visitKeys(node, owner, kQueueKeys, [&](std::string_view key, const YAML::Node& value) {
      if (key == "name") {
        parseName(value, owner, queue);
      } else if (key == "namespaces") {
        parseNamespaces(value, owner, queue);
      } else if (key == "gpu") {
        parseGpu(value, owner, queue.gpu);
      } else if (key == "reclaimMinRuntime") {
        parseMinRuntime(value, owner, queue);
      } else if (key == "parent") {
        parseParent(value, owner, queue);
      } else if (key == "priority") {
        parsePriority(value, owner, queue);
      }
    });
    if (!queue.name.empty()) {
      QueueLocation& at = locations_[queue.name];
      at.name = where_.at(name.Mark());
      if (const YAML::Node parent = child(node, "parent"); present(parent))
        at.parent = where_.at(parent.Mark());
    }
    queues.push_back(std::move(queue));
  }

  void parseName(const YAML::Node& name, const std::string& owner, QueueQuota& queue) {
    if (!present(name)) return;  // reported as "has no name"
    if (!name.IsScalar()) {
      error(name.Mark(), owner + ": name must be a string, found " + describe(name));
      return;
    }
    queue.name = name.Scalar();
    if (queue.name.empty()) {
      error(name.Mark(), owner + ": name is empty");
    } else if (queue.name == kDefaultQueueName) {
      error(name.Mark(),
            "queue name \"default\" is reserved for the default queue "
            "(configure it under defaultQueue)");
    } else if (!isDns1123Label(queue.name)) {
      error(name.Mark(), "queue name " + inQuotes(queue.name) +
                             " is not a valid DNS-1123 label (lower-case letters, digits and "
                             "'-', starting and ending with a letter or digit, at most 63 "
                             "characters)");
    } else if (auto [at, fresh] = queueLines_.emplace(queue.name, where_.fileLine(name.Mark()));
               !fresh) {
      error(name.Mark(), "duplicate queue " + inQuotes(queue.name) + " (first defined at line " +
                             std::to_string(at->second) + ")");
    }
  }

  void parseParent(const YAML::Node& node, const std::string& owner, QueueQuota& queue) {
    if (!present(node)) return;
    if (!node.IsScalar() || node.Scalar().empty()) {
      error(node.Mark(), owner + ": parent must be the name of another queue, found " +
                             (node.IsScalar() ? std::string("an empty string") : describe(node)));
      return;
    }
    queue.parent = node.Scalar();
  }

  void parsePriority(const YAML::Node& node, const std::string& owner, QueueQuota& queue) {
    if (!present(node)) return;
    const std::string& text = node.IsScalar() ? node.Scalar() : std::string();
    int value = 0;
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    if (!text.empty() && *begin == '+') ++begin;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (!node.IsScalar() || ec != std::errc() || ptr != end || begin == end) {
      error(node.Mark(), owner +
                             ": priority must be a whole number (higher borrows first), found " +
                             (node.IsScalar() ? inQuotes(text) : std::string(describe(node))));
      return;
    }
    queue.priority = value;
  }

  void parseDefaultQueue(const YAML::Node& node, QueueQuota& queue) {
    if (node.IsNull()) return;
    if (!node.IsMap()) {
      error(node.Mark(), std::string("defaultQueue must be a map with keys ") +
                             joinWords(kDefaultQueueKeys) + ", found " + describe(node));
      return;
    }
    const std::string owner = "defaultQueue";
    visitKeys(node, owner, kDefaultQueueKeys, [&](std::string_view key, const YAML::Node& value) {
      if (key == "gpu") {
        parseGpu(value, owner, queue.gpu);
      } else if (key == "reclaimMinRuntime") {
        parseMinRuntime(value, owner, queue);
      }
    });
  }

  void parseNamespaces(const YAML::Node& node, const std::string& owner, QueueQuota& queue) {
    if (!present(node)) return;
    if (!node.IsSequence()) {
      error(node.Mark(),
            owner + ": namespaces must be a list of namespace names, found " + describe(node));
      return;
    }
    for (const auto& item : node) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        error(item.Mark(), owner + ": namespaces must be namespace names, found " +
                               (item.IsScalar() ? std::string("an empty string") : describe(item)));
        continue;
      }
      const std::string& ns = item.Scalar();
      if (!isDns1123Label(ns)) {
        error(item.Mark(),
              owner + ": " + inQuotes(ns) + " is not a valid namespace name (a DNS-1123 label)");
        continue;
      }
      auto [at, fresh] = namespaceOwners_.emplace(ns, Owner{owner, where_.fileLine(item.Mark())});
      if (!fresh) {
        error(item.Mark(), "namespace " + inQuotes(ns) + " is listed in " + owner +
                               " and already in " + at->second.queue + " (line " +
                               std::to_string(at->second.line) +
                               "); a namespace belongs to one queue");
        continue;
      }
      queue.namespaces.push_back(ns);
    }
  }

  void parseGpu(const YAML::Node& node, const std::string& owner, GpuQuota& gpu) {
    if (!present(node)) return;
    if (!node.IsMap()) {
      error(node.Mark(), owner + ": gpu must be a map with keys " + joinWords(kGpuKeys) +
                             ", found " + describe(node));
      return;
    }
    YAML::Mark limitMark;
    std::optional<MilliGpu> deserved;
    std::optional<MilliGpu> limitValue;
    visitKeys(node, owner + " gpu", kGpuKeys, [&](std::string_view key, const YAML::Node& value) {
      if (key == "deserved") {
        deserved = gpuAmount(value, owner, "gpu.deserved");
        if (deserved) gpu.deserved = *deserved;
      } else if (key == "limit") {
        limitMark = value.Mark();
        limitValue = gpuAmount(value, owner, "gpu.limit");
        gpu.limit = limitValue;
      } else if (key == "overQuotaWeight" && present(value)) {
        if (auto weight = nonNegativeNumber(value, owner, "gpu.overQuotaWeight")) {
          gpu.overQuotaWeight = *weight;
        }
      }
    });
    if (deserved && limitValue && *limitValue < *deserved) {
      error(limitMark, owner + ": gpu.limit " + formatGpus(*limitValue) +
                           " is below gpu.deserved " + formatGpus(*deserved));
    }
  }

  // A GPU amount: a YAML number or a Kubernetes quantity string, not negative. Null is absent.
  std::optional<MilliGpu> gpuAmount(const YAML::Node& node, const std::string& owner,
                                    std::string_view field) {
    if (!present(node)) return std::nullopt;
    const std::string prefix = owner + ": " + std::string(field);
    if (!node.IsScalar()) {
      error(node.Mark(), prefix + " must be a number of GPUs, found " + describe(node));
      return std::nullopt;
    }
    auto quantity = Quantity::parse(node.Scalar());
    if (!quantity.ok()) {
      error(node.Mark(), prefix + " " + inQuotes(node.Scalar()) + " is not a number of GPUs (" +
                             quantity.error() + ")");
      return std::nullopt;
    }
    if (quantity->isNegative()) {
      error(node.Mark(), prefix + " must not be negative, found " + node.Scalar());
      return std::nullopt;
    }
    return quantity->milliValue();
  }

  std::optional<double> nonNegativeNumber(const YAML::Node& node, const std::string& owner,
                                          std::string_view field) {
    const std::string prefix = owner + ": " + std::string(field);
    if (!node.IsScalar()) {
      error(node.Mark(), prefix + " must be a number, found " + describe(node));
      return std::nullopt;
    }
    const std::string& text = node.Scalar();
    double value = 0;
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    if (!text.empty() && *begin == '+') ++begin;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr != end || begin == end || !std::isfinite(value)) {
      error(node.Mark(), prefix + " " + inQuotes(text) + " is not a number");
      return std::nullopt;
    }
    if (value < 0) {
      error(node.Mark(), prefix + " must not be negative, found " + text);
      return std::nullopt;
    }
    return value;
  }

  void parseMinRuntime(const YAML::Node& node, const std::string& owner, QueueQuota& queue) {
    if (!present(node)) return;
    if (!node.IsScalar()) {
      error(node.Mark(),
            owner + ": reclaimMinRuntime must be a duration such as 10m, found " + describe(node));
      return;
    }
    auto value = parseGoDurationSeconds(node.Scalar());
    if (!value.ok()) {
      error(node.Mark(), owner + ": reclaimMinRuntime: " + value.error());
      return;
    }
    queue.reclaimMinRuntime = *value;
  }

  struct Owner {
    std::string queue;
    int line = 0;
  };

  const Locator& where_;
  ErrorList& errors_;
  std::map<std::string, int, std::less<>> queueLines_;
  std::map<std::string, Owner, std::less<>> namespaceOwners_;
  QueueLocations locations_;
};

}  // namespace

QuotaSource parseQuotaNode(const YAML::Node& root, const Locator& where, ErrorList& errors) {
  return QuotaParser(where, errors).parse(root);
}

Result<QuotaSource> parseQuotaText(std::string_view text, const Locator& where) {
  auto docs = loadDocuments(text, where);
  if (!docs.ok()) return Result<QuotaSource>::failure(docs.error());
  std::vector<YAML::Node> nonEmpty;
  for (const auto& doc : *docs) {
    if (doc.IsDefined() && !doc.IsNull()) nonEmpty.push_back(doc);
  }
  if (nonEmpty.empty()) {
    return Result<QuotaSource>::failure(
        where.source + ": empty document: expected a map with keys " + joinWords(kTopKeys));
  }
  ErrorList errors;
  if (nonEmpty.size() > 1) {
    errors.add(where, nonEmpty[1].Mark(),
               "queues.yaml holds one document; found a second one (merge them into one)");
  }
  QuotaSource parsed = parseQuotaNode(nonEmpty.front(), where, errors);
  if (!errors.empty()) return Result<QuotaSource>::failure(errors.joined());
  return parsed;
}

}  // namespace detail

bool isDns1123Label(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name) {
    if (!alnum(c) && c != '-') return false;
  }
  return alnum(name.front()) && alnum(name.back());
}

Result<QuotaSource> parseQuotaSource(std::string_view text, std::string_view source) {
  return detail::parseQuotaText(text, detail::Locator{std::string(source), 0, 0});
}

Result<QuotaConfig> parseQuotaYaml(std::string_view text, std::string_view source) {
  auto parsed = parseQuotaSource(text, source);
  if (!parsed.ok()) return Result<QuotaConfig>::failure(parsed.error());
  if (Status tree = validateQueueTree(parsed->config, parsed->locations); !tree.isOk())
    return Result<QuotaConfig>::failure(tree.reason());
  return std::move(parsed).value().config;
}

}  // namespace gpufair::config
