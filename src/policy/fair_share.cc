#include "gpufair/policy/fair_share.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {
namespace {

using Units = std::int64_t;

// Water-fills `amount` units among entries with weight > 0, each capped by its room: every entry
// gets weight * level for one common level, or its room if that is less. Adds the result to
// `given`. Proportional parts are rounded down and the units left over go one each by largest
// remainder, ties by name, then by index.
void waterFill(Units amount, std::span<const long double> weights, std::span<const Units> rooms,
               std::span<const std::string_view> names, std::vector<Units>& given) {
  std::vector<std::size_t> active;
  Units wanted = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0 && rooms[i] > 0) {
      active.push_back(i);
      wanted += rooms[i];
    }
  }
  if (amount <= 0 || active.empty()) return;
  if (wanted <= amount) {
    for (std::size_t i : active) given[i] += rooms[i];
    return;
  }
  // Entries saturate in the order of room / weight (the level at which each is full).
  struct Level {
    long double room;
    long double weight;
    std::size_t index;
  };
  std::vector<Level> levels;
  levels.reserve(active.size());
  for (std::size_t i : active)
    levels.push_back({static_cast<long double>(rooms[i]), weights[i], i});
  std::sort(levels.begin(), levels.end(), [](const Level& a, const Level& b) {
    const long double la = a.room * b.weight;
    const long double lb = b.room * a.weight;
    return la != lb ? la < lb : a.index < b.index;
  });
  long double totalWeight = 0;
  for (const Level& l : levels) totalWeight += l.weight;
  Units remaining = amount;
  std::size_t first = 0;
  for (; first < levels.size(); ++first) {
    const Level& l = levels[first];
    // Full at this level: room <= weight * remaining / totalWeight.
    if (l.room * totalWeight > l.weight * static_cast<long double>(remaining)) break;
    given[l.index] += rooms[l.index];
    remaining -= rooms[l.index];
    totalWeight -= l.weight;
  }
  // The others share what remains at one level below every room (wanted > amount: some remain),
  // so each has room for at least one more unit after its rounded-down part.
  struct Part {
    std::size_t index;
    Units floor;  // the rounded-down part given
    Units room;   // left after it
    long double remainder;
  };
  std::vector<Part> parts;
  parts.reserve(levels.size() - first);
  totalWeight = 0;  // summed afresh: no error carried over from the subtractions
  for (std::size_t k = first; k < levels.size(); ++k) totalWeight += levels[k].weight;
  Units handed = 0;
  for (std::size_t k = first; k < levels.size(); ++k) {
    const std::size_t i = levels[k].index;
    const long double exact = weights[i] * static_cast<long double>(remaining) / totalWeight;
    const Units floor = std::clamp<Units>(static_cast<Units>(std::floor(exact)), 0, rooms[i]);
    given[i] += floor;
    handed += floor;
    parts.push_back({i, floor, rooms[i] - floor, exact - static_cast<long double>(floor)});
  }
  Units left = remaining - handed;
  auto before = [&](const Part& a, const Part& b) {
    if (a.remainder != b.remainder) return a.remainder > b.remainder;
    if (names[a.index] != names[b.index]) return names[a.index] < names[b.index];
    return a.index < b.index;
  };
  // One unit each to the `left` first parts in that order (which ones matters, not their order).
  if (left > 0 && static_cast<std::size_t>(left) < parts.size()) {
    const auto end = parts.begin() + left;
    std::nth_element(parts.begin(), end, parts.end(), before);
    for (auto it = parts.begin(); it != end; ++it) {
      if (it->room == 0) continue;
      ++given[it->index];
      --it->room;
      --left;
    }
  }
  if (left == 0) return;
  // Rounding error: more units left than parts take round after round in that order, or (when a
  // rounded-down part came out one too high) units come back from the last in that order.
  std::sort(parts.begin(), parts.end(), before);
  while (left > 0) {
    bool gaveAny = false;
    for (Part& p : parts) {
      if (left == 0) break;
      if (p.room == 0) continue;
      ++given[p.index];
      --p.room;
      --left;
      gaveAny = true;
    }
    if (!gaveAny) break;
  }
  for (auto it = parts.rbegin(); left < 0 && it != parts.rend(); ++it) {
    if (it->floor == 0) continue;
    --it->floor;
    --given[it->index];
    ++left;
  }
}

