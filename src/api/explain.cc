#include "gpufair/api/explain.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpufair/policy/consolidation.h"
#include "gpufair/policy/filter.h"

#include "gpus_json.h"

namespace gpufair::api {
namespace {

using nlohmann::json;

struct Found {
  policy::PodPtr pod;
  bool pending = false;
};

Found findPod(const policy::ClusterSnapshot& snapshot, std::string_view key) {
  for (const auto& pod : snapshot.pending()) {
    if (pod->key() == key) return {pod, true};
  }
  for (const auto& node : snapshot.nodes()) {
    for (const auto& pod : node->pods()) {
      if (pod->key() == key) return {pod, false};
    }
  }
  return {};
}

// "3 nodes: fewer than 4 GPUs free; 2 nodes: has 8 GPUs; pod needs 10 GPUs; 1 node: node n4 is
// unschedulable (cordoned)": reasons that differ only in the node's name are counted together,
// most common first, at most three groups.
std::string groupedReasons(const policy::FilterResult& result) {
  struct Group {
    int count = 0;
    std::string_view example;  // as said of one node
  };
  std::map<std::string_view, Group> groups;
  for (const auto* verdicts : {&result.unresolvable, &result.failed}) {
    for (const auto& verdict : *verdicts) {
      std::string_view key = verdict.reason;
      const std::string prefix = "node " + std::string(verdict.node) + " ";
      if (key.substr(0, prefix.size()) == prefix) key.remove_prefix(prefix.size());
      Group& group = groups[key];
      if (group.count++ == 0) group.example = verdict.reason;
    }
  }
  std::vector<std::pair<std::string_view, Group>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < 3; ++i) {
    const auto& [key, group] = sorted[i];
    if (!text.empty()) text += "; ";
    text += group.count == 1 ? "1 node: " + std::string(group.example)
                             : std::to_string(group.count) + " nodes: " + std::string(key);
  }
  if (sorted.size() > 3) {
    const std::size_t more = sorted.size() - 3;
    text += "; and " + std::to_string(more) + (more == 1 ? " other reason" : " other reasons");
  }
  return text;
}

// For a pod no node takes although its queue admits it: whether it waits on fragmentation alone
// (its GPUs free in total, on no one node) and what consolidation would move for it. Null when
// it does not.
json consolidationJson(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                       Timestamp now, std::string& summary) {
  policy::ConsolidationOptions options;
  options.now = now;
  const policy::ConsolidationOutcome out = policy::planConsolidation(snapshot, pod, options);
  if (!out.fragmented()) return nullptr;
  summary += out.plan ? "; it waits on fragmentation alone, and consolidation (when on) plans: " +
                            out.plan->reason
                      : "; it waits on fragmentation alone, and consolidation cannot help now: " +
                            out.reason;
  json moves = json::array();
  if (out.plan) {
    for (const auto& m : out.plan->moves) {
      moves.push_back({{"pod", m.pod->key()}, {"from", m.from}, {"to", m.to}});
    }
  }
  return json{{"fragmented", true},
              {"outcome", policy::consolidationKindName(out.kind)},
              {"node", out.plan ? out.plan->node : ""},
              {"moves", std::move(moves)},
              {"reason", out.reason}};
}

json explainPending(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                    const policy::Scorer& scorer, Timestamp now) {
  std::vector<std::string_view> names;
  names.reserve(snapshot.nodes().size());
  for (const auto& node : snapshot.nodes()) names.push_back(node->name());
  const policy::FilterResult result = policy::filter(snapshot, pod, names);
  const std::vector<policy::NodeScore> scores =
      policy::prioritize(snapshot, pod, result.feasible, scorer);

  std::map<std::string_view, std::string_view> refusals;
  for (const auto* verdicts : {&result.unresolvable, &result.failed}) {
    for (const auto& verdict : *verdicts) refusals.emplace(verdict.node, verdict.reason);
  }
  std::vector<policy::NodeScore> ranked = scores;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.score > b.score; });
  json nodes = json::array();
  auto nodeJson = [&](std::string_view name, bool fits, int score, std::string_view reason) {
    const policy::NodeState* state = snapshot.findNode(name);
    json entry{{"name", name}, {"fits", fits}, {"reason", reason}};
    entry["score"] = fits ? json(score) : json(nullptr);
    entry["free"] = state ? detail::gpusJson(state->free()) : json(nullptr);
    entry["allocatable"] = state ? detail::gpusJson(state->allocatable()) : json(nullptr);
    nodes.push_back(std::move(entry));
  };
  for (const auto& score : ranked) nodeJson(score.node, true, score.score, "");
  for (const auto& [name, reason] : refusals) nodeJson(name, false, 0, reason);

  const bool admitted = result.admission.status.isOk();
  std::string summary;
  if (!admitted) {
    summary = "its queue refuses it on every node: " + result.admission.status.reason();
  } else if (pod.gpus == 0 && !snapshot.fitOptions().checkCpuMemory) {
    summary = "it requests no GPU: gpufair lets it go to any node kube-scheduler picks";
  } else if (!ranked.empty()) {
    // A fact, not a promise: where kube-scheduler places it is kube-scheduler's decision, and
    // a pod it failed to place waits in its backoff until it retries.
    summary =
        "it fits now, best on " + std::string(ranked.front().node) + " (score " +
        std::to_string(ranked.front().score) + " of 10; " + std::to_string(ranked.size()) + " of " +
        std::to_string(names.size()) + " nodes fit)" +
        (result.admission.overQuota ? ", borrowing idle GPUs beyond its queue's deserved quota"
                                    : "") +
        "; waiting for kube-scheduler to retry it";
  } else if (names.empty()) {
    summary = "gpufair knows no nodes yet";
  } else {
    summary = "no node fits: " + groupedReasons(result);
  }
  json consolidation =
      admitted && ranked.empty() ? consolidationJson(snapshot, pod, now, summary) : json(nullptr);
  return json{{"state", "pending"},
              {"consolidation", std::move(consolidation)},
              {"node", ""},
              {"admission",
               {{"admitted", admitted},
                {"overQuota", result.admission.overQuota},
                {"reason", admitted ? "" : result.admission.status.reason()},
                {"level", admitted ? "" : result.admission.level}}},
              {"feasibleNodes", result.feasible.size()},
              {"totalNodes", names.size()},
              {"nodes", std::move(nodes)},
              {"summary", std::move(summary)}};
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hexValue(text[i + 1]);
      const int lo = hexValue(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

Result<std::string> renderExplainJson(const policy::ClusterSnapshot& snapshot,
                                      std::string_view podKey, const policy::Scorer& scorer) {
  return renderExplainJson(snapshot, podKey, scorer, std::chrono::system_clock::now());
}

Result<std::string> renderExplainJson(const policy::ClusterSnapshot& snapshot,
                                      std::string_view podKey, const policy::Scorer& scorer,
                                      Timestamp now) {
  const Found found = findPod(snapshot, podKey);
  if (found.pod == nullptr) {
    return Result<std::string>::failure(
        "gpufair knows no pod " + std::string(podKey) +
        ": it is neither pending (offered by kube-scheduler or seen unbound with a GPU request) "
        "nor placed on a node");
  }
  const policy::Pod& pod = *found.pod;
  json document;
  if (found.pending) {
    document = explainPending(snapshot, pod, scorer, now);
  } else {
    const std::string state = snapshot.isProvisional(pod.uid) ? "assumed" : "bound";
    document = json{{"state", state},
                    {"node", pod.nodeName},
                    {"feasibleNodes", 0},
                    {"totalNodes", snapshot.nodes().size()},
                    {"nodes", json::array()},
                    {"summary", "it is " + state + " to node " + pod.nodeName +
                                    (pod.overQuota ? ", borrowed (over its queue's quota)" : "")}};
  }
  document["pod"] = pod.key();
  document["uid"] = pod.uid;
  document["queue"] = pod.queue;
  if (const policy::QueueState* q = snapshot.findQueue(pod.queue); q && q->parentIndex >= 0) {
    // The pod's queue in its tree, top level first: "org > research > team-a".
    const auto queues = snapshot.queues();
    std::string path;
    for (int level : policy::queueLineage(queues, static_cast<int>(q - queues.data())))
      path =
          queues[static_cast<std::size_t>(level)].quota.name + (path.empty() ? "" : " > ") + path;
    document["queuePath"] = path;
  }
  document["gpus"] = detail::gpusJson(pod.gpus);
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<std::string> queryParameter(std::string_view target, std::string_view key) {
  const std::size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return percentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace gpufair::api
