// What the reclaim and consolidation rounds share: the order they take waiting pods in, and
// AlikeMemo, what a round decided per class of alike pods (policy::reclaimClassKey,
// policy::consolidationClassKey), kept while nothing in the round changes. A backlog of thousands
// of pods that no plan can serve, or that fit already, then costs one plan per class, not one per
// pod. Thread-safety: none; a round's locals.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "gpufair/policy/model.h"

namespace gpufair::app {

// Oldest first (a pod without a creation time after those with one), then by uid.
inline bool olderFirst(const policy::Pod& a, const policy::Pod& b) {
  if (a.created != b.created) {
    if (!a.created || !b.created) return a.created.has_value();
    return *a.created < *b.created;
  }
  return a.uid < b.uid;
}

// Attempt: a round's outcome for one pod, with a bool `alike`: it followed from the first plan
// alone and changed nothing in the round.

template <class Attempt>
class AlikeMemo {
 public:
  // The outcome kept for `key`, else plan()'s: kept for the key when alike, and when not (the
  // round changed) everything kept so far is forgotten. An empty key is a class of its own.
  template <class Plan>
  Attempt get(const std::string& key, Plan&& plan) {
    if (!key.empty()) {
      if (auto it = kept_.find(key); it != kept_.end()) return it->second;
    }
    Attempt attempt = std::forward<Plan>(plan)();
    if (!attempt.alike) {
      kept_.clear();
    } else if (!key.empty()) {
      kept_.emplace(key, attempt);
    }
    return attempt;
  }

 private:
  std::map<std::string, Attempt, std::less<>> kept_;
};

}  // namespace gpufair::app
