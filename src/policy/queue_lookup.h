// QueueLookup: a snapshot's queues by name, private to src/policy (snapshot.cc links the queue tree
// with it, snapshot_queues.cc sums the queues' usage). Every snapshot looks its queues up, so a
// few queues are found by a walk (no allocation) and many by a map built once; either way the
// first queue of a name is the one found.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <unordered_map>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::detail {

class QueueLookup {
 public:
  explicit QueueLookup(std::span<const QueueState> queues) : queues_(queues) {
    if (queues_.size() <= kWalked) return;
    for (std::size_t i = 0; i < queues_.size(); ++i) at_.emplace(queues_[i].quota.name, i);
  }

  // The index of the first queue named `name`, or size() when there is none.
  std::size_t find(std::string_view name) const {
    if (queues_.size() > kWalked) {
      const auto it = at_.find(name);
      return it == at_.end() ? queues_.size() : it->second;
    }
    for (std::size_t i = 0; i < queues_.size(); ++i) {
      if (queues_[i].quota.name == name) return i;
    }
    return queues_.size();
  }

  std::size_t size() const { return queues_.size(); }
  const QueueState& operator[](std::size_t i) const { return queues_[i]; }

 private:
  static constexpr std::size_t kWalked = 16;
  std::span<const QueueState> queues_;
  std::unordered_map<std::string_view, std::size_t> at_;  // only for more than kWalked queues
};

}  // namespace gpufair::policy::detail
