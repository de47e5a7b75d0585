// Quota configuration: the `queues.yaml` key of quota ConfigMaps, parsed into common/quota.h types.
//
//   queues:
//   - name: team-a                     # a DNS-1123 label, unique, not "default"
//     namespaces: [team-a, team-a-dev] # each namespace in at most one queue
//     gpu: {deserved: 20, limit: 30, overQuotaWeight: 1}
//     reclaimMinRuntime: 10m           # optional Go duration
//     parent: research                 # optional: the queue this one belongs to
//     priority: 0                      # optional whole number: higher borrows first
//   defaultQueue: {gpu: {deserved: 0, overQuotaWeight: 1}}   # namespaces in no queue
//
// GPU amounts are YAML numbers or Kubernetes quantity strings ("2.5", "500m"); limit is optional
// (no limit); overQuotaWeight is a non-negative number (default 1). Every problem in a document is
// reported, one per line, as "source:LINE:COL: what is wrong".
//
// Queue trees: a queue naming `parent:` belongs to that queue, to any depth. A parent queue lists
// no namespaces (pods run in leaf queues), its children's gpu.deserved add up to at most its own,
// and `parent:` must name a configured queue other than "default" without forming a cycle. These
// rules span documents (a parent may live in another ConfigMap), so they are checked on the whole
// config: by parseQuotaYaml, and by every merge.
//
// Errors are values (Result); nothing here throws. Thread-safety: free functions over value types.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpufair/common/quota.h"
#include "gpufair/common/status.h"

namespace gpufair::config {

// ConfigMaps with this label set to "true", in gpufair's own namespace, hold quotas under
// kQuotaKey.
inline constexpr const char* kQuotaConfigLabel = "gpufair.io/quota-config";
inline constexpr const char* kQuotaKey = "queues.yaml";

// Where a queue's name and its `parent:` value stand ("file:LINE:COL"), for tree errors.
struct QueueLocation {
  std::string name;
  std::string parent;

  bool operator==(const QueueLocation&) const = default;
};
using QueueLocations = std::map<std::string, QueueLocation, std::less<>>;

// One parsed queues.yaml and where it came from, as merging needs it.
struct QuotaSource {
  std::string source;  // named in merge errors: a file name or "ConfigMap gpufair-system/quotas"
  QuotaConfig config;
  bool setsDefaultQueue = false;  // the document has a defaultQueue key
  QueueLocations locations{};     // by queue name; may be empty (errors then name no line)

  bool operator==(const QuotaSource&) const = default;
};

// The queue-tree rules above over a whole config; every problem on its own line, located by
// `where` when it knows the queue. Ok for a flat config.
Status validateQueueTree(const QuotaConfig& config, const QueueLocations& where = {});

// Parses and validates one queues.yaml document. Queues keep their order in the document.
// `source` prefixes every message ("queues.yaml:4:11: ...").
Result<QuotaConfig> parseQuotaYaml(std::string_view text, std::string_view source);
// The same, also telling whether the document sets defaultQueue.
Result<QuotaSource> parseQuotaSource(std::string_view text, std::string_view source);

// Merges several documents into one config: queues concatenated and sorted by name. A queue name
// defined twice, a namespace listed in two queues, or defaultQueue set by more than one source is
// an error naming both sources. All conflicts are reported.
Result<QuotaConfig> mergeQuotaSources(const std::vector<QuotaSource>& sources);
// As above for (source, config) pairs; a config "sets" defaultQueue when it differs from the
// default.
Result<QuotaConfig> mergeQuotaConfigs(
    const std::vector<std::pair<std::string, QuotaConfig>>& sources);

// Reads a quota file for `gpufair validate`: a raw queues.yaml, or ConfigMap manifests (one or more
// documents, or a v1 List) carrying a queues.yaml key, merged. Messages carry the file name and the
// file's line numbers (inside a literal block `queues.yaml: |` too).
Result<QuotaConfig> loadQuotaFile(const std::string& path);
// One queues.yaml document of a file and the Kubernetes object it lives in ("ConfigMap
// gpufair-system/gpufair-queues"; empty for a bare queues.yaml): applying a later file with the
// same object replaces it.
struct QuotaObject {
  std::string object;
  QuotaSource quota;
};
// The same as loadQuotaFile, unmerged: every queues.yaml document of the file.
Result<std::vector<QuotaObject>> loadQuotaSources(const std::string& path);
// Several files as `kubectl apply -f` of all of them leaves the cluster: a ConfigMap of a later
// file replaces one of an earlier file with the same namespace and name (`replaced` then gets a
// line saying so), and everything else is merged as gpufair merges quota ConfigMaps. A queue or
// namespace defined twice is an error naming both places (file:line).
Result<QuotaConfig> mergeQuotaFiles(const std::vector<std::vector<QuotaObject>>& files,
                                    std::vector<std::string>* replaced = nullptr);

// Kubernetes DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool isDns1123Label(std::string_view name);

}  // namespace gpufair::config
