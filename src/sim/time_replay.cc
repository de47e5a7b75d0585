#include "gpufair/sim/time_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "gpufair/common/labels.h"
#include "gpufair/policy/reservation.h"
#include "gpufair/sim/replay.h"

#include "time_load.h"

namespace gpufair::sim {
namespace {

// What makes two waiting pods fail alike on the same cluster.
using ShapeKey = std::tuple<MilliGpu, MilliGpu, std::vector<std::string>, std::int64_t,
                            std::int64_t, std::string>;

ShapeKey shapeOf(const policy::Pod& pod, const QuotaConfig& quota) {
  return {pod.gpus,     pod.gpuShare,    pod.gpuModels,
          pod.cpuMilli, pod.memoryBytes, queueFor(quota, pod.name)};
}

struct Departure {
  std::int64_t at;
  std::size_t pod;    // template index
  std::uint64_t run;  // which run of the pod (an evicted pod runs again)
  bool operator>(const Departure& o) const { return std::tie(at, pod) > std::tie(o.at, o.pod); }
};

double percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

class TimeReplayer {
 public:
  TimeReplayer(const Scenario& scenario, std::span<const PodLifetime> lifetimes,
               const TimeReplayOptions& options, std::shared_ptr<const policy::Scorer> scorer)
      : scenario_(scenario),
        lifetimes_(lifetimes),
        options_(options),
        cluster_(scenario, std::move(scorer), tieBreakOrder(scenario.nodes.size(), options.seed),
                 clusterOptions(options)),
        start_(scenario.templates.size(), -1),
        runs_(scenario.templates.size(), 0),
        createdAt_(scenario.templates.size(), 0),
        runStart_(scenario.templates.size(), 0),
        runUntil_(scenario.templates.size(), 0),
        left_(scenario.templates.size(), -1) {
    for (const policy::Pod& pod : scenario.running) allocated_ += pod.holdsGpus() ? pod.gpus : 0;
    arrivals_.resize(scenario.templates.size());
    for (std::size_t i = 0; i < arrivals_.size(); ++i) arrivals_[i] = i;
    std::int64_t first = INT64_MAX;
    for (const PodLifetime& life : lifetimes) first = std::min(first, life.created);
    const double speedup = options.arrivalSpeedup > 0 ? options.arrivalSpeedup : 1.0;
    speedup_ = speedup;
    arrivalAt_.resize(lifetimes.size());
    for (std::size_t i = 0; i < lifetimes.size(); ++i) {
      arrivalAt_[i] =
          first + std::llround(static_cast<double>(lifetimes[i].created - first) / speedup);
    }
    std::stable_sort(arrivals_.begin(), arrivals_.end(),
                     [&](std::size_t a, std::size_t b) { return arrivalAt_[a] < arrivalAt_[b]; });
    createdAt_ = arrivalAt_;
    for (std::size_t i = 0; i < scenario.templates.size(); ++i)
      uids_.emplace(scenario.templates[i].uid, i);
  }

