// Cluster files for `gpufair serve --cluster FILE` (demos, tests): the Kubernetes objects gpufair
// would otherwise list from the API server, as `kubectl get nodes,pods,configmaps -A -o yaml` (or
// `-o json`) prints them. Accepted shapes: a List (`kind: List` or NodeList/PodList/... with
// `items`), several YAML documents separated by `---`, a single object, or the same in JSON.
//
// Read: Nodes, Pods, and quota ConfigMaps (label gpufair.io/quota-config: "true", key queues.yaml)
// from gpufair's own namespace only; several quota ConfigMaps are merged (config/quota.h). A
// labelled ConfigMap in another namespace grants nothing and is noted. Other objects are noted and
// ignored. Pods without metadata.namespace are in "default"; without metadata.uid their uid is
// "ns/name".
//
// Any problem (YAML syntax, an object without kind, a malformed quantity, duplicate node names or
// pod uids, invalid quotas) fails the whole load with every problem as "FILE:LINE[:COL]: what".
// Thread-safety: free functions over value types; nothing throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/quota.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"

namespace gpufair::config {

struct ClusterObjects {
  std::vector<policy::Node> nodes;  // in file order
  std::vector<policy::Pod> pods;    // in file order
  QuotaConfig quota;  // merged quota ConfigMaps; the default config when there are none
  // What was read and what was ignored, and why: one sentence each, for the start-up log.
  std::vector<std::string> notes;
};

Result<ClusterObjects> loadClusterFile(const std::string& path, std::string_view gpufairNamespace);

// `source` names the text in messages (usually its file name).
Result<ClusterObjects> parseClusterText(std::string_view text, std::string_view source,
                                        std::string_view gpufairNamespace);

}  // namespace gpufair::config
