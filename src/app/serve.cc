// `gpufair serve`: the extender webhooks over a cluster from a file (demos, tests), and
// `gpufair validate`: checks a quota file offline with the same code the service uses.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>

#include <malloc.h>
#include <spdlog/spdlog.h>

#include "gpufair/api/binder.h"
#include "gpufair/api/extender_service.h"
#include "gpufair/api/server.h"
#include "gpufair/config/cluster_file.h"
#include "gpufair/config/quota.h"
#include "gpufair/metrics/metrics.h"
#include "gpufair/metrics/metrics_server.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/state/mirror.h"

#include "cli.h"
#include "commands.h"
#include "kube_source.h"
#include "logging.h"
#include "reclaim_runner.h"

namespace gpufair::app {
namespace {

const std::vector<FlagSpec>& serveFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {"cluster", "serve a cluster read from this YAML/JSON file (nodes, pods, quota ConfigMaps)",
       ""},
      {"kubeconfig",
       "read the cluster from the API server of this kubeconfig (default: in-cluster)", ""},
      {"context", "the kubeconfig context to use (default: its current context)", ""},
      {"leader-elect", "elect one writing replica through a Lease (true or false)", "true"},
      {"lease-name", "the leader-election Lease in gpufair's namespace", "gpufair"},
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
      {"allow-insecure-http", "serve plain HTTP on a non-loopback --listen address", "", true},
      {"namespace",
       "gpufair's own namespace: quota ConfigMaps and the Lease live here (default: the service "
       "account's namespace in a cluster, else gpufair-system)",
       ""},
      {"scorer", "placement strategy: fgdm, fgd, fgdplus, blockfit, bestfit, binpack, spread, ...",
       policy::kDefaultScorer},
      {"threads", "HTTP io threads", "2"},
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
      {"help", "show this help", "", true},
  };
  return kFlags;
}

// The host part of a URL for a listen address: wildcard addresses become the loopback one.
std::string urlHost(const std::string& listen) {
  auto addr = api::parseListenAddress(listen);
  std::string host = addr ? addr->host : "127.0.0.1";
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return host;
}

// Hands the webhook service's request events to the metrics exporter (api knows no metrics).
class MetricsRequestObserver final : public api::RequestObserver {
 public:
  explicit MetricsRequestObserver(metrics::Metrics& metrics) : metrics_(metrics) {}
  void observe(std::string_view verb, std::string_view result, double seconds) override {
    metrics_.requestObserved(verb, result, seconds);
  }
  void filterRejected(std::string_view category) override { metrics_.filterRejected(category); }

 private:
  metrics::Metrics& metrics_;
};

// serve's flags with the reclaim loop's (before --help).
const std::vector<FlagSpec>& allServeFlags() {
  static const std::vector<FlagSpec> kAll = [] {
    std::vector<FlagSpec> flags = serveFlags();
    auto reclaim = reclaimFlags();
    flags.insert(flags.end() - 1, reclaim.begin(), reclaim.end());
    return flags;
  }();
  return kAll;
}

volatile std::sig_atomic_t gStop = 0;
extern "C" void onSignal(int) {
  gStop = 1;
}

int fail(const std::string& message, int code = 1) {
  std::cerr << "gpufair: " << message << "\n";
  return code;
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

}  // namespace