Units toUnits(MilliGpu milli, MilliGpu granularity) {
  return milli <= 0 ? 0 : milli / granularity;
}

bool whole(MilliGpu milli) {
  return milli % kMilliPerGpu == 0;
}

}  // namespace

std::vector<MilliGpu> computeFairShares(std::span<const FairShareInput> queues, MilliGpu capacity,
                                        MilliGpu granularity) {
  granularity = std::max<MilliGpu>(granularity, 1);
  const std::size_t n = queues.size();
  std::vector<std::string_view> names(n);
  std::vector<Units> caps(n);   // min(demand, limit)
  std::vector<Units> bases(n);  // min(deserved, cap)
  std::vector<long double> deservedWeights(n);
  std::vector<long double> overWeights(n);
  Units baseSum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const FairShareInput& q = queues[i];
    names[i] = q.name;
    MilliGpu cap = std::max<MilliGpu>(q.demand, 0);
    if (q.limit) cap = std::min(cap, std::max<MilliGpu>(*q.limit, 0));
    caps[i] = toUnits(cap, granularity);
    bases[i] = std::min(toUnits(q.deserved, granularity), caps[i]);
    baseSum += bases[i];
    deservedWeights[i] = static_cast<long double>(std::max<MilliGpu>(q.deserved, 0));
    const bool borrows = std::isfinite(q.overQuotaWeight) && q.overQuotaWeight > 0;
    overWeights[i] = borrows ? static_cast<long double>(q.overQuotaWeight) : 0.0L;
  }
  const Units total = toUnits(capacity, granularity);
  std::vector<Units> given(n, 0);
  if (baseSum <= total) {
    given = bases;
  } else {
    waterFill(total, deservedWeights, bases, names, given);
  }
  Units used = std::accumulate(given.begin(), given.end(), Units{0});
  std::vector<Units> rooms(n);
  for (std::size_t i = 0; i < n; ++i) rooms[i] = caps[i] - given[i];
  waterFill(total - used, overWeights, rooms, names, given);

  std::vector<MilliGpu> shares(n);
  for (std::size_t i = 0; i < n; ++i) shares[i] = given[i] * granularity;
  return shares;
}

MilliGpu fairShareGranularity(std::span<const FairShareInput> queues, MilliGpu capacity) {
  if (!whole(capacity)) return 1;
  for (const FairShareInput& q : queues) {
    if (!whole(q.deserved) || !whole(q.demand) || (q.limit && !whole(*q.limit))) return 1;
  }
  return kMilliPerGpu;
}

FairShareInput fairShareInput(const QueueState& queue) {
  return FairShareInput{queue.quota.name, queue.quota.gpu.deserved, queue.quota.gpu.limit,
                        queue.quota.gpu.overQuotaWeight,
                        queue.allocated + queue.pending + queue.reservedAhead};
}

MilliGpu fairShareCounting(const ClusterSnapshot& snapshot, const Pod& pod) {
  const QueueState* own = snapshot.findQueue(pod.queue);
  if (own == nullptr) return 0;
  const auto pending = snapshot.pending();
  const bool counted =
      !pod.uid.empty() && std::any_of(pending.begin(), pending.end(), [&](const PodPtr& p) {
        return p->uid == pod.uid && p->queue == pod.queue && p->gpus >= pod.gpus;
      });
  if (counted || pod.gpus <= 0) return own->fairShare;
  const auto queues = snapshot.queues();
  std::vector<FairShareInput> inputs;
  inputs.reserve(queues.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < queues.size(); ++i) {
    inputs.push_back(fairShareInput(queues[i]));
    if (&queues[i] == own) {
      inputs.back().demand += pod.gpus;
      at = i;
    }
  }
  const MilliGpu capacity = snapshot.capacity();
  return computeFairShares(inputs, capacity, fairShareGranularity(inputs, capacity))[at];
}

}  // namespace gpufair::policy
