#include "gpufair/sim/sampling.h"

#include <cmath>
#include <numeric>

namespace gpufair::sim {

const char* samplingName(Sampling mode) {
  return mode == Sampling::kInflate ? "inflate" : "resample";
}

std::optional<Sampling> parseSampling(std::string_view text) {
  if (text == "inflate") return Sampling::kInflate;
  if (text == "resample") return Sampling::kResample;
  return std::nullopt;
}

// MT19937-64 (Matsumoto & Nishimura), as std::mt19937_64 defines it.
Rng::Rng(std::uint64_t seed) {
  state_[0] = seed;
  for (std::size_t i = 1; i < 312; ++i) {
    state_[i] = 6364136223846793005ULL * (state_[i - 1] ^ (state_[i - 1] >> 62)) + i;
  }
}

void Rng::refill() {
  constexpr std::uint64_t kUpper = 0xFFFFFFFF80000000ULL;
  constexpr std::uint64_t kLower = 0x7FFFFFFFULL;
  constexpr std::uint64_t kMatrix = 0xB5026F5AA96619E9ULL;
  for (std::size_t i = 0; i < 312; ++i) {
    const std::uint64_t x = (state_[i] & kUpper) | (state_[(i + 1) % 312] & kLower);
    std::uint64_t xa = x >> 1;
    if (x & 1) xa ^= kMatrix;
    state_[i] = state_[(i + 156) % 312] ^ xa;
  }
  index_ = 0;
}

std::uint64_t Rng::next() {
  if (index_ >= 312) refill();
  std::uint64_t x = state_[index_++];
  x ^= (x >> 29) & 0x5555555555555555ULL;
  x ^= (x << 17) & 0x71D67FFFEDA60000ULL;
  x ^= (x << 37) & 0xFFF7EEE000000000ULL;
  x ^= x >> 43;
  return x;
}

std::size_t Rng::below(std::size_t n) {
  // Rejection sampling: draws above the largest multiple of n are redrawn, so no index is favoured.
  const std::uint64_t bound = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t x = next();
  while (x >= limit) x = next();
  return static_cast<std::size_t>(x % bound);
}

MilliGpu loadLimit(double load, MilliGpu capacity) {
  return static_cast<MilliGpu>(std::floor(load * static_cast<double>(capacity) + 1e-6));
}

Result<std::vector<std::size_t>> samplePods(std::span<const MilliGpu> requests, MilliGpu capacity,
                                            const SampleOptions& options) {
  using R = Result<std::vector<std::size_t>>;
  if (capacity <= 0) return R::failure("the cluster has no GPUs");
  if (!(options.load > 0)) return R::failure("the load must be above 0");
  const MilliGpu total = std::accumulate(requests.begin(), requests.end(), MilliGpu{0});
  if (total <= 0) return R::failure("no pod of the workload requests a GPU");

  const MilliGpu limit = loadLimit(options.load, capacity);
  Rng rng(options.seed);
  std::vector<std::size_t> order;
  MilliGpu sum = 0;
  if (options.mode == Sampling::kInflate) {
    order.resize(requests.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    rng.shuffle(order);
    sum = total;
    while (sum > limit && !order.empty()) {
      const std::size_t k = rng.below(order.size());
      sum -= requests[order[k]];
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (sum > limit) return order;  // unreachable: an empty list sums to 0
  }
  while (true) {
    const std::size_t i = rng.below(requests.size());
    if (sum + requests[i] > limit) break;
    sum += requests[i];
    order.push_back(i);
  }
  if (options.mode == Sampling::kResample) rng.shuffle(order);
  return order;
}

}  // namespace gpufair::sim
