// The table-driven engine scenarios: one test per file of tests/scenario/data (found at run time
// under GPUFAIR_SOURCE_DIR), each a cluster and steps whose verbs call the engine as the service
// does (data/README.md). A new scenario is a new file; nothing here changes.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/config/quota.h"
#include "gpufair/policy/consolidation.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/gang.h"
#include "gpufair/policy/preemption.h"
#include "gpufair/policy/reclaim.h"

#include "scenario_data.h"

namespace gpufair::scenario {
namespace {

std::filesystem::path dataDir() {
  return std::filesystem::path(GPUFAIR_SOURCE_DIR) / "tests" / "scenario" / "data";
}

std::vector<std::string> scenarioFiles() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dataDir())) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The cluster as the steps have changed it: pods bound by `place` join it.
class Cluster {
 public:
  explicit Cluster(const Scenario& sc) : sc_(sc), queues_(sc.queues), pods_(sc.pods) {}

  // A quota step's config, once it validated (a refused one leaves the last good config).
  void setQueues(std::vector<QueueQuota> queues) {
    queues_ = std::move(queues);
    ++generation_;
  }
  const std::vector<QueueQuota>& queues() const { return queues_; }

  policy::SnapshotPtr snapshot() const {
    QuotaConfig quota;
    quota.queues = queues_;
    std::map<std::string, std::vector<policy::PodPtr>> byNode;
    std::vector<policy::PodPtr> pending;
    for (policy::Pod pod : pods_) {
      pod.queue = policy::resolveQueue(quota, pod.ns, pod.labels);
      auto ptr = std::make_shared<const policy::Pod>(std::move(pod));
      if (!ptr->nodeName.empty()) {
        byNode[ptr->nodeName].push_back(ptr);
      } else if (ptr->gpus > 0 && !ptr->isFinished()) {
        pending.push_back(ptr);
      }
    }
    std::vector<policy::NodeStatePtr> nodes;
    for (const auto& n : sc_.nodes) {
      std::vector<policy::Reservation> held;
      for (const auto& r : sc_.reservations) {
        if (r.node == n.name) held.push_back(r);
      }
      nodes.push_back(std::make_shared<const policy::NodeState>(n, byNode[n.name], generation_,
                                                                std::move(held)));
    }
    policy::SnapshotOptions options;
    options.fit = sc_.fit;
    return std::make_shared<const policy::ClusterSnapshot>(
        std::move(nodes), std::move(pending), std::move(quota), generation_, std::move(options));
  }

  void bind(policy::Pod pod, const std::string& node, int gpuIndex) {
    std::erase_if(pods_, [&](const policy::Pod& p) { return p.uid == pod.uid; });
    pod.nodeName = node;
    pod.phase = policy::PodPhase::kRunning;
    if (pod.isFractional()) pod.gpuIndex = gpuIndex;
    pods_.push_back(std::move(pod));
    ++generation_;
  }

  policy::PodPtr find(const std::string& key, const policy::ClusterSnapshot& snap) const {
    const std::string uid = uidOf(key);
    for (const auto& n : snap.nodes()) {
      for (const auto& p : n->pods()) {
        if (p->uid == uid) return p;
      }
    }
    return nullptr;
  }

 private:
  const Scenario& sc_;
  std::vector<QueueQuota> queues_;
  std::vector<policy::Pod> pods_;
  std::uint64_t generation_ = 1;
};

std::vector<std::string_view> allNodes(const policy::ClusterSnapshot& snap) {
  std::vector<std::string_view> out;
  for (const auto& n : snap.nodes()) out.push_back(n->name());
  return out;
}

void checkVerdicts(const std::vector<policy::NodeVerdict>& verdicts,
                   const std::map<std::string, std::string>& want, const char* what) {
  for (const auto& [wantNode, reason] : want) {
    const std::string& node = wantNode;  // clang 14 cannot capture a structured binding
    auto it = std::find_if(verdicts.begin(), verdicts.end(),
                           [&](const auto& v) { return v.node == node; });
    ASSERT_NE(it, verdicts.end()) << "node " << node << " is not " << what;
    EXPECT_NE(it->reason.find(reason), std::string::npos) << it->reason;
  }
}

