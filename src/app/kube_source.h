// Where `gpufair serve` gets its cluster from when it runs against a real API server: reflectors
// for Nodes, Pods and quota ConfigMaps feeding the Mirror, and Lease leader election so that only
// one replica writes. It owns the k8s implementations of the ports (state/ports.h) that the
// webhooks and the reclaim loop use: binder() posts Bindings, decisions() and the reclaim loop's
// Events go through events().
// Thread-safety: construct, start() and stop() from the main thread; the rest is called by the
// server's io threads and the main loop's tick().
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpufair/api/extender_service.h"
#include "gpufair/k8s/binder.h"
#include "gpufair/k8s/client.h"
#include "gpufair/k8s/decision_events.h"
#include "gpufair/k8s/events.h"
#include "gpufair/k8s/leader.h"
#include "gpufair/k8s/quota_watcher.h"
#include "gpufair/k8s/reflector.h"
#include "gpufair/k8s/requeuer.h"
#include "gpufair/k8s/sinks.h"
#include "gpufair/metrics/metrics.h"
#include "gpufair/state/mirror.h"

#include "serve_config.h"  // KubeSettings

namespace gpufair::app {

class KubeSource final {
 public:
  // Connects nothing yet; fails on unusable settings (no kubeconfig, bad certificates, ...).
  static Result<std::unique_ptr<KubeSource>> create(const KubeSettings& settings,
                                                    state::Mirror& mirror, ClockPtr clock);
  ~KubeSource();
  KubeSource(const KubeSource&) = delete;
  KubeSource& operator=(const KubeSource&) = delete;

  void start();  // reflector and leader-election threads
  void stop();   // stops them, releases the Lease, flushes Events
  // ~every second: says what the first complete lists found, requeues the pods parked while gpufair
  // could not decide (k8s::Requeuer), retries label patches, removes stale over-quota labels.
  void tick();
  Status ready() const;
  // Whether decisions may be made: ok once every first list (nodes, pods, quota ConfigMaps) is
  // complete and no relist is under way; otherwise what it waits for. ExtenderService's gate.
  Status consistent() const;
  // For /readyz: the quota config in force (a rejected change is reported here, with its errors)
  // and leader election.
  std::vector<api::HealthDetail> healthDetails() const;
  // Whether the quota ConfigMaps as they are now are in force (for metrics).
  bool quotaHealthy() const;
  const std::string& ns() const { return ns_; }
  std::string server() const { return client_->server(); }
  bool isLeader() const;
  // What each reflector has done so far, by resource ("nodes", "pods", "configmaps"); for metrics.
  std::vector<metrics::ResourceCounters> feedCounters() const;
  // For the reclaim loop: the API client (evictions) and the Event recorder.
  k8s::KubeClientPtr client() const { return client_; }
  k8s::EventRecorder& events() { return *events_; }

  // The ports for the webhooks: POST a Binding (the watch confirms it); Events on the pod.
  state::Binder& binder() { return binder_; }
  state::DecisionObserver& decisions() { return decisions_; }
  // With --bind-mode=async: the Bindings are sent on the contexts' threads (the webhook server's,
  // each /bind's on its own session's), which must outlive stop(). Call before the server starts.
  void bindOn(const std::vector<boost::asio::io_context*>& contexts);

 private:
  KubeSource(const KubeSettings& settings, state::Mirror& mirror, ClockPtr clock,
             k8s::KubeClientPtr client, std::string ns);

  KubeSettings settings_;
  state::Mirror& mirror_;
  ClockPtr clock_;
  k8s::KubeClientPtr client_;
  std::string ns_;
  std::unique_ptr<k8s::LeaderElector> elector_;
  std::unique_ptr<k8s::EventRecorder> events_;
  k8s::DecisionEvents decisions_;
  k8s::KubeBinder binder_;
  k8s::OverQuotaLabeler labeler_;
  k8s::NodeSink nodeSink_;
  // The pods kube-scheduler failed to place: the pod sink writes, the requeuer reads.
  std::shared_ptr<k8s::SchedulingFailures> schedulingFailures_ =
      std::make_shared<k8s::SchedulingFailures>();
  k8s::PodSink podSink_;
  std::unique_ptr<k8s::QuotaWatcher> quotaWatcher_;
  std::vector<std::unique_ptr<k8s::Reflector>> reflectors_;
  std::vector<std::string> reflectorNames_;  // "nodes", "pods", "quota ConfigMaps"; for /readyz
  std::vector<std::string> resources_;       // "nodes", "pods", "configmaps"; for metrics
  std::vector<std::thread> threads_;
  k8s::Requeuer requeuer_;
  bool announced_ = false;  // the first complete view was logged; tick()'s thread only
  bool stopped_ = false;
};

}  // namespace gpufair::app