int runServe(const std::vector<std::string>& argv) {
  const std::string summary =
      "Serves kube-scheduler's extender webhooks (POST /filter, /prioritize, /preempt, /bind;\n"
      "GET /healthz, /readyz, /debug/snapshot, /debug/explain) on --listen, and Prometheus\n"
      "metrics (GET /metrics) on --metrics-listen.";
  auto parsed = parseArgs(argv, allServeFlags());
  if (!parsed)
    return fail(parsed.error() + "\n\n" + usage("serve [flags]", summary, allServeFlags()), 2);
  const ParsedArgs& args = *parsed;
  if (args.has("help")) {
    std::cout << usage("serve [flags]", summary, allServeFlags());
    return 0;
  }
  auto logFormat = parseLogFormat(args.get("log-format"));
  if (!logFormat) return fail(logFormat.error(), 2);
  if (Status logging = configureLogging(args.get("log-level"), *logFormat); !logging.isOk()) {
    return fail(logging.reason(), 2);
  }
  if (args.has("cluster") && args.has("kubeconfig")) {
    return fail("--cluster and --kubeconfig exclude each other: serve a file or a cluster", 2);
  }

  api::ServerOptions options;
  options.listen = args.get("listen");
  if (args.has("tls-cert") != args.has("tls-key")) {
    return fail("--tls-cert and --tls-key go together", 2);
  }
  if (args.has("client-ca") && !args.has("tls-cert")) {
    return fail("--client-ca needs --tls-cert and --tls-key", 2);
  }
  if (args.has("tls-cert")) {
    options.tls.certFile = args.get("tls-cert");
    options.tls.keyFile = args.get("tls-key");
    if (args.has("client-ca")) options.tls.clientCaFile = args.get("client-ca");
  }
  options.allowInsecureHttp = args.has("allow-insecure-http");
  struct {
    const char* flag;
    std::chrono::milliseconds* out;
  } durations[] = {{"read-timeout", &options.readTimeout},
                   {"idle-timeout", &options.idleTimeout},
                   {"write-timeout", &options.writeTimeout}};
  for (auto& d : durations) {
    auto ms = parseMillis(args.get(d.flag));
    if (!ms) return fail("--" + std::string(d.flag) + ": " + ms.error(), 2);
    *d.out = std::chrono::milliseconds{*ms};
  }
  for (auto [flag, out] : {std::pair{"max-body-bytes", &options.maxBodyBytes},
                           std::pair{"max-header-bytes", &options.maxHeaderBytes},
                           std::pair{"max-connections", &options.maxConnections}}) {
    auto n = parseCount(flag, args.get(flag));
    if (!n) return fail(n.error(), 2);
    *out = *n;
  }
  auto threads = parseCount("threads", args.get("threads"));
  if (!threads || *threads > 64) return fail("--threads must be a whole number from 1 to 64", 2);
  options.threads = static_cast<int>(*threads);
  state::MirrorOptions mirrorOptions;
  auto assumeTtl = parseMillis(args.get("assume-ttl"));
  auto pendingTtl = parseMillis(args.get("pending-ttl"));
  if (!assumeTtl) return fail("--assume-ttl: " + assumeTtl.error(), 2);
  if (!pendingTtl) return fail("--pending-ttl: " + pendingTtl.error(), 2);
  auto gangTimeout = parseMillis(args.get("gang-timeout"));
  if (!gangTimeout) return fail("--gang-timeout: " + gangTimeout.error(), 2);
  mirrorOptions.gangTimeout = std::chrono::seconds{std::max<long long>(1, *gangTimeout / 1000)};
  mirrorOptions.assumeTtl = std::chrono::seconds{std::max<long long>(1, *assumeTtl / 1000)};
  mirrorOptions.pendingTtl = std::chrono::seconds{std::max<long long>(1, *pendingTtl / 1000)};

  auto reclaimSettings = parseReclaimSettings(args);
  if (!reclaimSettings) return fail(reclaimSettings.error(), 2);

  std::shared_ptr<const policy::Scorer> scorer = policy::makeScorer(args.get("scorer"));
  if (!scorer) {
    std::string known;
    for (const auto& n : policy::scorerNames()) known += (known.empty() ? "" : ", ") + n;
    return fail("--scorer " + args.get("scorer") + " is not a known strategy (" + known + ")", 2);
  }

  state::Mirror mirror(std::make_shared<SystemClock>(), mirrorOptions);
  mirror.setScorer(scorer);  // /bind picks a fractional pod's GPU the way the scorer would
  api::MemoryBinder memoryBinder;
  std::unique_ptr<KubeSource> kube;
  std::string source;
  if (args.has("cluster")) {
    const std::string ns = args.has("namespace") ? args.get("namespace") : "gpufair-system";
    auto cluster = config::loadClusterFile(args.get("cluster"), ns);
    if (!cluster) return fail("cannot load cluster file:\n" + cluster.error());
    for (const auto& note : cluster->notes) spdlog::info("{}", note);
    mirror.setQuotaConfig(cluster->quota);
    for (auto& node : cluster->nodes) mirror.upsertNode(std::move(node));
    for (auto& pod : cluster->pods) mirror.upsertPod(std::move(pod));
    cluster = Result<config::ClusterObjects>::failure("");  // the parsed copy is no longer needed
    // Parsing a large file leaves hundreds of MiB of freed YAML nodes in glibc's arenas; hand
    // them back so resident memory reflects what the service holds (bench/RESULTS.md).
    malloc_trim(0);
    source = "cluster file " + args.get("cluster");
  } else {
    KubeSettings settings;
    settings.kubeconfig = args.get("kubeconfig");
    settings.context = args.get("context");
    settings.ns = args.get("namespace");
    settings.leaseName = args.get("lease-name");
    if (args.get("leader-elect") != "true" && args.get("leader-elect") != "false") {
      return fail("--leader-elect must be true or false", 2);
    }
    settings.leaderElect = args.get("leader-elect") == "true";
    struct {
      const char* flag;
      std::chrono::seconds* out;
    } periods[] = {{"lease-duration", &settings.leaseDuration},
                   {"renew-deadline", &settings.renewDeadline},
                   {"retry-period", &settings.retryPeriod},
                   {"stale-after", &settings.staleAfter}};
    for (auto& p : periods) {
      auto ms = parseMillis(args.get(p.flag));
      if (!ms || *ms < 1000) return fail("--" + std::string(p.flag) + " must be at least 1s", 2);
      *p.out = std::chrono::seconds{*ms / 1000};
    }
    if (!(settings.leaseDuration > settings.renewDeadline &&
          settings.renewDeadline > settings.retryPeriod)) {
      return fail("leader election needs --lease-duration > --renew-deadline > --retry-period", 2);
    }
    auto created = KubeSource::create(settings, mirror, std::make_shared<SystemClock>());
    if (!created) return fail(created.error());
    kube = std::move(created.value());
    source = "API server " + kube->server() + " (namespace " + kube->ns() + ")";
  }

  api::Binder& binder = kube ? static_cast<api::Binder&>(*kube) : memoryBinder;
  api::ExtenderService service(mirror, *scorer, binder,
                               [&kube]() -> Status { return kube ? kube->ready() : Status::ok(); });
  if (kube) {
    service.setObserver(kube.get());
    service.setHealthDetails([&kube] { return kube->healthDetails(); });
  }
  // Metrics read the published snapshot at scrape time; requests and rejections are counted as
  // they happen; the reclaim loop reports evictions with reclaimEvicted().
  metrics::Metrics metrics([&mirror] { return mirror.snapshot(); });
  if (kube) {
    metrics.setResourceCounters([&kube] { return kube->feedCounters(); });
    metrics.setQuotaHealth([&kube] { return kube->quotaHealthy(); });
  }
  MetricsRequestObserver requestObserver(metrics);
  service.setRequestObserver(&requestObserver);
  api::ExtenderServer server(service, options);
  metrics.setWebhookEvents([&server] {
    const api::ServerStats& s = server.stats();
    return std::vector<std::pair<std::string, std::uint64_t>>{
        {"connection_accepted", s.connectionsAccepted.load()},
        {"connection_refused", s.connectionsRefused.load()},
        {"body_too_large", s.bodyTooLarge.load()},
        {"header_too_large", s.headerTooLarge.load()},
        {"malformed_request", s.malformedRequests.load()},
        {"read_timeout", s.readTimeouts.load()},
        {"write_timeout", s.writeTimeouts.load()},
        {"idle_closed", s.idleClosed.load()},
        {"tls_handshake_failed", s.tlsHandshakeFailures.load()},
        {"handler_error", s.handlerErrors.load()}};
  });
  // The handler only sets a flag; the loop below notices it and stops the server.
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  if (kube) kube->start();
  if (Status started = server.start(); !started.isOk()) {
    if (kube) kube->stop();
    return fail(started.reason());
  }
  // The reclaim loop: in memory for a cluster file, through the Eviction API (leader only) else.
  ReclaimRunner reclaim(mirror, *reclaimSettings, std::make_shared<SystemClock>(), kube.get());
  reclaim.setEvictionHook([&metrics](const std::string& queue) { metrics.reclaimEvicted(queue); });
  reclaim.start();

  std::unique_ptr<metrics::MetricsServer> metricsServer;
  if (args.get("metrics-listen") != "off") {
    auto served = metrics::MetricsServer::start(metrics, args.get("metrics-listen"));
    if (!served) {
      server.stop();
      if (kube) kube->stop();
      return fail("--metrics-listen: " + served.error(), 2);
    }
    metricsServer = std::move(served.value());
  }

  auto snap = mirror.snapshot();
  const std::string url = std::string(server.tls() ? "https://" : "http://") +
                          urlHost(options.listen) + ":" + std::to_string(server.port());
  const std::string metricsUrl = metricsServer
                                     ? "http://" + urlHost(args.get("metrics-listen")) + ":" +
                                           std::to_string(metricsServer->port()) + "/metrics"
                                     : "";
  spdlog::info("{}: {} nodes, {} GPUs ({} free), {} queues, scorer {}, reclaim {}", source,
               snap->nodes().size(), formatGpus(snap->capacity()), formatGpus(snap->free()),
               snap->queues().size(), scorer->name(), reclaimModeName(*reclaimSettings));
  spdlog::info("serving the extender webhooks on {}; metrics {}", url,
               metricsServer ? "on " + metricsUrl : "off");
  if (*logFormat == LogFormat::kText) {
    std::cout << "gpufair is serving the extender webhooks on " << url << "\n"
              << (metricsServer ? "  and Prometheus metrics on " + metricsUrl + "\n" : "")
              << "  try:  curl -s " << url << "/debug/snapshot\n"
              << "        curl -s -X POST " << url
              << "/filter -H 'Content-Type: application/json' -d @examples/filter-request.json\n"
              << "        gpufair top --url " << url << "\n"
              << "Press Ctrl-C to stop." << std::endl;
  }

  while (gStop == 0) {
    struct timespec tick {
      0, 200'000'000
    };
    nanosleep(&tick, nullptr);
    static int ticks = 0;
    if (++ticks % 5 == 0) {
      if (std::size_t n = mirror.expire(); n > 0)
        spdlog::info("forgot {} expired pods or reservations", n);
      if (kube) kube->tick();
    }
  }
  spdlog::info("stopping: finishing requests in flight");
  reclaim.stop();  // no eviction starts after this; the round in progress finishes
  metricsServer.reset();
  server.stop();
  if (kube) kube->stop();  // releases the Lease so another replica takes over at once
  return 0;
}