// filter (and the refusal side of prioritize and place). Returns the feasible nodes.
std::vector<std::string_view> runFilter(const policy::ClusterSnapshot& snap, const policy::Pod& pod,
                                        const std::vector<std::string_view>& nodes,
                                        const Expect& want) {
  const policy::FilterResult r = policy::filter(snap, pod, nodes);
  if (want.feasible) {
    EXPECT_EQ(std::vector<std::string>(r.feasible.begin(), r.feasible.end()), *want.feasible);
  }
  checkVerdicts(r.failed, want.failed, "failed");
  checkVerdicts(r.unresolvable, want.unresolvable, "unresolvable");
  if (want.refused) {
    EXPECT_TRUE(r.feasible.empty()) << "placed although a refusal was expected";
    const auto& verdicts = r.unresolvable.empty() ? r.failed : r.unresolvable;
    if (!verdicts.empty()) {
      EXPECT_NE(verdicts.front().reason.find(*want.refused), std::string::npos)
          << verdicts.front().reason;
    } else {
      ADD_FAILURE() << "no node refused";
    }
  }
  return r.feasible;
}

// prioritize, and for place the bind. Returns the best node ("" when none fits).
std::string runPrioritize(const policy::ClusterSnapshot& snap, const policy::Pod& pod,
                          const Step& step, std::vector<std::string_view> feasible) {
  auto scorer = policy::makeScorer(step.scorer);
  EXPECT_NE(scorer, nullptr) << "unknown scorer " << step.scorer;
  if (!scorer || feasible.empty()) return "";
  const auto scores = policy::prioritize(snap, pod, feasible, *scorer);
  for (const auto& [scoredNode, score] : step.expect.scores) {
    const std::string& node = scoredNode;  // clang 14 cannot capture a structured binding
    auto it = std::find_if(scores.begin(), scores.end(), [&](auto& s) { return s.node == node; });
    if (it == scores.end()) {
      ADD_FAILURE() << "node " << node << " was not scored";
    } else {
      EXPECT_EQ(it->score, score) << "node " << node;
    }
  }
  auto best = std::max_element(scores.begin(), scores.end(),
                               [](const auto& a, const auto& b) { return a.score < b.score; });
  return std::string(best->node);
}

void runPreempt(const policy::ClusterSnapshot& snap, const policy::Pod& pod, const Step& step) {
  std::vector<policy::NodeVictims> proposed;
  for (const auto& [node, keys] : step.proposed) {
    policy::NodeVictims nv{node, {}, 0};
    for (const auto& k : keys) nv.podUids.push_back(uidOf(k));
    proposed.push_back(std::move(nv));
  }
  const policy::PreemptionPlan plan = policy::planPreemption(snap, pod, proposed);
  std::map<std::string, std::vector<std::string>> kept;
  for (const auto& n : plan.nodes) kept[n.node] = n.podUids;
  std::map<std::string, std::vector<std::string>> want;
  for (const auto& [node, keys] : step.expect.kept) {
    for (const auto& k : keys) want[node].push_back(uidOf(k));
  }
  EXPECT_EQ(kept, want);
  for (const auto& [droppedNode, reason] : step.expect.dropped) {
    const std::string& node = droppedNode;  // clang 14 cannot capture a structured binding
    auto it = std::find_if(plan.dropped.begin(), plan.dropped.end(),
                           [&](const auto& d) { return d.node == node; });
    ASSERT_NE(it, plan.dropped.end()) << "node " << node << " was not dropped";
    EXPECT_NE(it->reason.find(reason), std::string::npos) << it->reason;
  }
  if (step.expect.borrowing) {
    EXPECT_EQ(plan.preemptorBorrowing, *step.expect.borrowing);
  }
}