  TimeReplayResult run() {
    TimeReplayResult out;
    out.capacity = scenario_.gpuCapacity();
    out.pods = arrivals_.size();
    if (arrivals_.empty()) return out;
    t0_ = arrivalAt_[arrivals_.front()];
    // Reported: the arrivals' window and as long again (the drain), or up to the last departure.
    std::int64_t last = t0_;
    for (std::size_t i : arrivals_) last = std::max(last, arrivalAt_[i] + durationOf(i));
    const BusyWindow busy = busyWindow(lifetimes_);
    windowFrom_ = busy.first + std::llround(static_cast<double>(busy.from - busy.first) / speedup_);
    windowEnd_ = busy.first + std::llround(static_cast<double>(busy.to - busy.first) / speedup_);
    const std::int64_t shown = std::min(last, windowEnd_ + (windowEnd_ - windowFrom_));
    const std::int64_t step =
        std::max<std::int64_t>(1, (shown - windowFrom_) / std::max(1, options_.samples));
    std::int64_t nextSample = windowFrom_, nextControl = t0_, now = t0_;
    std::size_t next = 0;
    while (next < arrivals_.size() || !departures_.empty()) {
      const std::int64_t arrival =
          next < arrivals_.size() ? arrivalAt_[arrivals_[next]] : INT64_MAX;
      const std::int64_t departure = departures_.empty() ? INT64_MAX : departures_.top().at;
      std::int64_t t = std::min(arrival, departure);
      if (options_.controller) t = std::min(t, nextControl);
      for (; nextSample <= std::min(t, shown); nextSample += step) sample(out, nextSample);
      if (std::min(t, windowEnd_) > std::max(now, windowFrom_))
        area_ += static_cast<double>(allocated_) *
                 static_cast<double>(std::min(t, windowEnd_) - std::max(now, windowFrom_));
      now = t;
      cluster_.setTime(Timestamp(std::chrono::seconds(t - t0_)));
      bool freed = leave(t);
      if (options_.controller && t >= nextControl) {
        if (!options_.controlWhileWaitingOnly || !waiting_.empty())
          freed = control(out, t) || freed;
        nextControl = t + std::max<std::int64_t>(1, options_.controllerPeriod);
      }
      if (freed) retry(t);
      for (; next < arrivals_.size() && arrivalAt_[arrivals_[next]] == t; ++next) {
        if (!offer(arrivals_[next], t)) waiting_.push_back(arrivals_[next]);
        if (options_.progress) options_.progress->fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (now <= shown) sample(out, now);
    out.span = now - t0_;
    out.window = windowEnd_ - windowFrom_;
    if (out.window > 0)
      out.meanAllocatedPercent =
          area_ / static_cast<double>(out.window) / static_cast<double>(out.capacity) * 100.0;
    out.waits = waitStats();
    restartStats(out);
    for (std::int64_t started : start_) out.placed += started >= 0 ? 1 : 0;
    return out;
  }

 private:
  static ServiceClusterOptions clusterOptions(const TimeReplayOptions& options) {
    ServiceClusterOptions o = options.cluster;
    o.mirror.seed = options.seed;
    return o;
  }

  std::int64_t durationOf(std::size_t i) const {
    return lifetimes_[i].deleted - lifetimes_[i].created;
  }

  std::string uidOf(std::size_t i) const {
    const std::string& uid = scenario_.templates[i].uid;
    return runs_[i] > 0 ? uid + "~" + std::to_string(runs_[i]) : uid;
  }

  bool movable(std::size_t i) const {
    const double share = std::clamp(options_.movableShare, 0.0, 1.0);
    const auto h = static_cast<double>(fnv1a("movable:" + scenario_.templates[i].name));
    return share >= 1 || h < share * 18446744073709551616.0;
  }

  // The pod offered for template i at t (see the header: with a controller, a Job's pod).
  policy::Pod podOf(std::size_t i, std::int64_t t) const {
    policy::Pod pod = scenario_.templates[i];
    if (options_.controller) {
      pod.controller = "job:" + pod.uid;
      pod.created = Timestamp(std::chrono::seconds(createdAt_[i] - t0_));
      pod.started = Timestamp(std::chrono::seconds(t - t0_));  // if it is placed now
      if (movable(i)) pod.labels[kMovableLabel] = "true";
    }
    if (runs_[i] > 0) {  // a pod evicted and recreated: a new pod of the same owner and queue
      if (const std::string queue = queueFor(cluster_.quota(), pod.name); !queue.empty())
        pod.labels[kQueueLabel] = queue;
      pod.uid = uidOf(i);
      pod.name += "-" + std::to_string(runs_[i]);
    }
    return pod;
  }

  // Schedules template i at t; true if it started.
  bool offer(std::size_t i, std::int64_t t) {
    const ServiceCluster::Placement placed = cluster_.schedule(podOf(i, t));
    if (placed.node < 0) return false;
    if (start_[i] < 0) start_[i] = t;
    if (runs_[i] > 0) restartWaits_.push_back(static_cast<double>(t - createdAt_[i]));
    allocated_ += scenario_.templates[i].gpus;
    ++running_;
    const std::int64_t runFor = runs_[i] > 0 && options_.resumeRemaining ? left_[i] : durationOf(i);
    runStart_[i] = t;
    runUntil_[i] = t + runFor;
    departures_.push({runUntil_[i], i, runs_[i]});
    return true;
  }

  // The pods due by t leave; true if any did.
  bool leave(std::int64_t t) {
    bool any = false;
    while (!departures_.empty() && departures_.top().at <= t) {
      const Departure d = departures_.top();
      departures_.pop();
      if (d.run != runs_[d.pod]) continue;  // evicted meanwhile
      cluster_.remove(uidOf(d.pod));
      allocated_ -= scenario_.templates[d.pod].gpus;
      --running_;
      any = true;
    }
    return any;
  }

  // Runs the controller; its evicted pods wait again. True if it freed anything.
  bool control(TimeReplayResult& out, std::int64_t t) {
    ControllerStep step = options_.controller(cluster_, t);
    out.moves += step.moves;
    out.evictions += step.evicted.size();
    for (const std::string& uid : step.evicted) {
      auto it = uids_.find(uid);
      if (it == uids_.end()) continue;
      const std::size_t i = it->second;
      uids_.erase(it);
      const MilliGpu gpus = scenario_.templates[i].gpus;
      allocated_ -= gpus;
      --running_;
      left_[i] = runUntil_[i] - t;
      if (!options_.resumeRemaining)
        lost_ += static_cast<double>(gpus) / 1000.0 * static_cast<double>(t - runStart_[i]);
      ++runs_[i];  // its departure is void; the recreated pod waits
      createdAt_[i] = t;
      uids_.emplace(uidOf(i), i);
      waiting_.push_back(i);
    }
    return !step.evicted.empty();
  }

  // Offers the waiting pods again, in arrival order; shapes that failed this round are skipped.
  void retry(std::int64_t t) {
    std::set<ShapeKey> failed;
    std::deque<std::size_t> still;
    const std::vector<policy::Reservation> held =
        options_.controller ? cluster_.mirror().reservations() : std::vector<policy::Reservation>{};
    for (std::size_t i : waiting_) {
      const policy::Pod& pod = scenario_.templates[i];
      ShapeKey key = shapeOf(pod, cluster_.quota());
      const bool holds = !held.empty() && policy::holdsAny(podOf(i, t), held);
      if ((!holds && failed.count(key)) || !offer(i, t)) {
        failed.insert(std::move(key));
        still.push_back(i);
      }
    }
    waiting_ = std::move(still);
  }

  void restartStats(TimeReplayResult& out) {
    std::sort(restartWaits_.begin(), restartWaits_.end());
    out.restartP50 = percentile(restartWaits_, 0.5);
    out.restartMax = restartWaits_.empty() ? 0 : restartWaits_.back();
    out.neverRestarted = out.evictions - restartWaits_.size();
    out.lostGpuSeconds = lost_;
  }

  void sample(TimeReplayResult& out, std::int64_t t) const {
    MilliGpu pending = 0;
    for (std::size_t i : waiting_) pending += scenario_.templates[i].gpus;
    out.samples.push_back({t - windowFrom_, allocated_, pending, running_, waiting_.size()});
  }

  std::vector<WaitStats> waitStats() const {
    std::map<std::string, std::vector<double>> waits;
    std::map<std::string, std::size_t> never;
    for (std::size_t i : arrivals_) {
      const std::string size = sizeClass(scenario_.templates[i]);
      if (start_[i] < 0) {
        ++never[size];
        waits[size];  // the class shows even if none of its pods started
        continue;
      }
      waits[size].push_back(static_cast<double>(start_[i] - arrivalAt_[i]));
    }
    std::vector<WaitStats> out;
    for (const char* size : {"share", "1", "2", "4", "8", "other", "none"}) {
      auto it = waits.find(size);
      if (it == waits.end()) continue;
      std::vector<double>& w = it->second;
      std::sort(w.begin(), w.end());
      WaitStats s;
      s.size = size;
      s.neverPlaced = never.count(size) ? never.at(size) : 0;
      s.pods = w.size() + s.neverPlaced;
      s.p50 = percentile(w, 0.5);
      s.p90 = percentile(w, 0.9);
      s.p99 = percentile(w, 0.99);
      s.max = w.empty() ? 0 : w.back();
      out.push_back(s);
    }
    return out;
  }

  const Scenario& scenario_;
  std::span<const PodLifetime> lifetimes_;
  const TimeReplayOptions& options_;
  ServiceCluster cluster_;
  std::vector<std::int64_t> arrivalAt_;  // per template: its creation time, sped up
  std::vector<std::size_t> arrivals_;    // template indices by arrival time
  std::vector<std::int64_t> start_;      // first start, -1: never started
  std::vector<std::uint64_t> runs_;      // evictions so far, per template
  std::vector<std::int64_t> createdAt_;  // per template: when its current pod was created
  std::vector<std::int64_t> runStart_;   // per template: when its current run started
  std::vector<std::int64_t> runUntil_;   // per template: when its current run ends
  std::vector<std::int64_t> left_;       // per evicted template: what was left of its run
  std::unordered_map<std::string, std::size_t> uids_;  // current pod uid -> template
  std::vector<double> restartWaits_;                   // seconds, per restart
  double lost_ = 0;                                    // GPU-seconds of work thrown away
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures_;
  std::deque<std::size_t> waiting_;  // in arrival order
  std::int64_t t0_ = 0;
  std::int64_t windowFrom_ = 0;  // the busy window (busyWindow), sped up
  std::int64_t windowEnd_ = 0;
  double speedup_ = 1;
  MilliGpu allocated_ = 0;
  std::size_t running_ = 0;
  double area_ = 0;  // milli-GPU seconds
};

}  // namespace

std::string sizeClass(const policy::Pod& pod) {
  if (pod.gpus == 0) return "none";
  if (pod.isFractional()) return "share";
  switch (pod.gpuCount()) {
    case 1:
      return "1";
    case 2:
      return "2";
    case 4:
      return "4";
    case 8:
      return "8";
    default:
      return "other";
  }
}

Result<TimeReplayResult> replayOverTime(const Scenario& scenario,
                                        std::span<const PodLifetime> lifetimes,
                                        const TimeReplayOptions& options) {
  using R = Result<TimeReplayResult>;
  if (lifetimes.size() != scenario.templates.size()) {
    return R::failure(scenario.source + ": " + std::to_string(lifetimes.size()) +
                      " lifetimes for " + std::to_string(scenario.templates.size()) + " pods");
  }
  std::shared_ptr<const policy::Scorer> scorer = policy::makeScorer(options.scorer);
  if (!scorer) return R::failure("unknown policy \"" + options.scorer + "\"");
  TimeReplayer replayer(scenario, lifetimes, options, std::move(scorer));
  return replayer.run();
}

}  // namespace gpufair::sim
