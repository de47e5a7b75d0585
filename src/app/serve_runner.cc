#include "serve_runner.h"

#include <iostream>
#include <memory>

#include <malloc.h>
#include <spdlog/spdlog.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/memory_binder.h"
#include "gpufair/api/server.h"
#include "gpufair/config/cluster_file.h"
#include "gpufair/metrics/metrics.h"
#include "gpufair/metrics/metrics_server.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/state/mirror.h"

#include "consolidation_runner.h"
#include "kube_source.h"
#include "reclaim_runner.h"
#include "serve_tls.h"
#include "stop_signal.h"

namespace gpufair::app {
namespace {

constexpr std::chrono::seconds kHousekeepingPeriod{1};

int fail(const std::string& message, int code = 1) {
  std::cerr << "gpufair: " << message << "\n";
  return code;
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

std::vector<std::pair<std::string, std::uint64_t>> webhookEvents(const api::ServerStats& s) {
  return {{"connection_accepted", s.connectionsAccepted.load()},
          {"connection_refused", s.connectionsRefused.load()},
          {"body_too_large", s.bodyTooLarge.load()},
          {"header_too_large", s.headerTooLarge.load()},
          {"malformed_request", s.malformedRequests.load()},
          {"read_timeout", s.readTimeouts.load()},
          {"write_timeout", s.writeTimeouts.load()},
          {"idle_closed", s.idleClosed.load()},
          {"tls_handshake_failed", s.tlsHandshakeFailures.load()},
          {"client_name_refused", s.clientNamesRefused.load()},
          {"handler_error", s.handlerErrors.load()}};
}

// The parts of one serve run, in the order they are built; destroyed in reverse.
class ServeRun {
 public:
  explicit ServeRun(const ServeConfig& config)
      : config_(config),
        scorer_(policy::makeScorer(config.scorer)),
        mirror_(clock_, config.mirror) {
    mirror_.setScorer(scorer_);  // /bind picks a fractional pod's GPU the way the scorer would
  }

  int run() {
    if (!scorer_) return fail("--scorer " + config_.scorer + " is not a known strategy", 2);
    Status loaded = config_.clusterFile.empty() ? connect() : loadClusterFile();
    if (!loaded.isOk()) return fail(loaded.reason());
    wire();
    stop_.installSignalHandlers();
    stop_.installReloadHandler();
    if (int code = start(); code != 0) return code;
    announce();
    runPeriodically(stop_, kHousekeepingPeriod, [this] { housekeep(); });
    shutdown();
    return 0;
  }

 private:
  Status loadClusterFile() {
    auto cluster = config::loadClusterFile(config_.clusterFile, config_.clusterNamespace);
    if (!cluster) return Status::error("cannot load cluster file:\n" + cluster.error());
    for (const auto& note : cluster->notes) spdlog::info("{}", note);
    mirror_.setQuotaConfig(cluster->quota);
    for (auto& node : cluster->nodes) mirror_.upsertNode(std::move(node));
    for (auto& pod : cluster->pods) mirror_.upsertPod(std::move(pod));
    cluster = Result<config::ClusterObjects>::failure("");  // the parsed copy is no longer needed
    // Parsing a large file leaves hundreds of MiB of freed YAML nodes in glibc's arenas; hand
    // them back so resident memory reflects what the service holds (bench/RESULTS.md).
    malloc_trim(0);
    source_ = "cluster file " + config_.clusterFile;
    return Status::ok();
  }

  Status connect() {
    auto created = KubeSource::create(config_.kube, mirror_, clock_);
    if (!created) return Status::error(created.error());
    kube_ = std::move(created.value());
    source_ = "API server " + kube_->server() + " (namespace " + kube_->ns() + ")";
    return Status::ok();
  }

  // The webhook service on its port (memory or API server), metrics over both.
  void wire() {
    KubeSource* kube = kube_.get();
    state::Binder& binder = kube ? kube->binder() : memoryBinder_;
    service_ = std::make_unique<api::ExtenderService>(mirror_, *scorer_, binder, [this, kube] {
      Status ready = kube ? kube->ready() : Status::ok();
      return ready.isOk() ? tlsReadiness(server_->tlsState()) : ready;
    });
    service_->setFilterMode(config_.filterMode);
    // Metrics read the published snapshot at scrape time; requests and rejections are counted as
    // they happen; the reclaim loop reports evictions with reclaimEvicted().
    metrics_ = std::make_unique<metrics::Metrics>([this] { return mirror_.snapshot(); });
    if (kube || config_.server.tls.enabled()) {
      service_->setHealthDetails([this, kube] {
        std::vector<api::HealthDetail> details;
        if (kube) details = kube->healthDetails();
        if (config_.server.tls.enabled()) details.push_back(tlsDetail(server_->tlsState()));
        return details;
      });
    }
    if (kube) {
      service_->setObserver(&kube->decisions());
      service_->setDecisionGate([kube] { return kube->consistent(); });
      metrics_->setResourceCounters([kube] { return kube->feedCounters(); });
      metrics_->setQuotaHealth([kube] { return kube->quotaHealthy(); });
    }
    requestObserver_ = std::make_unique<MetricsRequestObserver>(*metrics_);
    service_->setRequestObserver(requestObserver_.get());
    server_ = std::make_unique<api::ExtenderServer>(*service_, config_.server);
    // The server stops (its io threads joined) before kube_ does, and kube_->stop() closes the
    // Bindings' connections on its io_contexts before the server is destroyed.
    if (kube) kube->bindOn(server_->contexts());
    metrics_->setWebhookEvents([server = server_.get()] { return webhookEvents(server->stats()); });
    if (config_.server.tls.enabled()) {
      metrics_->setTlsStatus([server = server_.get()] { return tlsStatus(server->tlsState()); });
    }
  }

  // Starts the threads; 0, or the exit code when a part cannot start.
  int start() {
    if (kube_) kube_->start();
    if (Status started = server_->start(); !started.isOk()) {
      if (kube_) kube_->stop();
      return fail(started.reason());
    }
    // The reclaim loop: in memory for a cluster file, through the Eviction API (leader only) else.
    reclaim_ = std::make_unique<ReclaimRunner>(mirror_, config_.reclaim, clock_, kube_.get());
    reclaim_->setEvictionHook(
        [this](const std::string& queue) { metrics_->reclaimEvicted(queue); });
    reclaim_->start();
    // The consolidation loop (off unless --consolidate): the same evictor choice as reclaim.
    consolidate_ =
        std::make_unique<ConsolidationRunner>(mirror_, config_.consolidate, clock_, kube_.get());
    consolidate_->setHooks({[this] { metrics_->consolidationMoved(); },
                            [this](int pods) { metrics_->setWaitingOnFragmentation(pods); }});
    consolidate_->start();
    if (config_.metricsEnabled()) {
      auto served = metrics::MetricsServer::start(*metrics_, config_.metricsListen);
      if (!served) {
        server_->stop();
        if (kube_) kube_->stop();
        return fail("--metrics-listen: " + served.error(), 2);
      }
      metricsServer_ = std::move(served.value());
    }
    return 0;
  }

  void announce() const {
    auto snap = mirror_.snapshot();
    const std::string url = std::string(server_->tls() ? "https://" : "http://") +
                            urlHost(config_.server.listen) + ":" + std::to_string(server_->port());
    const std::string metricsUrl = metricsServer_
                                       ? "http://" + urlHost(config_.metricsListen) + ":" +
                                             std::to_string(metricsServer_->port()) + "/metrics"
                                       : "";
    if (kube_) {
      // Nothing is listed yet: say what gpufair waits for; KubeSource::tick() says what it found.
      spdlog::info(
          "{}: waiting for the first lists of nodes, pods and quota ConfigMaps (until "
          "then the webhooks refuse every node and kube-scheduler retries); scorer {}, "
          "reclaim {}",
          source_, scorer_->name(), reclaimModeName(config_.reclaim));
    } else {
      spdlog::info("{}: {} nodes, {} GPUs ({} free), {} queues, scorer {}, reclaim {}", source_,
                   snap->nodes().size(), formatGpus(snap->capacity()), formatGpus(snap->free()),
                   snap->queues().size(), scorer_->name(), reclaimModeName(config_.reclaim));
    }
    spdlog::info("consolidation {}", consolidationModeName(config_.consolidate));
    spdlog::info("serving the extender webhooks on {}; metrics {}", url,
                 metricsServer_ ? "on " + metricsUrl : "off");
    spdlog::default_logger()->flush();  // whoever waits for this line reads it now
    if (config_.logFormat != LogFormat::kText) return;
    std::cout << "gpufair is serving the extender webhooks on " << url << "\n"
              << (metricsServer_ ? "  and Prometheus metrics on " + metricsUrl + "\n" : "")
              << tryCommands(config_.server, server_->tlsState(), urlHost(config_.server.listen),
                             server_->port())
              << "Press Ctrl-C to stop." << std::endl;
  }

  void housekeep() {
    if (stop_.takeReloadRequest()) {
      if (!config_.server.tls.enabled()) {
        spdlog::info("SIGHUP: nothing to re-read (no TLS files)");
      } else if (Status reloaded = server_->reloadTls(); reloaded.isOk()) {
        spdlog::info("SIGHUP: TLS files re-read; serving certificate serial {}",
                     server_->tlsState().serial);
      } else {
        spdlog::warn("SIGHUP: the TLS files are refused, certificate serial {} stays: {}",
                     server_->tlsState().serial, reloaded.reason());
      }
    }
    if (std::size_t n = mirror_.expire(); n > 0) {
      spdlog::info("forgot {} expired pods or reservations", n);
    }
    if (kube_) kube_->tick();
  }

  void shutdown() {
    spdlog::info("stopping: finishing requests in flight");
    reclaim_->stop();  // no eviction starts after this; the round in progress finishes
    if (consolidate_) consolidate_->stop();
    metricsServer_.reset();
    server_->stop();
    if (kube_) kube_->stop();  // releases the Lease so another replica takes over at once
  }

  const ServeConfig& config_;
  const ClockPtr clock_ = std::make_shared<SystemClock>();
  const std::shared_ptr<const policy::Scorer> scorer_;
  state::Mirror mirror_;
  api::MemoryBinder memoryBinder_;
  std::unique_ptr<KubeSource> kube_;
  std::string source_;
  std::unique_ptr<api::ExtenderService> service_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<MetricsRequestObserver> requestObserver_;
  std::unique_ptr<api::ExtenderServer> server_;
  std::unique_ptr<ReclaimRunner> reclaim_;
  std::unique_ptr<ConsolidationRunner> consolidate_;
  std::unique_ptr<metrics::MetricsServer> metricsServer_;
  StopSignal stop_;
};

}  // namespace

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

int runServeConfig(const ServeConfig& config) {
  ServeRun run(config);
  return run.run();
}

}  // namespace gpufair::app