// The expectations reclaim and consolidation share: the outcome's kind and reason, the plan's node,
// and its pods as `names` writes them (victims, or movers).
template <typename Outcome, typename KindName, typename Names>
void expectPlan(const Expect& want, const Outcome& out, KindName kindName, Names names) {
  if (want.kind) {
    EXPECT_EQ(kindName(out.kind), *want.kind) << out.reason;
  }
  if (want.reason) {
    EXPECT_NE(out.reason.find(*want.reason), std::string::npos) << out.reason;
  }
  if (want.node) {
    ASSERT_TRUE(out.plan.has_value()) << out.reason;
    EXPECT_EQ(out.plan->node, *want.node);
  }
  if (want.victims) {
    std::vector<std::string> got;
    if (out.plan) got = names(*out.plan);
    EXPECT_EQ(got, *want.victims) << out.reason;
  }
}

void runReclaim(const Scenario& sc, const policy::ClusterSnapshot& snap, const policy::Pod& pod,
                const Step& step) {
  policy::ReclaimOptions options;
  options.now = sc.now;
  for (const auto& k : step.spared) options.spared.insert(uidOf(k));
  expectPlan(step.expect, policy::planReclaim(snap, pod, options), policy::reclaimKindName,
             [](const policy::ReclaimPlan& plan) {
               std::vector<std::string> victims;
               for (const auto& v : plan.victims) victims.push_back(v.pod->key());
               return victims;
             });
}

// victims: the movers as "ns/name>node" (where each goes), in eviction order.
void runConsolidate(const Scenario& sc, const policy::ClusterSnapshot& snap, const policy::Pod& pod,
                    const Step& step) {
  policy::ConsolidationOptions options;
  options.now = sc.now;
  for (const auto& k : step.spared) options.spared.insert(uidOf(k));
  if (step.maxMoves > 0) options.maxMoves = step.maxMoves;
  expectPlan(step.expect, policy::planConsolidation(snap, pod, options),
             policy::consolidationKindName, [](const policy::ConsolidationPlan& plan) {
               std::vector<std::string> moves;
               for (const auto& m : plan.moves) moves.push_back(m.pod->key() + ">" + m.to);
               return moves;
             });
}

// A waiting gang: node is the members' targets joined by ",", victims every member's movers.
void runConsolidateGang(const Scenario& sc, const policy::ClusterSnapshot& snap,
                        const policy::Pod& pod, const Step& step) {
  policy::ConsolidationOptions options;
  options.now = sc.now;
  for (const auto& k : step.spared) options.spared.insert(uidOf(k));
  if (step.maxMoves > 0) options.maxMoves = step.maxMoves;
  const policy::GangConsolidationOutcome gang = policy::planGangConsolidation(snap, pod, options);
  struct Merged {
    policy::ConsolidationOutcome::Kind kind;
    std::string reason;
    std::optional<policy::ConsolidationPlan> plan;
  } merged{gang.kind, gang.reason, std::nullopt};
  if (!gang.plans.empty()) {
    merged.plan.emplace();
    for (const auto& p : gang.plans) {
      merged.plan->node += (merged.plan->node.empty() ? "" : ",") + p.node;
      merged.plan->moves.insert(merged.plan->moves.end(), p.moves.begin(), p.moves.end());
    }
  }
  expectPlan(step.expect, merged, policy::consolidationKindName,
             [](const policy::ConsolidationPlan& plan) {
               std::vector<std::string> moves;
               for (const auto& m : plan.moves) moves.push_back(m.pod->key() + ">" + m.to);
               return moves;
             });
}

void runGang(const policy::ClusterSnapshot& snap, const policy::Pod& pod, const Expect& want) {
  const policy::GangPlan plan = policy::planGang(snap, pod);
  if (want.reason) {
    EXPECT_FALSE(plan.status.isOk());
    EXPECT_NE(plan.status.reason().find(*want.reason), std::string::npos) << plan.status.reason();
  }
  if (want.slots) {
    ASSERT_TRUE(plan.status.isOk()) << plan.status.reason();
    std::vector<std::string> nodes;
    for (const auto& s : plan.slots) nodes.push_back(s.node);
    std::sort(nodes.begin(), nodes.end());
    EXPECT_EQ(nodes, *want.slots);
  }
}

