// The workload a replay submits, drawn from a trace's pod list as the "Beware of Fragmentation"
// experiments (Weng et al., ATC'23) do: pods are drawn until their total GPU request would pass
// `load` x the cluster's GPU capacity; the first pod that would pass it ends the list.
//
//   kInflate  (the paper's artifact, kubernetes-scheduler-simulator's workload tuning): every pod
//   of
//             the trace once, in a seeded random order, then pods drawn at random with replacement
//             appended until the load; a trace already above the load loses pods drawn at random.
//   kResample: pods drawn at random with replacement from the start, then shuffled.
//
// Deterministic: the same templates, capacity, options and seed give the same list on every
// platform (own RNG use; no std::*_distribution, whose output the standard leaves open).
// Thread-safety: free functions and a value-type RNG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpufair/common/quantity.h"
#include "gpufair/common/status.h"

namespace gpufair::sim {

enum class Sampling { kInflate, kResample };
const char* samplingName(Sampling mode);
std::optional<Sampling> parseSampling(std::string_view text);

// mt19937_64 with an unbiased bounded draw and Fisher-Yates shuffle of its own.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  std::size_t below(std::size_t n);  // uniform in [0, n); n > 0
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::uint64_t state_[312];
  std::size_t index_ = 312;
  void refill();
};

struct SampleOptions {
  double load = 1.3;  // total GPU request as a multiple of the capacity
  Sampling mode = Sampling::kInflate;
  std::uint64_t seed = 42;
};

// GPU requests (milli-GPUs) of the template pods -> indices into them, in submission order.
// Fails when no template asks for a GPU (the load could never be reached) or the capacity is 0.
Result<std::vector<std::size_t>> samplePods(std::span<const MilliGpu> requests, MilliGpu capacity,
                                            const SampleOptions& options);

// load x capacity in milli-GPUs, rounded down (robust to 1.3 x 6212000 = 8075600.000000001).
MilliGpu loadLimit(double load, MilliGpu capacity);

}  // namespace gpufair::sim
