// Scenario files (tests/scenario/data/*.yaml, format in data/README.md) read into a cluster and a
// list of steps for the table-driven engine test (yaml_scenario_test.cc).
// Thread-safety: value types; loadScenario throws std::runtime_error naming the file on bad input.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/model.h"
#include "gpufair/policy/reservation.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::scenario {

// What one step expects; unset fields are not checked.
struct Expect {
  std::optional<std::vector<std::string>> feasible;  // filter: exactly these nodes, in node order
  std::map<std::string, std::string> failed;         // node -> reason substring (Unschedulable)
  std::map<std::string, std::string> unresolvable;   // node -> reason substring
  std::optional<std::string> refused;  // no node passes; the first verdict has this substring
  std::optional<std::string> best;     // prioritize: the highest scored node (first by name)
  std::map<std::string, int> scores;   // prioritize: node -> score
  std::optional<std::string> node;     // place: bound there; reclaim: the plan's node
  std::optional<std::string> kind;     // reclaim: planned, no-plan, not-needed, not-eligible
  std::optional<std::vector<std::string>> victims;       // reclaim: ns/name in eviction order
  std::optional<std::string> reason;                     // reclaim, gang: substring of the reason
  std::map<std::string, std::vector<std::string>> kept;  // preempt: node -> victims kept
  std::map<std::string, std::string> dropped;            // preempt: node -> reason substring
  std::optional<bool> borrowing;                         // preempt: preemptorBorrowing
  std::optional<std::vector<std::string>> slots;         // gang: the planned nodes, sorted
  std::map<std::string, double> shares;                  // shares: queue -> fair share in GPUs
  std::map<std::string, double> allocated;  // shares: queue -> allocated GPUs (subtree's)
  std::optional<std::string> error;         // quota: the refusal (substring)
  std::optional<bool> applied;              // quota: the new config is in force
};

struct Step {
  // filter, prioritize, place, preempt, reclaim, consolidate, consolidate-gang, gang, shares, quota
  std::string verb;
  policy::Pod pod;                                           // shares and quota take none
  std::string quotaYaml;                                     // quota: a queues.yaml document
  std::string scorer;                                        // prioritize, place
  std::map<std::string, std::vector<std::string>> proposed;  // preempt: node -> ns/name victims
  std::vector<std::string> spared;                           // reclaim: ns/name not to evict
  int maxMoves = 0;  // consolidate, consolidate-gang: ConsolidationOptions::maxMoves (0: default)
  Expect expect;
};

struct Scenario {
  std::string name;  // the file's name without .yaml
  std::string description;
  std::vector<policy::Node> nodes;
  std::vector<QueueQuota> queues;
  std::vector<policy::Pod> pods;  // running (nodeName set) and pending
  std::vector<policy::Reservation> reservations;
  policy::FitOptions fit;
  Timestamp now{};
  std::vector<Step> steps;
};

Scenario loadScenario(const std::string& path);

// "uid-<ns>-<name>", the uid a scenario gives the pod ns/name.
std::string uidOf(const std::string& key);

}  // namespace gpufair::scenario
