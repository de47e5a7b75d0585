#include "time_load.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "gpufair/sim/time_replay.h"

namespace gpufair::sim {

BusyWindow busyWindow(std::span<const PodLifetime> lifetimes) {
  std::vector<std::int64_t> created;
  created.reserve(lifetimes.size());
  for (const PodLifetime& life : lifetimes) created.push_back(life.created);
  std::sort(created.begin(), created.end());
  const double last = static_cast<double>(created.size() - 1);
  return {created.front(), created[static_cast<std::size_t>(std::floor(0.05 * last))],
          created[static_cast<std::size_t>(std::ceil(0.95 * last))]};
}

namespace {

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

void inflateArrivals(Scenario& scenario, std::vector<PodLifetime>& lifetimes, double factor,
                     std::uint64_t seed) {
  const std::size_t n = std::min(scenario.templates.size(), lifetimes.size());
  if (n == 0 || !(factor > 1)) return;
  const auto extra = static_cast<std::size_t>(std::llround((factor - 1) * static_cast<double>(n)));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> draw(0, n - 1);
  scenario.templates.reserve(n + extra);
  lifetimes.reserve(n + extra);
  for (std::size_t k = 0; k < extra; ++k) {
    const std::size_t shape = draw(rng);
    const std::size_t when = draw(rng);
    policy::Pod pod = scenario.templates[shape];
    const std::string suffix = "-x" + std::to_string(k + 1);
    pod.name += suffix;
    pod.uid += suffix;
    const std::int64_t duration = lifetimes[shape].deleted - lifetimes[shape].created;
    const std::int64_t created = lifetimes[when].created;
    scenario.templates.push_back(std::move(pod));
    lifetimes.push_back({created, created + duration});
  }
}

}  // namespace gpufair::sim
