#include "serve_config.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "gpufair/policy/scorer.h"

#include "cli.h"

namespace gpufair::app {
namespace {

std::vector<FlagSpec> ownFlags() {
  return {
      {"cluster", "serve a cluster read from this YAML/JSON file (nodes, pods, quota ConfigMaps)",
       ""},
      {"kubeconfig",
       "read the cluster from the API server of this kubeconfig (default: in-cluster)", ""},
      {"context", "the kubeconfig context to use (default: its current context)", ""},
      {"leader-elect", "elect one writing replica through a Lease (true or false)", "true"},
      {"lease-name", "the leader-election Lease in gpufair's namespace", "gpufair"},
      {"follow-scheduler-lease",
       "NAMESPACE/NAME of kube-scheduler's leader-election Lease: lead exactly while the "
       "kube-scheduler in this pod (same hostname) holds it, instead of electing through "
       "--lease-name; use it whenever kube-scheduler and gpufair run in one pod with replicas > 1",
       ""},
      {"scheduler-name",
       "the kube-scheduler profile (spec.schedulerName) whose pending pods gpufair asks "
       "kube-scheduler to retry once it has a complete view",
       "gpufair"},
      {"bind-mode",
       "how /bind waits for the API server's answer to its Binding without holding an HTTP io "
       "thread: async (sent and answered on the io threads' event loop) or threads (on up to "
       "--bind-threads bind threads)",
       "async"},
      {"bind-threads",
       "--bind-mode=threads: Bindings posted to the API server at once, each on a thread of its "
       "own; 0 posts them on the io thread",
       "16"},
      {"lease-duration", "leader election: how long a Lease is valid", "15s"},
      {"renew-deadline", "leader election: stop leading when not renewed for this long", "10s"},
      {"retry-period", "leader election: how often to try to acquire or renew", "2s"},
      {"stale-after", "not ready when a watch has been down for longer than this", "60s"},
      {"listen",
       "HOST:PORT for the webhooks; port 0 picks a free port. Plain HTTP only on loopback "
       "unless --allow-insecure-http",
       "127.0.0.1:8888"},
      {"tls-cert", "serve HTTPS with this PEM certificate chain (needs --tls-key)", ""},
      {"tls-key", "the PEM private key of --tls-cert", ""},
      {"client-ca", "HTTPS: require a client certificate signed by this PEM CA (kube-scheduler's)",
       ""},
      {"client-allowed-names",
       "NAME[,NAME...]: with --client-ca, serve only client certificates whose subject CN or a DNS "
       "name is listed (kube-scheduler's certificate name); others fail the TLS handshake",
       ""},
      {"tls-reload-period",
       "how often the --tls-cert, --tls-key and --client-ca files are checked for changes (a "
       "changed, usable set serves new connections; SIGHUP re-reads them at once); 0s: only on "
       "SIGHUP",
       "5s"},
      {"allow-insecure-http", "serve plain HTTP on a non-loopback --listen address", "", true},
      {"namespace",
       "gpufair's own namespace: quota ConfigMaps and the Lease live here (default: the service "
       "account's namespace in a cluster, else gpufair-system)",
       ""},
      {"scorer", "placement strategy: " + scorerList(), policy::kDefaultScorer},
      {"filter-mode",
       "what /filter answers among the nodes that fit: best (only the node gpufair would choose: "
       "kube-scheduler skips scoring and /prioritize, but its own soft preferences no longer "
       "weigh in), all (kube-scheduler scores them) or top-N",
       api::kDefaultFilterMode},
      {"threads", "HTTP io threads, each with an event loop of its own", "1"},
      {"max-body-bytes", "largest request body accepted (413 beyond)", std::to_string(64u << 20)},
      {"max-header-bytes", "largest request header accepted (431 beyond)",
       std::to_string(16u << 10)},
      {"read-timeout", "time a client has to send a whole request (or finish a TLS handshake)",
       "10s"},
      {"write-timeout", "time a client has to take an answer", "10s"},
      {"idle-timeout", "keep-alive connections silent this long are closed", "90s"},
      {"max-connections", "open connections beyond this are refused with 503", "1024"},
      {"assume-ttl", "an unconfirmed binding is forgotten after this", "30s"},
      {"pending-ttl", "a pod offered by kube-scheduler and not seen again is forgotten after this",
       "15m"},
      {"metrics-listen",
       "HOST:PORT for GET /metrics (Prometheus); port 0 picks a free port; \"off\" serves none",
       "127.0.0.1:9090"},
      {"gang-timeout",
       "GPUs reserved for a gang are released if not all its pods are bound within this", "5m"},
      {"log-level", "trace, debug, info, warn or error", "info"},
      {"log-format", "text, or json: one JSON object per line (ts, level, msg, thread)", "text"},
  };
}

std::vector<FlagSpec> reclaimFlags() {
  return {{"reclaim",
           "evict borrowed pods so queues get their deserved GPUs back: on, dry-run (plan and "
           "log, evict nothing) or off",
           "on"},
          {"reclaim-period", "how often the reclaim loop runs", "5s"},
          {"reclaim-hold", "how long GPUs freed by reclaim are held for the waiting pod", "2m"}};
}

std::vector<FlagSpec> consolidateFlags() {
  return {{"consolidate",
           "move movable pods (label gpufair.io/movable=true, or borrowed) so that a pod whose "
           "GPUs are free in total but on no one node fits: on, dry-run or off",
           "off"},
          {"consolidate-period", "how often the consolidation loop runs", "10s"},
          {"consolidate-timeout",
           "how long a consolidation holds the freed node and the movers' new places before it "
           "gives up",
           "5m"}};
}

Result<std::size_t> parseCount(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const unsigned long long v = std::stoull(text, &used);
    if (used == text.size() && v > 0) return static_cast<std::size_t>(v);
  } catch (const std::exception&) {
  }
  return Result<std::size_t>::failure("--" + flag + " must be a positive whole number, not \"" +
                                      text + "\"");
}

// A TTL in whole seconds, at least one.
std::chrono::seconds wholeSeconds(long long millis) {
  return std::chrono::seconds{std::max<long long>(1, millis / 1000)};
}

// The webhook server: --listen, TLS, limits and timeouts.
Status readServerOptions(const ParsedArgs& args, api::ServerOptions& options) {
  options.listen = args.get("listen");
  if (args.has("tls-cert") != args.has("tls-key")) {
    return Status::error("--tls-cert and --tls-key go together");
  }
  if (args.has("client-ca") && !args.has("tls-cert")) {
    return Status::error("--client-ca needs --tls-cert and --tls-key");
  }
  if (args.has("client-allowed-names") && !args.has("client-ca")) {
    return Status::error("--client-allowed-names needs --client-ca (client certificates)");
  }
  if (args.has("tls-cert")) {
    options.tls.certFile = args.get("tls-cert");
    options.tls.keyFile = args.get("tls-key");
    if (args.has("client-ca")) options.tls.clientCaFile = args.get("client-ca");
  }
  if (args.has("client-allowed-names")) {
    const std::string& list = args.get("client-allowed-names");
    for (std::size_t begin = 0; begin <= list.size();) {
      std::size_t end = list.find(',', begin);
      if (end == std::string::npos) end = list.size();
      if (end == begin)
        return Status::error("--client-allowed-names: an empty name in \"" + list + "\"");
      options.tls.clientAllowedNames.push_back(list.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  auto reload = parseMillis(args.get("tls-reload-period"));
  if (!reload) return Status::error("--tls-reload-period: " + reload.error());
  options.tls.reloadPeriod = std::chrono::milliseconds{*reload};
  options.allowInsecureHttp = args.has("allow-insecure-http");
  for (auto [flag, out] : {std::pair{"read-timeout", &options.readTimeout},
                           std::pair{"idle-timeout", &options.idleTimeout},
                           std::pair{"write-timeout", &options.writeTimeout}}) {
    auto ms = parseMillis(args.get(flag));
    if (!ms) return Status::error("--" + std::string(flag) + ": " + ms.error());
    *out = std::chrono::milliseconds{*ms};
  }
  for (auto [flag, out] : {std::pair{"max-body-bytes", &options.maxBodyBytes},
                           std::pair{"max-header-bytes", &options.maxHeaderBytes},
                           std::pair{"max-connections", &options.maxConnections}}) {
    auto n = parseCount(flag, args.get(flag));
    if (!n) return Status::error(n.error());
    *out = *n;
  }
  auto threads = parseCount("threads", args.get("threads"));
  if (!threads || *threads > 64) {
    return Status::error("--threads must be a whole number from 1 to 64");
  }
  options.threads = static_cast<int>(*threads);
  return Status::ok();
}

// The mirror's time limits: --assume-ttl, --pending-ttl, --gang-timeout.
Status readMirrorOptions(const ParsedArgs& args, state::MirrorOptions& options) {
  auto assumeTtl = parseMillis(args.get("assume-ttl"));
  auto pendingTtl = parseMillis(args.get("pending-ttl"));
  if (!assumeTtl) return Status::error("--assume-ttl: " + assumeTtl.error());
  if (!pendingTtl) return Status::error("--pending-ttl: " + pendingTtl.error());
  auto gangTimeout = parseMillis(args.get("gang-timeout"));
  if (!gangTimeout) return Status::error("--gang-timeout: " + gangTimeout.error());
  options.gangTimeout = wholeSeconds(*gangTimeout);
  options.assumeTtl = wholeSeconds(*assumeTtl);
  options.pendingTtl = wholeSeconds(*pendingTtl);
  return Status::ok();
}

// The API server and leader election (read only when no --cluster file is given).
Status readKubeSettings(const ParsedArgs& args, KubeSettings& settings) {
  settings.kubeconfig = args.get("kubeconfig");
  settings.context = args.get("context");
  settings.ns = args.get("namespace");
  settings.leaseName = args.get("lease-name");
  settings.schedulerName = args.get("scheduler-name");
  if (const std::string follow = args.get("follow-scheduler-lease"); !follow.empty()) {
    const auto slash = follow.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == follow.size() ||
        follow.find('/', slash + 1) != std::string::npos) {
      return Status::error(
          "--follow-scheduler-lease must be NAMESPACE/NAME, e.g. gpufair-system/gpufair-scheduler");
    }
    settings.followLeaseNs = follow.substr(0, slash);
    settings.followLeaseName = follow.substr(slash + 1);
  }
  const std::string bindThreads = args.get("bind-threads");
  auto count =
      bindThreads == "0" ? Result<std::size_t>(0) : parseCount("bind-threads", bindThreads);
  if (!count || *count > 256) {
    return Status::error("--bind-threads must be a whole number from 0 to 256");
  }
  settings.bindThreads = *count;
  const std::string bindMode = args.get("bind-mode");
  if (bindMode != "async" && bindMode != "threads") {
    return Status::error("--bind-mode must be async or threads");
  }
  settings.bindAsync = bindMode == "async";
  if (args.get("leader-elect") != "true" && args.get("leader-elect") != "false") {
    return Status::error("--leader-elect must be true or false");
  }
  settings.leaderElect = args.get("leader-elect") == "true";
  for (auto [flag, out] : {std::pair{"lease-duration", &settings.leaseDuration},
                           std::pair{"renew-deadline", &settings.renewDeadline},
                           std::pair{"retry-period", &settings.retryPeriod},
                           std::pair{"stale-after", &settings.staleAfter}}) {
    auto ms = parseMillis(args.get(flag));
    if (!ms || *ms < 1000) return Status::error("--" + std::string(flag) + " must be at least 1s");
    *out = std::chrono::seconds{*ms / 1000};
  }
  if (!(settings.leaseDuration > settings.renewDeadline &&
        settings.renewDeadline > settings.retryPeriod)) {
    return Status::error(
        "leader election needs --lease-duration > --renew-deadline > --retry-period");
  }
  return Status::ok();
}

}  // namespace

const std::vector<FlagSpec>& serveFlags() {
  static const std::vector<FlagSpec> kAll = [] {
    std::vector<FlagSpec> flags = ownFlags();
    for (auto& flag : reclaimFlags()) flags.push_back(std::move(flag));
    for (auto& flag : consolidateFlags()) flags.push_back(std::move(flag));
    flags.push_back({"help", "show this help", "", true});
    return flags;
  }();
  return kAll;
}

std::string serveUsage() {
  return usage("serve [flags]",
               "Serves kube-scheduler's extender webhooks (POST /filter, /prioritize, /preempt, "
               "/bind;\nGET /healthz, /readyz, /debug/snapshot, /debug/explain) on --listen, and "
               "Prometheus\nmetrics (GET /metrics) on --metrics-listen.",
               serveFlags());
}

Result<ServeConfig> parseServeConfig(const std::vector<std::string>& argv) {
  using R = Result<ServeConfig>;
  auto parsed = parseArgs(argv, serveFlags());
  if (!parsed) return R::failure(parsed.error() + "\n\n" + serveUsage());
  const ParsedArgs& args = *parsed;
  ServeConfig config;
  if (args.has("help")) {
    config.help = true;
    return config;
  }
  auto logFormat = parseLogFormat(args.get("log-format"));
  if (!logFormat) return R::failure(logFormat.error());
  config.logFormat = *logFormat;
  config.logLevel = args.get("log-level");
  if (Status level = checkLogLevel(config.logLevel); !level.isOk()) {
    return R::failure(level.reason());
  }
  if (args.has("cluster") && args.has("kubeconfig")) {
    return R::failure("--cluster and --kubeconfig exclude each other: serve a file or a cluster");
  }
  if (Status s = readServerOptions(args, config.server); !s.isOk()) return R::failure(s.reason());
  if (Status s = readMirrorOptions(args, config.mirror); !s.isOk()) return R::failure(s.reason());
  auto reclaim = parseReclaimSettings(args);
  if (!reclaim) return R::failure(reclaim.error());
  config.reclaim = *reclaim;
  auto consolidate = parseConsolidationSettings(args);
  if (!consolidate) return R::failure(consolidate.error());
  config.consolidate = *consolidate;
  config.consolidate.reclaimEnabled = config.reclaim.enabled && !config.reclaim.dryRun;
  auto filterMode = api::FilterMode::parse(args.get("filter-mode"));
  if (!filterMode) return R::failure("--filter-mode: " + filterMode.error());
  config.filterMode = *filterMode;
  config.scorer = args.get("scorer");
  if (!policy::makeScorer(config.scorer)) {
    std::string known;
    for (const auto& n : policy::scorerNames()) known += (known.empty() ? "" : ", ") + n;
    return R::failure("--scorer " + config.scorer + " is not a known strategy (" + known + ")");
  }
  config.metricsListen = args.get("metrics-listen");
  if (args.has("cluster")) {
    config.clusterFile = args.get("cluster");
    if (args.has("namespace")) config.clusterNamespace = args.get("namespace");
  } else if (Status s = readKubeSettings(args, config.kube); !s.isOk()) {
    return R::failure(s.reason());
  } else {
    // Against an API server, demand is what the API server says exists: a pod only offered to
    // /filter (e.g. a late call for a pod deleted meanwhile) is not demand until the watch shows
    // it.
    config.mirror.offeredPodsAreDemand = false;
  }
  return config;
}

Result<ReclaimSettings> parseReclaimSettings(const ParsedArgs& args) {
  using R = Result<ReclaimSettings>;
  ReclaimSettings settings;
  const std::string& mode = args.get("reclaim");
  if (mode == "off") {
    settings.enabled = false;
  } else if (mode == "dry-run") {
    settings.dryRun = true;
  } else if (mode != "on") {
    return R::failure("--reclaim must be on, dry-run or off, not \"" + mode + "\"");
  }
  auto period = parseMillis(args.get("reclaim-period"));
  if (!period || *period < 100) return R::failure("--reclaim-period must be at least 100ms");
  settings.period = std::chrono::milliseconds{*period};
  auto hold = parseMillis(args.get("reclaim-hold"));
  if (!hold || *hold < 1000) return R::failure("--reclaim-hold must be at least 1s");
  settings.holdFor = std::chrono::seconds{*hold / 1000};
  return settings;
}

Result<ConsolidationSettings> parseConsolidationSettings(const ParsedArgs& args) {
  using R = Result<ConsolidationSettings>;
  ConsolidationSettings settings;
  const std::string& mode = args.get("consolidate");
  if (mode == "on" || mode == "dry-run") {
    settings.enabled = true;
    settings.dryRun = mode == "dry-run";
  } else if (mode != "off") {
    return R::failure("--consolidate must be on, dry-run or off, not \"" + mode + "\"");
  }
  auto period = parseMillis(args.get("consolidate-period"));
  if (!period || *period < 100) return R::failure("--consolidate-period must be at least 100ms");
  settings.period = std::chrono::milliseconds{*period};
  auto timeout = parseMillis(args.get("consolidate-timeout"));
  if (!timeout || *timeout < 1000) return R::failure("--consolidate-timeout must be at least 1s");
  settings.holdFor = std::chrono::seconds{*timeout / 1000};
  return settings;
}

std::string consolidationModeName(const ConsolidationSettings& settings) {
  if (!settings.enabled) return "off";
  return settings.dryRun ? "dry-run" : "on";
}

std::string reclaimModeName(const ReclaimSettings& settings) {
  if (!settings.enabled) return "off";
  return settings.dryRun ? "dry-run" : "on";
}

}  // namespace gpufair::app