int runValidate(const std::vector<std::string>& argv) {
  const std::vector<FlagSpec> flags = {
      {"namespace", "gpufair's namespace, for quota ConfigMaps in cluster files", "gpufair-system"},
      {"help", "show this help", "", true}};
  const std::string summary =
      "Checks files offline with the service's own parsers: a queues.yaml document, a ConfigMap\n"
      "manifest carrying one, or a cluster file for serve --cluster (Nodes, Pods, ConfigMaps).\n"
      "Prints every problem as FILE:LINE:COL: what is wrong; exits 1 if any file is invalid.";
  auto parsed = parseArgs(argv, flags);
  if (!parsed) return fail(parsed.error(), 2);
  if (parsed->has("help") || parsed->positional.empty()) {
    std::cout << usage("validate [flags] FILE...", summary, flags);
    return parsed->has("help") ? 0 : 2;
  }
  auto printQueues = [](const QuotaConfig& quota) {
    for (const auto& q : quota.queues) {
      std::cout << "  queue " << q.name << ": deserved " << formatGpus(q.gpu.deserved) << ", limit "
                << (q.gpu.limit ? formatGpus(*q.gpu.limit) : "none") << ", overQuotaWeight "
                << q.gpu.overQuotaWeight << "\n";
    }
  };
  int status = 0;
  for (const auto& path : parsed->positional) {
    auto quota = config::loadQuotaFile(path);
    if (quota) {
      std::cout << path << ": ok, " << quota->queues.size() << " queue"
                << (quota->queues.size() == 1 ? "" : "s") << "\n";
      printQueues(*quota);
      continue;
    }
    // Not a quota file? It may be a whole cluster file (Nodes and Pods as well).
    if (quota.error().find("expected queues.yaml or a ConfigMap") != std::string::npos) {
      auto cluster = config::loadClusterFile(path, parsed->get("namespace"));
      if (cluster) {
        std::cout << path << ": ok, cluster file with " << cluster->nodes.size() << " nodes, "
                  << cluster->pods.size() << " pods, " << cluster->quota.queues.size()
                  << " queues\n";
        printQueues(cluster->quota);
        for (const auto& note : cluster->notes) std::cout << "  note: " << note << "\n";
        continue;
      }
      std::cerr << cluster.error() << "\n";
    } else {
      std::cerr << quota.error() << "\n";
    }
    status = 1;
  }
  return status;
}

}  // namespace gpufair::app
