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

namespace {

// The inputs as the water-filling sees them: in units of the granularity.
struct ShareTable {
  std::vector<std::string_view> names;
  std::vector<Units> caps;   // min(demand, limit, what the children can take)
  std::vector<Units> bases;  // min(deserved, cap)
  std::vector<long double> deservedWeights;
  std::vector<long double> overWeights;
};

// Splits `amount` units among `members` (siblings): deserved first (water-filled by deserved when
// they add up to more), then what is left by priority, highest first, each priority level
// water-filled by overQuotaWeight. Adds to `given`.
void splitAmong(std::span<const std::size_t> members, Units amount,
                std::span<const FairShareInput> queues, const ShareTable& u,
                std::vector<Units>& given) {
  const std::size_t n = members.size();
  std::vector<std::string_view> names(n);
  std::vector<Units> bases(n);
  std::vector<Units> local(n, 0);
  std::vector<long double> weights(n);
  Units baseSum = 0;
  for (std::size_t k = 0; k < n; ++k) {
    names[k] = u.names[members[k]];
    bases[k] = u.bases[members[k]];
    weights[k] = u.deservedWeights[members[k]];
    baseSum += bases[k];
  }
  if (baseSum <= amount) {
    local = bases;
  } else {
    waterFill(amount, weights, bases, names, local);
  }
  Units used = std::accumulate(local.begin(), local.end(), Units{0});
  std::vector<int> levels;  // the distinct priorities, highest first (usually one)
  for (std::size_t i : members) {
    if (std::find(levels.begin(), levels.end(), queues[i].priority) == levels.end())
      levels.push_back(queues[i].priority);
  }
  std::sort(levels.rbegin(), levels.rend());
  std::vector<Units> rooms(n);
  for (int level : levels) {
    if (used >= amount) break;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = members[k];
      weights[k] = queues[i].priority == level ? u.overWeights[i] : 0.0L;
      rooms[k] = u.caps[i] - local[k];
    }
    const Units before = std::accumulate(local.begin(), local.end(), Units{0});
    waterFill(amount - used, weights, rooms, names, local);
    used += std::accumulate(local.begin(), local.end(), Units{0}) - before;
  }
  for (std::size_t k = 0; k < n; ++k) given[members[k]] += local[k];
}

// Children of each input, the top-level inputs, and a top-down order. A parent index out of range,
// or one that leads into a cycle, makes the input top-level.
struct Forest {
  std::vector<std::vector<std::size_t>> children;
  std::vector<std::size_t> roots;
  std::vector<std::size_t> order;  // parents before children
};

Forest forestOf(std::span<const FairShareInput> queues) {
  const std::size_t n = queues.size();
  Forest f;
  f.children.resize(n);
  auto valid = [&](std::size_t i) {
    const int p = queues[i].parent;
    return p >= 0 && static_cast<std::size_t>(p) < n && static_cast<std::size_t>(p) != i;
  };
  for (std::size_t i = 0; i < n; ++i) {
    bool rooted = false;
    std::size_t at = i;
    for (std::size_t steps = 0; steps <= n; ++steps) {
      if (!valid(at)) {
        rooted = true;
        break;
      }
      at = static_cast<std::size_t>(queues[at].parent);
      if (at == i) break;
    }
    if (rooted && valid(i)) {
      f.children[static_cast<std::size_t>(queues[i].parent)].push_back(i);
    } else {
      f.roots.push_back(i);
    }
  }
  f.order = f.roots;
  for (std::size_t k = 0; k < f.order.size(); ++k) {
    for (std::size_t c : f.children[f.order[k]]) f.order.push_back(c);
  }
  return f;
}

}  // namespace

std::vector<MilliGpu> computeFairShares(std::span<const FairShareInput> queues, MilliGpu capacity,
                                        MilliGpu granularity) {
  granularity = std::max<MilliGpu>(granularity, 1);
  const std::size_t n = queues.size();
  ShareTable u;
  u.names.resize(n);
  u.caps.resize(n);
  u.bases.resize(n);
  u.deservedWeights.resize(n);
  u.overWeights.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const FairShareInput& q = queues[i];
    u.names[i] = q.name;
    MilliGpu cap = std::max<MilliGpu>(q.demand, 0);
    if (q.limit) cap = std::min(cap, std::max<MilliGpu>(*q.limit, 0));
    u.caps[i] = toUnits(cap, granularity);
    u.deservedWeights[i] = static_cast<long double>(std::max<MilliGpu>(q.deserved, 0));
    const bool borrows = std::isfinite(q.overQuotaWeight) && q.overQuotaWeight > 0;
    u.overWeights[i] = borrows ? static_cast<long double>(q.overQuotaWeight) : 0.0L;
  }
  const Forest forest = forestOf(queues);
  // A parent can hold no more than its children can take.
  for (auto it = forest.order.rbegin(); it != forest.order.rend(); ++it) {
    const auto& kids = forest.children[*it];
    if (kids.empty()) continue;
    Units sum = 0;
    for (std::size_t c : kids) sum += u.caps[c];
    u.caps[*it] = std::min(u.caps[*it], sum);
  }
  for (std::size_t i = 0; i < n; ++i)
    u.bases[i] = std::min(toUnits(queues[i].deserved, granularity), u.caps[i]);

  std::vector<Units> given(n, 0);
  splitAmong(forest.roots, toUnits(capacity, granularity), queues, u, given);
  for (std::size_t i : forest.order) {
    if (!forest.children[i].empty()) splitAmong(forest.children[i], given[i], queues, u, given);
  }
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
  return FairShareInput{queue.quota.name,
                        queue.quota.gpu.deserved,
                        queue.quota.gpu.limit,
                        queue.quota.gpu.overQuotaWeight,
                        queue.allocated + queue.pending + queue.reservedAhead,
                        queue.parentIndex,
                        queue.quota.priority};
}

bool countedPending(const ClusterSnapshot& snapshot, const Pod& pod) {
  // A binary search in the pod cache's list (in uid order): no walk over every pending pod.
  return !pod.uid.empty() && snapshot.pending().anyWithUid(pod.uid, [&](const Pod& p) {
    return p.queue == pod.queue && p.gpus >= pod.gpus;
  });
}

std::vector<MilliGpu> fairSharesCounting(const ClusterSnapshot& snapshot, const Pod& pod) {
  const auto queues = snapshot.queues();
  const QueueState* own = snapshot.findQueue(pod.queue);
  std::vector<MilliGpu> listed;
  listed.reserve(queues.size());
  for (const QueueState& q : queues) listed.push_back(q.fairShare);
  if (own == nullptr || pod.gpus <= 0 || countedPending(snapshot, pod)) return listed;
  std::vector<FairShareInput> inputs;
  inputs.reserve(queues.size());
  for (const QueueState& q : queues) inputs.push_back(fairShareInput(q));
  // The pod's GPUs are demand of its queue and of every ancestor.
  for (int q : queueLineage(queues, static_cast<int>(own - queues.data())))
    inputs[static_cast<std::size_t>(q)].demand += pod.gpus;
  const MilliGpu capacity = snapshot.capacity();
  return computeFairShares(inputs, capacity, fairShareGranularity(inputs, capacity));
}

MilliGpu fairShareCounting(const ClusterSnapshot& snapshot, const Pod& pod) {
  const QueueState* own = snapshot.findQueue(pod.queue);
  if (own == nullptr) return 0;
  if (pod.gpus <= 0 || countedPending(snapshot, pod)) return own->fairShare;
  return fairSharesCounting(snapshot,
                            pod)[static_cast<std::size_t>(own - snapshot.queues().data())];
}

}  // namespace gpufair::policy
