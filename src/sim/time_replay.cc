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

#include "gpufair/sim/replay.h"

namespace gpufair::sim {
namespace {

// The creation times that bound the busy window, and the first of all.
struct BusyWindow {
  std::int64_t first, from, to;
};
BusyWindow busyWindow(std::span<const PodLifetime> lifetimes);

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
        runs_(scenario.templates.size(), 0) {
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

  policy::Pod podOf(std::size_t i) const {
    policy::Pod pod = scenario_.templates[i];
    if (runs_[i] > 0) {  // a pod evicted and recreated: a new pod of the same owner
      pod.uid += "~" + std::to_string(runs_[i]);
      pod.name += "-" + std::to_string(runs_[i]);
    }
    return pod;
  }

  // Schedules template i at t; true if it started.
  bool offer(std::size_t i, std::int64_t t) {
    const ServiceCluster::Placement placed = cluster_.schedule(podOf(i));
    if (placed.node < 0) return false;
    if (start_[i] < 0) start_[i] = t;
    allocated_ += scenario_.templates[i].gpus;
    ++running_;
    departures_.push({t + durationOf(i), i, runs_[i]});
    return true;
  }

  // The pods due by t leave; true if any did.
  bool leave(std::int64_t t) {
    bool any = false;
    while (!departures_.empty() && departures_.top().at <= t) {
      const Departure d = departures_.top();
      departures_.pop();
      if (d.run != runs_[d.pod]) continue;  // evicted meanwhile
      cluster_.remove(podOf(d.pod).uid);
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
      for (std::size_t i = 0; i < scenario_.templates.size(); ++i) {
        if (podOf(i).uid != uid) continue;
        allocated_ -= scenario_.templates[i].gpus;
        --running_;
        ++runs_[i];  // its departure is void; the recreated pod waits
        waiting_.push_back(i);
        break;
      }
    }
    return !step.evicted.empty();
  }

  // Offers the waiting pods again, in arrival order; shapes that failed this round are skipped.
  void retry(std::int64_t t) {
    std::set<ShapeKey> failed;
    std::deque<std::size_t> still;
    for (std::size_t i : waiting_) {
      const policy::Pod& pod = scenario_.templates[i];
      ShapeKey key = shapeOf(pod, cluster_.quota());
      if (failed.count(key) || !offer(i, t)) {
        failed.insert(std::move(key));
        still.push_back(i);
      }
    }
    waiting_ = std::move(still);
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

namespace {

// Where the arrivals are dense: the creation times of the 5th and 95th percentile (the whole span
// for a handful of pods), so that a few early or late pods do not stretch the window.
BusyWindow busyWindow(std::span<const PodLifetime> lifetimes) {
  std::vector<std::int64_t> created;
  created.reserve(lifetimes.size());
  for (const PodLifetime& life : lifetimes) created.push_back(life.created);
  std::sort(created.begin(), created.end());
  const double last = static_cast<double>(created.size() - 1);
  return {created.front(), created[static_cast<std::size_t>(std::floor(0.05 * last))],
          created[static_cast<std::size_t>(std::ceil(0.95 * last))]};
}

// The mean GPU demand over the busy window when arrivals come `speedup` times faster, in
// milli-GPUs: each pod counts for the part of its duration inside the window.
double windowDemand(const Scenario& scenario, std::span<const PodLifetime> lifetimes,
                    const BusyWindow& w, double speedup) {
  auto at = [&](std::int64_t t) { return static_cast<double>(t - w.first) / speedup; };
  const double from = at(w.from), to = at(w.to);
  double gpuSeconds = 0;
  for (std::size_t i = 0; i < lifetimes.size(); ++i) {
    const double start = at(lifetimes[i].created);
    const double end = start + static_cast<double>(lifetimes[i].deleted - lifetimes[i].created);
    const double inside = std::min(end, to) - std::max(start, from);
    gpuSeconds += static_cast<double>(scenario.templates[i].gpus) * std::max(0.0, inside);
  }
  return gpuSeconds / (to - from);
}

}  // namespace

double offeredLoadAt(const Scenario& scenario, std::span<const PodLifetime> lifetimes,
                     double speedup) {
  if (lifetimes.size() != scenario.templates.size() || lifetimes.empty() || !(speedup > 0))
    return 0;
  const BusyWindow w = busyWindow(lifetimes);
  const double capacity = static_cast<double>(scenario.gpuCapacity());
  if (w.to <= w.from || capacity <= 0) return 0;
  return windowDemand(scenario, lifetimes, w, speedup) / capacity;
}

double arrivalSpeedupFor(const Scenario& scenario, std::span<const PodLifetime> lifetimes,
                         double load) {
  if (lifetimes.size() != scenario.templates.size() || lifetimes.empty() || !(load > 0)) return 1;
  const BusyWindow w = busyWindow(lifetimes);
  // A hair below the load: sums of doubles reach it only approximately.
  const double target = load * static_cast<double>(scenario.gpuCapacity()) * (1 - 1e-9);
  if (w.to <= w.from || target <= 0) return 1;
  // The demand grows with the speedup: bisect on its logarithm, from the trace's own pace up.
  double lo = 1, hi = 1e7;
  if (windowDemand(scenario, lifetimes, w, lo) >= target) return 1;
  if (windowDemand(scenario, lifetimes, w, hi) < target) return hi;
  for (int k = 0; k < 60; ++k) {
    const double mid = std::sqrt(lo * hi);
    (windowDemand(scenario, lifetimes, w, mid) < target ? lo : hi) = mid;
  }
  return hi;
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
