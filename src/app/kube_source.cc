#include "kube_source.h"

#include <spdlog/spdlog.h>

#include "gpufair/common/thread_name.h"

namespace gpufair::app {

Result<std::unique_ptr<KubeSource>> KubeSource::create(const KubeSettings& settings,
                                                       state::Mirror& mirror, ClockPtr clock) {
  using R = Result<std::unique_ptr<KubeSource>>;
  auto config = settings.kubeconfig.empty()
                    ? k8s::inClusterConfig()
                    : k8s::loadKubeconfig(settings.kubeconfig, settings.context);
  if (!config) {
    return R::failure((settings.kubeconfig.empty()
                           ? "not running in a cluster and no --kubeconfig given: "
                           : "kubeconfig " + settings.kubeconfig + ": ") +
                      config.error());
  }
  auto client = k8s::makeKubeClient(*config);
  if (!client) return R::failure("cannot set up the Kubernetes client: " + client.error());
  std::string ns =
      !settings.ns.empty()
          ? settings.ns
          : (!config->ns.empty() && settings.kubeconfig.empty() ? config->ns : "gpufair-system");
  return std::unique_ptr<KubeSource>(
      new KubeSource(settings, mirror, std::move(clock), *client, std::move(ns)));
}

namespace {

std::unique_ptr<k8s::LeaderElector> makeElector(const KubeSettings& settings,
                                                const k8s::KubeClientPtr& client,
                                                const ClockPtr& clock, const std::string& ns) {
  if (!settings.leaderElect) return nullptr;
  k8s::LeaderElectorOptions options;
  options.ns = ns;
  options.name = settings.leaseName;
  if (!settings.followLeaseName.empty()) {
    // kube-scheduler's identity is "HOSTNAME_uuid"; in one pod both share the hostname.
    options.ns = settings.followLeaseNs;
    options.name = settings.followLeaseName;
    options.followHolderPrefix = k8s::hostName() + "_";
  }
  options.leaseDuration = settings.leaseDuration;
  options.renewDeadline = settings.renewDeadline;
  options.retryPeriod = settings.retryPeriod;
  options.onStartedLeading = [] { spdlog::info("leader election: this replica now leads"); };
  options.onStoppedLeading = [] { spdlog::warn("leader election: this replica stopped leading"); };
  return std::make_unique<k8s::LeaderElector>(client, clock, options);
}

k8s::ReflectorOptions reflectorFor(std::string name, std::string path, std::string fields = "") {
  k8s::ReflectorOptions options;
  options.name = std::move(name);
  options.listPath = std::move(path);
  options.fieldSelector = std::move(fields);
  return options;
}

}  // namespace

KubeSource::KubeSource(const KubeSettings& settings, state::Mirror& mirror, ClockPtr clock,
                       k8s::KubeClientPtr client, std::string ns)
    : settings_(settings),
      mirror_(mirror),
      clock_(std::move(clock)),
      client_(std::move(client)),
      ns_(std::move(ns)),
      elector_(makeElector(settings_, client_, clock_, ns_)),
      events_(std::make_unique<k8s::EventRecorder>(client_, clock_,
                                                   [this] {
                                                     k8s::EventRecorderOptions options;
                                                     options.isLeader = [this] {
                                                       return isLeader();
                                                     };
                                                     return options;
                                                   }())),
      decisions_(*events_),
      binder_(client_,
              [&] {
                k8s::KubeBinderOptions options;
                options.bindThreads = settings.bindThreads;
                return options;
              }()),
      labeler_(client_, clock_),
      nodeSink_(mirror),
      podSink_(mirror,
               [this] {
                 k8s::PodSinkOptions options;
                 options.failures = schedulingFailures_;
                 return options;
               }()),
      quotaWatcher_(std::make_unique<k8s::QuotaWatcher>(mirror, ns_, events_.get())),
      requeuer_(client_, clock_, [&] {
        k8s::RequeuerOptions options;
        options.schedulerName = settings.schedulerName;
        options.failures = schedulingFailures_;
        return options;
      }()) {
  auto add = [&](std::string what, k8s::ReflectorOptions options, k8s::ReflectorSink& sink) {
    reflectors_.push_back(
        std::make_unique<k8s::Reflector>(client_, std::move(options), sink, clock_));
    resources_.push_back(what == "quota ConfigMaps" ? "configmaps" : what);
    reflectorNames_.push_back(std::move(what));
  };
  add("nodes", reflectorFor("nodes", "/api/v1/nodes"), nodeSink_);
  // Every pod that is not finished, bound or not and whatever its scheduler: bound pods hold GPUs,
  // unbound ones are their queue's demand. kube-scheduler's own informer uses the same selector.
  add("pods", reflectorFor("pods", "/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed"),
      podSink_);
  add("quota ConfigMaps", quotaWatcher_->reflectorOptions(), *quotaWatcher_);
}

void KubeSource::bindOn(const std::vector<boost::asio::io_context*>& contexts) {
  if (!settings_.bindAsync) return;
  if (!binder_.bindOn(contexts)) {
    spdlog::warn("the API client cannot send asynchronously: Bindings go on bind threads");
  }
}

std::vector<metrics::ResourceCounters> KubeSource::feedCounters() const {
  std::vector<metrics::ResourceCounters> counters;
  for (std::size_t i = 0; i < reflectors_.size(); ++i) {
    const k8s::ReflectorStats stats = reflectors_[i]->stats();
    counters.push_back({resources_[i], stats.events, stats.watchRestarts, stats.lists, stats.gone});
  }
  return counters;
}

KubeSource::~KubeSource() {
  stop();
}

void KubeSource::start() {
  for (std::size_t i = 0; i < reflectors_.size(); ++i) {
    threads_.emplace_back([this, i] {
      nameThisThread("watch-" + resources_[i]);
      reflectors_[i]->run();
    });
  }
  if (elector_) elector_->start();
}

void KubeSource::stop() {
  if (stopped_) return;
  stopped_ = true;
  binder_.stop();  // the over-quota labels bind() queued are written first
  for (auto& r : reflectors_) r->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  if (elector_) {
    elector_->stop();
    if (Status released = elector_->release(); !released.isOk()) {
      spdlog::warn("could not release the leader Lease: {}", released.reason());
    }
  }
  if (events_) {
    events_->waitIdle(std::chrono::seconds{2});
    events_->stop();
  }
}

bool KubeSource::isLeader() const {
  return !elector_ || elector_->isLeader();
}

void KubeSource::tick() {
  const policy::SnapshotPtr snapshot = mirror_.snapshot();
  const bool complete = consistent().isOk();
  if (complete && !announced_) {
    announced_ = true;
    std::size_t pods = snapshot->pending().size();
    for (const auto& node : snapshot->nodes()) pods += node->pods().size();
    spdlog::info(
        "first lists complete: {} nodes, {} GPUs ({} free), {} pods using or wanting "
        "GPUs, {} queues; deciding from now on",
        snapshot->nodes().size(), formatGpus(snapshot->capacity()), formatGpus(snapshot->free()),
        pods, snapshot->queues().size());
  }
  const bool leader = isLeader();
  requeuer_.tick(complete, leader, *snapshot);
  binder_.retryLabels();
  labeler_.reconcile(*snapshot, leader);
}

Status KubeSource::ready() const {
  const Timestamp now = clock_->now();
  for (std::size_t i = 0; i < reflectors_.size(); ++i) {
    if (!reflectors_[i]->synced()) {
      return Status::error("waiting for the first list of " + reflectorNames_[i]);
    }
    if (now - reflectors_[i]->lastHealthy() > settings_.staleAfter) {
      return Status::error("the watch of " + reflectorNames_[i] + " has been down for more than " +
                           std::to_string(settings_.staleAfter.count()) + "s");
    }
  }
  return Status::ok();
}

Status KubeSource::consistent() const {
  for (std::size_t i = 0; i < reflectors_.size(); ++i) {
    if (!reflectors_[i]->synced()) {
      return Status::error("waiting for the first list of " + reflectorNames_[i]);
    }
    if (!reflectors_[i]->consistent()) {
      return Status::error("listing " + reflectorNames_[i] + " again after its watch expired");
    }
  }
  return Status::ok();
}

bool KubeSource::quotaHealthy() const {
  return quotaWatcher_ == nullptr || quotaWatcher_->healthy();
}

std::vector<api::HealthDetail> KubeSource::healthDetails() const {
  std::vector<api::HealthDetail> details;
  if (quotaWatcher_ != nullptr) {
    const bool healthy = quotaWatcher_->healthy();
    details.push_back({"quota-config", healthy,
                       healthy ? "the quota ConfigMaps in " + ns_ + " are in force"
                               : "a quota change was rejected; the last good config stays in "
                                 "force: " +
                                     quotaWatcher_->lastError()});
  }
  if (elector_ != nullptr) {
    const std::string leader = elector_->leader();
    details.push_back({"leader-election", true,
                       isLeader() ? "this replica leads (writes labels, events, evictions)"
                                  : "standby; leader: " + (leader.empty() ? "none" : leader)});
  }
  return details;
}

}  // namespace gpufair::app
