// `gpufair serve`, step one of three (options -> config -> run): its flags, and the plain
// ServeConfig that parsing and validating them produce. Nothing here starts, opens or connects
// anything, so every flag, default and error message is unit-tested (tests/app/serve_config_test).
// serve_runner.h wires and runs a ServeConfig.
// Thread-safety: value types and free functions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/server.h"
#include "gpufair/common/status.h"
#include "gpufair/state/mirror.h"

#include "cli.h"
#include "consolidation_controller.h"
#include "logging.h"
#include "reclaim_controller.h"

namespace gpufair::app {

// Where serve reads a real cluster from (used when no --cluster file is given).
struct KubeSettings {
  std::string kubeconfig;  // empty: in-cluster
  std::string context;
  std::string ns;  // empty: the kubeconfig's / service account's namespace, else gpufair-system
  bool leaderElect = true;
  std::string leaseName = "gpufair";
  // Set: follow kube-scheduler's Lease instead (k8s::LeaderElectorOptions::followHolderPrefix).
  std::string followLeaseNs;
  std::string followLeaseName;
  std::chrono::seconds leaseDuration{15};
  std::chrono::seconds renewDeadline{10};
  std::chrono::seconds retryPeriod{2};
  std::chrono::seconds staleAfter{60};    // not ready when a watch has been down longer than this
  std::string schedulerName = "gpufair";  // the profile whose pods gpufair requeues when ready
  std::size_t bindThreads = 16;           // k8s::KubeBinderOptions::bindThreads
  bool bindAsync = true;  // --bind-mode=async: k8s::KubeBinder::bindOn the webhook's io_context
};

struct ServeConfig {
  bool help = false;  // --help: print serveUsage() and exit 0; nothing else is filled in
  std::string logLevel = "info";
  LogFormat logFormat = LogFormat::kText;
  // --cluster: serve this file (bind and eviction act on memory); empty: serve the API server's
  // cluster through `kube`.
  std::string clusterFile;
  std::string clusterNamespace = "gpufair-system";  // file mode: where quota ConfigMaps count
  KubeSettings kube;
  api::ServerOptions server;
  state::MirrorOptions mirror;
  ReclaimSettings reclaim;
  ConsolidationSettings consolidate;  // --consolidate (default off), -period, -timeout
  std::string scorer;                 // a name policy::makeScorer knows
  api::FilterMode filterMode;         // what /filter answers among the nodes that fit
  std::string metricsListen;          // HOST:PORT, or "off"
  bool metricsEnabled() const { return metricsListen != "off"; }
};

// Every flag of serve, the reclaim loop's included, in the order --help lists them.
const std::vector<FlagSpec>& serveFlags();
// serve's --help text.
std::string serveUsage();

// Parses and validates serve's arguments. The error is the message to print (the process exits
// with 2); it names the flag, and for an unknown flag or a missing value is followed by the usage.
Result<ServeConfig> parseServeConfig(const std::vector<std::string>& argv);

// The reclaim loop's flags (--reclaim, --reclaim-period, --reclaim-hold), read from parsed args.
Result<ReclaimSettings> parseReclaimSettings(const ParsedArgs& args);
// "on", "dry-run" or "off", for logs.
std::string reclaimModeName(const ReclaimSettings& settings);
// The consolidation loop's flags (--consolidate, --consolidate-period, --consolidate-timeout).
Result<ConsolidationSettings> parseConsolidationSettings(const ParsedArgs& args);
std::string consolidationModeName(const ConsolidationSettings& settings);

}  // namespace gpufair::app