// Fair shares and (subtree) allocations as the snapshot computes them.
void runShares(const policy::ClusterSnapshot& snap, const Expect& want) {
  for (const auto& [queue, gpus] : want.shares) {
    const policy::QueueState* q = snap.findQueue(queue);
    ASSERT_NE(q, nullptr) << "no queue " << queue;
    EXPECT_EQ(q->fairShare, static_cast<MilliGpu>(gpus * 1000 + 0.5)) << "fair share of " << queue;
  }
  for (const auto& [queue, gpus] : want.allocated) {
    const policy::QueueState* q = snap.findQueue(queue);
    ASSERT_NE(q, nullptr) << "no queue " << queue;
    EXPECT_EQ(q->allocated, static_cast<MilliGpu>(gpus * 1000 + 0.5)) << "allocated of " << queue;
  }
}

// A new queues.yaml, validated as the quota watcher does: applied when valid, else refused with
// file:line and the last good config stays.
void runQuota(Cluster& cluster, const Step& step) {
  auto parsed = config::parseQuotaYaml(step.quotaYaml, "queues.yaml");
  if (parsed.ok()) cluster.setQueues(parsed->queues);
  const Expect& want = step.expect;
  if (want.applied) {
    EXPECT_EQ(parsed.ok(), *want.applied) << (parsed.ok() ? "" : parsed.error());
  }
  if (want.error) {
    ASSERT_FALSE(parsed.ok()) << "accepted";
    EXPECT_NE(parsed.error().find(*want.error), std::string::npos) << parsed.error();
  }
}

class YamlScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(YamlScenario, Runs) {
  const Scenario sc = loadScenario(GetParam());
  ASSERT_FALSE(sc.steps.empty()) << "a scenario without steps checks nothing";
  Cluster cluster(sc);
  for (std::size_t i = 0; i < sc.steps.size(); ++i) {
    const Step& step = sc.steps[i];
    SCOPED_TRACE("step " + std::to_string(i + 1) + " (" + step.verb + " " + step.pod.key() + ")");
    const policy::SnapshotPtr snap = cluster.snapshot();
    policy::Pod pod = step.pod;
    pod.queue = policy::resolveQueue(snap->quotaConfig(), pod.ns, pod.labels);
    const auto nodes = allNodes(*snap);
    if (step.verb == "filter") {
      runFilter(*snap, pod, nodes, step.expect);
    } else if (step.verb == "prioritize" || step.verb == "place") {
      const std::string best =
          runPrioritize(*snap, pod, step, runFilter(*snap, pod, nodes, step.expect));
      if (step.expect.best) {
        EXPECT_EQ(best, *step.expect.best);
      }
      if (step.expect.node) {
        EXPECT_EQ(best, *step.expect.node);
      }
      if (step.verb == "place" && !best.empty()) {
        const auto scorer = policy::makeScorer(step.scorer);
        const policy::NodeState* node = snap->findNode(best);
        cluster.bind(step.pod, best, scorer->chooseGpu(*snap, pod, *node));
      }
    } else if (step.verb == "preempt") {
      runPreempt(*snap, pod, step);
    } else if (step.verb == "reclaim") {
      runReclaim(sc, *snap, pod, step);
    } else if (step.verb == "consolidate") {
      runConsolidate(sc, *snap, pod, step);
    } else if (step.verb == "consolidate-gang") {
      runConsolidateGang(sc, *snap, pod, step);
    } else if (step.verb == "gang") {
      runGang(*snap, pod, step.expect);
    } else if (step.verb == "shares") {
      runShares(*snap, step.expect);
    } else if (step.verb == "quota") {
      runQuota(cluster, step);
    } else {
      FAIL() << "unknown verb " << step.verb;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Data, YamlScenario, ::testing::ValuesIn(scenarioFiles()),
                         [](const auto& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           std::replace_if(
                               name.begin(), name.end(),
                               [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
                               '_');
                           return name;
                         });

}  // namespace
}  // namespace gpufair::scenario
