#include "hindsight_bins.h"

#include <algorithm>
#include <memory>
#include <tuple>

#include "gpufair/policy/snapshot.h"

namespace gpufair::sim::detail {

std::vector<Bin> initialBins(const Scenario& scenario) {
  std::vector<std::vector<policy::PodPtr>> on(scenario.nodes.size());
  for (const auto& pod : scenario.running) {
    for (std::size_t i = 0; i < scenario.nodes.size(); ++i) {
      if (scenario.nodes[i].name == pod.nodeName) {
        on[i].push_back(std::make_shared<const policy::Pod>(pod));
        break;
      }
    }
  }
  std::vector<Bin> bins;
  bins.reserve(scenario.nodes.size());
  for (std::size_t i = 0; i < scenario.nodes.size(); ++i) {
    const policy::NodeState state(scenario.nodes[i], on[i], 0);
    Bin b{&scenario.nodes[i], {}, state.cpuFree(), state.memoryFree(), 0};
    for (int g = 0; g < state.gpuCount(); ++g) {
      b.gpuFree.push_back(state.gpuFree(g));
      b.free += state.gpuFree(g);
    }
    bins.push_back(std::move(b));
  }
  return bins;
}

int fitGpu(const Bin& b, const policy::Pod& pod) {
  if (pod.cpuMilli > b.cpu || pod.memoryBytes > b.memory || pod.gpus > b.free) return -1;
  if (pod.gpus > 0 && !pod.allowsModel(b.node->gpuModel)) return -1;
  if (pod.isFractional()) {
    int best = -1;
    for (std::size_t g = 0; g < b.gpuFree.size(); ++g) {
      if (b.gpuFree[g] >= pod.gpuShare && (best < 0 || b.gpuFree[g] < b.gpuFree[best]))
        best = static_cast<int>(g);
    }
    return best;
  }
  const int need = pod.gpuCount();
  int whole = 0;
  for (MilliGpu f : b.gpuFree) whole += f == kMilliPerGpu ? 1 : 0;
  return whole >= need ? 0 : -1;
}

std::uint64_t take(Bin& b, const policy::Pod& pod, int gpu) {
  b.cpu -= pod.cpuMilli;
  b.memory -= pod.memoryBytes;
  b.free -= pod.gpus;
  if (pod.isFractional()) {
    b.gpuFree[static_cast<std::size_t>(gpu)] -= pod.gpuShare;
    return std::uint64_t{1} << gpu;
  }
  std::uint64_t taken = 0;
  int left = pod.gpuCount();
  for (std::size_t g = 0; g < b.gpuFree.size() && left > 0; ++g) {
    if (b.gpuFree[g] == kMilliPerGpu) {
      b.gpuFree[g] = 0;
      taken |= std::uint64_t{1} << g;
      --left;
    }
  }
  return taken;
}

namespace {

// Adds (sign +1) or removes (-1) what `pod` holds on the GPUs `gpus` of `b`.
void account(Bin& b, const policy::Pod& pod, std::uint64_t gpus, std::int64_t sign) {
  b.cpu += sign * pod.cpuMilli;
  b.memory += sign * pod.memoryBytes;
  b.free += sign * pod.gpus;
  for (std::size_t g = 0; g < b.gpuFree.size(); ++g) {
    if ((gpus >> g & 1) == 0) continue;
    b.gpuFree[g] += sign * (pod.isFractional() ? pod.gpuShare : kMilliPerGpu);
  }
}

}  // namespace

void give(Bin& b, const policy::Pod& pod, std::uint64_t gpus) {
  account(b, pod, gpus, +1);
}

MilliGpu planOfReplay(const Scenario& scenario, const ReplayResult& replay,
                      std::span<const std::size_t> order, std::vector<Bin>& bins,
                      std::vector<std::vector<Placed>>& on, std::vector<std::size_t>& failed) {
  on.assign(bins.size(), {});
  MilliGpu placed = 0;
  // Fractional pods first, on the GPUs the replay gave them; whole GPUs are interchangeable, so
  // the other pods then take any fully free ones.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t k = 0; k < order.size() && k < replay.placements.size(); ++k) {
      const policy::Pod& pod = scenario.templates[order[k]];
      if (pod.isFractional() != (pass == 0)) continue;
      const int node = replay.placements[k];
      if (node < 0) {
        failed.push_back(k);
        continue;
      }
      Bin& b = bins[static_cast<std::size_t>(node)];
      const int gpu = pod.isFractional() ? replay.gpuIndexes[k] : 0;
      on[static_cast<std::size_t>(node)].push_back({k, take(b, pod, gpu)});
      placed += pod.gpus;
    }
  }
  std::sort(failed.begin(), failed.end());
  return placed;
}

