// The queue-tree rules of config/quota.h over a whole (merged) config.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpufair/common/quantity.h"
#include "gpufair/config/quota.h"

#include "yaml_support.h"

namespace gpufair::config {
namespace {

std::string inQuotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

class TreeCheck {
 public:
  TreeCheck(const QuotaConfig& config, const QueueLocations& where)
      : config_(config), where_(where) {
    for (const QueueQuota& q : config.queues) byName_.emplace(q.name, &q);
  }

  Status run() {
    for (const QueueQuota& q : config_.queues) checkParent(q);
    for (const QueueQuota& q : config_.queues) checkCycle(q);
    checkParents();
    if (errors_.empty()) return Status::ok();
    std::string message;
    for (const auto& e : errors_) message += (message.empty() ? "" : "\n") + e;
    return Status::error(std::move(message));
  }

 private:
  // "file:LINE:COL: queue "a": " (or just "queue "a": " when the place is unknown).
  std::string at(const std::string& queue, bool parentKey) const {
    std::string place;
    if (auto it = where_.find(queue); it != where_.end())
      place = parentKey && !it->second.parent.empty() ? it->second.parent : it->second.name;
    return (place.empty() ? "" : place + ": ") + "queue " + inQuotes(queue) + ": ";
  }

  void checkParent(const QueueQuota& q) {
    if (q.parent.empty()) return;
    if (q.parent == kDefaultQueueName) {
      errors_.push_back(at(q.name, true) +
                        "parent \"default\": the default queue cannot have children");
    } else if (q.parent == q.name) {
      errors_.push_back(at(q.name, true) + "is its own parent (a cycle)");
    } else if (byName_.count(q.parent) == 0) {
      std::vector<std::string_view> names;
      for (const QueueQuota& other : config_.queues) names.push_back(other.name);
      std::string what = at(q.name, true) + "parent " + inQuotes(q.parent) + " is not a queue";
      if (auto guess = detail::closestWord(q.parent, names); !guess.empty())
        what += " (did you mean " + inQuotes(guess) + "?)";
      errors_.push_back(what + "; a parent must be one of the configured queues");
    }
  }

  // Reports each cycle once, at its first member in config order.
  void checkCycle(const QueueQuota& start) {
    std::vector<const QueueQuota*> chain{&start};
    for (const QueueQuota* q = &start; !q->parent.empty() && q->parent != q->name;) {
      auto next = byName_.find(q->parent);
      if (next == byName_.end()) return;
      q = next->second;
      if (q == &start) break;
      if (std::find(chain.begin(), chain.end(), q) != chain.end()) return;  // start leads in
      chain.push_back(q);
    }
    if (chain.back()->parent != start.name || chain.size() < 2) return;
    for (const QueueQuota* q : chain) {
      if (reported_.count(q->name) > 0) return;
    }
    std::string path;
    for (const QueueQuota* q : chain) {
      path += q->name + " -> ";
      reported_.insert(q->name);
    }
    errors_.push_back(at(start.name, true) + "parents form a cycle: " + path + start.name +
                      "; a queue tree has no cycles");
  }

  // Parents hold no namespaces; children deserve no more than their parent.
  void checkParents() {
    std::map<std::string, std::vector<const QueueQuota*>, std::less<>> children;
    for (const QueueQuota& q : config_.queues) {
      if (!q.parent.empty() && byName_.count(q.parent) > 0) children[q.parent].push_back(&q);
    }
    for (const auto& [name, kids] : children) {
      const QueueQuota& parent = *byName_.at(name);
      std::string list;
      MilliGpu sum = 0;
      for (const QueueQuota* k : kids) {
        list += (list.empty() ? "" : ", ") + k->name + " " + formatGpus(k->gpu.deserved);
        sum += k->gpu.deserved;
      }
      if (!parent.namespaces.empty()) {
        errors_.push_back(at(name, false) + "is the parent of " + kids.front()->name +
                          " and lists namespaces; pods run in leaf queues: move its namespaces to "
                          "a child queue");
      }
      if (sum > parent.gpu.deserved) {
        errors_.push_back(at(name, false) + "its children deserve " + formatGpus(sum) + " GPUs (" +
                          list + "), more than its own gpu.deserved " +
                          formatGpus(parent.gpu.deserved));
      }
    }
  }

  const QuotaConfig& config_;
  const QueueLocations& where_;
  std::map<std::string_view, const QueueQuota*, std::less<>> byName_;
  std::set<std::string, std::less<>> reported_;
  std::vector<std::string> errors_;
};

}  // namespace

Status validateQueueTree(const QuotaConfig& config, const QueueLocations& where) {
  bool flat = std::all_of(config.queues.begin(), config.queues.end(),
                          [](const QueueQuota& q) { return q.parent.empty(); });
  if (flat) return Status::ok();
  return TreeCheck(config, where).run();
}

}  // namespace gpufair::config