namespace {

// `failed`, largest GPU request first (then CPU), arrival order among equals.
void sortLargestFirst(const Scenario& scenario, std::span<const std::size_t> order,
                      std::vector<std::size_t>& failed) {
  std::stable_sort(failed.begin(), failed.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = scenario.templates[order[a]];
    const auto& y = scenario.templates[order[b]];
    return std::tuple(x.gpus, x.cpuMilli) > std::tuple(y.gpus, y.cpuMilli);
  });
}

// A bin with room for template t, or bins.size(); `none[t]` remembers templates found to fit
// nowhere since the plan last changed (conservative: a move may then be missed, never made wrong).
std::size_t hostFor(const Scenario& scenario, const std::vector<Bin>& bins, std::size_t t,
                    std::vector<char>& none) {
  if (none[t]) return bins.size();
  const policy::Pod& pod = scenario.templates[t];
  for (std::size_t m = 0; m < bins.size(); ++m) {
    if (fitGpu(bins[m], pod) >= 0) return m;
  }
  none[t] = 1;
  return bins.size();
}

// Places the pod at position f on bin n after moving one of n's pods elsewhere; false if no pod of
// n works.
bool placeByMovingOne(const Scenario& scenario, std::span<const std::size_t> order,
                      std::vector<Bin>& bins, std::vector<std::vector<Placed>>& on, std::size_t n,
                      std::size_t f, std::vector<char>& none) {
  const policy::Pod& pod = scenario.templates[order[f]];
  Bin& b = bins[n];
  for (std::size_t j = 0; j < on[n].size(); ++j) {
    const Placed q = on[n][j];
    const policy::Pod& moved = scenario.templates[order[q.pod]];
    give(b, moved, q.gpus);
    const int gpu = fitGpu(b, pod);
    if (gpu >= 0) {
      const std::uint64_t taken = take(b, pod, gpu);
      const std::size_t m = hostFor(scenario, bins, order[q.pod], none);
      if (m < bins.size()) {
        on[n][j] = {f, taken};
        on[m].push_back({q.pod, take(bins[m], moved, fitGpu(bins[m], moved))});
        return true;
      }
      give(b, pod, taken);
    }
    account(b, moved, q.gpus, -1);  // back on the GPUs it had
  }
  return false;
}

}  // namespace

namespace {

// Tries `place` on each failed pod, largest first; keeps in `failed` those it could not place and
// returns the GPUs it placed. `none` is a scratch mark of pods already moved, all clear on each
// call of `place` (a `place` that marks pods clears them before it returns true).
template <typename Place>
MilliGpu placeEachLargestFirst(const Scenario& scenario, std::span<const std::size_t> order,
                               std::vector<std::size_t>& failed, Place place) {
  sortLargestFirst(scenario, order, failed);
  std::vector<char> none(scenario.templates.size(), 0);
  std::vector<std::size_t> left;
  MilliGpu gained = 0;
  for (std::size_t f : failed) {
    const policy::Pod& pod = scenario.templates[order[f]];
    if (!place(f, pod, none)) {
      left.push_back(f);
      continue;
    }
    gained += pod.gpus;
  }
  failed = std::move(left);
  return gained;
}

}  // namespace

MilliGpu repairPlan(const Scenario& scenario, std::span<const std::size_t> order,
                    std::vector<Bin>& bins, std::vector<std::vector<Placed>>& on,
                    std::vector<std::size_t>& failed) {
  return placeEachLargestFirst(
      scenario, order, failed, [&](std::size_t f, const policy::Pod& pod, std::vector<char>& none) {
        for (std::size_t n = 0; n < bins.size() && pod.gpus > 0; ++n) {
          if (!pod.allowsModel(bins[n].node->gpuModel)) continue;
          if (static_cast<MilliGpu>(bins[n].gpuFree.size()) * kMilliPerGpu < pod.gpus) continue;
          if (placeByMovingOne(scenario, order, bins, on, n, f, none)) {
            std::fill(none.begin(), none.end(), 0);
            return true;
          }
        }
        return false;
      });
}

MilliGpu placeFailed(const Scenario& scenario, std::span<const std::size_t> order,
                     std::vector<Bin>& bins, std::vector<std::vector<Placed>>& on,
                     std::vector<std::size_t>& failed) {
  return placeEachLargestFirst(
      scenario, order, failed, [&](std::size_t f, const policy::Pod& pod, std::vector<char>& none) {
        const std::size_t m = pod.gpus > 0 ? hostFor(scenario, bins, order[f], none) : bins.size();
        if (m == bins.size()) return false;
        on[m].push_back({f, take(bins[m], pod, fitGpu(bins[m], pod))});
        return true;
      });
}

}  // namespace gpufair::sim::detail
