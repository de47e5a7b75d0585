#include "scenario_data.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpufair/common/labels.h"
#include "gpufair/config/quota.h"

namespace gpufair::scenario {
namespace {

// Whole or fractional GPU counts and CPU cores, as thousandths.
std::int64_t milli(const YAML::Node& n) {
  return static_cast<std::int64_t>(n.as<double>() * 1000 + 0.5);
}

std::int64_t gibibytes(const YAML::Node& n) {
  return static_cast<std::int64_t>(n.as<double>() * 1024 * 1024 * 1024);
}

// "90s", "10m", "2h".
std::chrono::seconds duration(const YAML::Node& n) {
  const std::string text = n.as<std::string>();
  const long long value = std::stoll(text);
  switch (text.back()) {
    case 's':
      return std::chrono::seconds{value};
    case 'm':
      return std::chrono::minutes{value};
    case 'h':
      return std::chrono::hours{value};
  }
  throw std::runtime_error("duration \"" + text + "\" is not like 90s, 10m or 2h");
}

// A misspelt key would silently check nothing: every map may hold only the keys it documents.
void onlyKeys(const YAML::Node& n, const std::vector<std::string_view>& allowed, const char* what) {
  if (!n.IsMap()) throw std::runtime_error(std::string(what) + " must be a map");
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw std::runtime_error("unknown key \"" + key + "\" in " + what);
    }
  }
}

const std::vector<std::string_view> kPodKeys = {
    "pod",      "gpus",     "share",      "gpuIndex",   "models",    "cpu",
    "memoryGi", "queue",    "node",       "phase",      "overQuota", "terminating",
    "gang",     "gangSize", "startedAgo", "createdAgo", "movable",   "controller"};

std::vector<std::string_view> withPodKeys(std::vector<std::string_view> keys) {
  keys.insert(keys.end(), kPodKeys.begin(), kPodKeys.end());
  return keys;
}

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  for (const auto& item : n) out.push_back(item.as<std::string>());
  return out;
}

std::map<std::string, std::string> stringMap(const YAML::Node& n) {
  std::map<std::string, std::string> out;
  for (const auto& kv : n) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  return out;
}

std::map<std::string, std::vector<std::string>> listMap(const YAML::Node& n) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& kv : n) out[kv.first.as<std::string>()] = strings(kv.second);
  return out;
}

policy::Node nodeOf(const YAML::Node& n) {
  onlyKeys(n, {"name", "gpus", "model", "cpu", "memoryGi", "unschedulable"}, "a node");
  policy::Node node;
  node.name = n["name"].as<std::string>();
  node.allocatable = milli(n["gpus"]);
  if (n["model"]) node.gpuModel = n["model"].as<std::string>();
  if (n["cpu"]) node.cpuMilli = milli(n["cpu"]);
  if (n["memoryGi"]) node.memoryBytes = gibibytes(n["memoryGi"]);
  node.unschedulable = n["unschedulable"].as<bool>(false);
  return node;
}

QueueQuota queueOf(const YAML::Node& n) {
  onlyKeys(n,
           {"name", "namespaces", "deserved", "limit", "weight", "reclaimMinRuntime", "parent",
            "priority"},
           "a queue");
  QueueQuota q;
  q.name = n["name"].as<std::string>();
  q.namespaces = n["namespaces"] ? strings(n["namespaces"]) : std::vector<std::string>{q.name};
  if (n["deserved"]) q.gpu.deserved = milli(n["deserved"]);
  if (n["limit"]) q.gpu.limit = milli(n["limit"]);
  if (n["weight"]) q.gpu.overQuotaWeight = n["weight"].as<double>();
  if (n["reclaimMinRuntime"]) q.reclaimMinRuntime = duration(n["reclaimMinRuntime"]);
  if (n["parent"]) q.parent = n["parent"].as<std::string>();
  if (n["priority"]) q.priority = n["priority"].as<int>();
  return q;
}

policy::Pod podOf(const YAML::Node& n, Timestamp now) {
  policy::Pod pod;
  const std::string key = n["pod"].as<std::string>();
  const auto slash = key.find('/');
  if (slash == std::string::npos) throw std::runtime_error("pod \"" + key + "\" is not ns/name");
  pod.ns = key.substr(0, slash);
  pod.name = key.substr(slash + 1);
  pod.uid = uidOf(key);
  if (n["gpus"]) pod.gpus = milli(n["gpus"]);
  if (n["share"]) pod.setGpuShare(milli(n["share"]));
  if (n["gpuIndex"]) pod.gpuIndex = n["gpuIndex"].as<int>();
  if (n["models"]) pod.gpuModels = strings(n["models"]);
  if (n["cpu"]) pod.cpuMilli = milli(n["cpu"]);
  if (n["memoryGi"]) pod.memoryBytes = gibibytes(n["memoryGi"]);
  if (n["queue"]) pod.labels[kQueueLabel] = n["queue"].as<std::string>();
  if (n["node"]) {
    pod.nodeName = n["node"].as<std::string>();
    pod.phase = policy::PodPhase::kRunning;
  }
  if (n["phase"]) pod.phase = policy::parsePhase(n["phase"].as<std::string>());
  if (n["overQuota"].as<bool>(false)) {
    pod.overQuota = true;
    pod.labels[kOverQuotaLabel] = "true";
  }
  pod.terminating = n["terminating"].as<bool>(false);
  if (n["movable"].as<bool>(false)) pod.labels[kMovableLabel] = "true";
  if (n["controller"]) pod.controller = n["controller"].as<std::string>();
  if (n["startedAgo"]) pod.started = now - duration(n["startedAgo"]);
  if (n["createdAgo"]) pod.created = now - duration(n["createdAgo"]);
  if (n["gang"]) {
    pod.labels[kGangLabel] = n["gang"].as<std::string>();
    if (n["gangSize"]) pod.annotations[kGangSizeAnnotation] = n["gangSize"].as<std::string>();
    policy::applyGangLabels(pod);
  }
  return pod;
}

Expect expectOf(const YAML::Node& n) {
  if (!n || n.size() == 0) throw std::runtime_error("a step without expect checks nothing");
  onlyKeys(n,
           {"feasible", "failed", "unresolvable", "refused", "best", "scores", "node", "kind",
            "victims", "reason", "kept", "dropped", "borrowing", "slots", "shares", "allocated",
            "error", "applied"},
           "expect");
  Expect e;
  if (n["feasible"]) e.feasible = strings(n["feasible"]);
  if (n["failed"]) e.failed = stringMap(n["failed"]);
  if (n["unresolvable"]) e.unresolvable = stringMap(n["unresolvable"]);
  if (n["refused"]) e.refused = n["refused"].as<std::string>();
  if (n["best"]) e.best = n["best"].as<std::string>();
  if (n["scores"]) {
    for (const auto& kv : n["scores"]) e.scores[kv.first.as<std::string>()] = kv.second.as<int>();
  }
  if (n["node"]) e.node = n["node"].as<std::string>();
  if (n["kind"]) e.kind = n["kind"].as<std::string>();
  if (n["victims"]) e.victims = strings(n["victims"]);
  if (n["reason"]) e.reason = n["reason"].as<std::string>();
  if (n["kept"]) e.kept = listMap(n["kept"]);
  if (n["dropped"]) e.dropped = stringMap(n["dropped"]);
  if (n["borrowing"]) e.borrowing = n["borrowing"].as<bool>();
  if (n["slots"]) e.slots = strings(n["slots"]);
  for (const auto& kv : n["shares"]) e.shares[kv.first.as<std::string>()] = kv.second.as<double>();
  for (const auto& kv : n["allocated"])
    e.allocated[kv.first.as<std::string>()] = kv.second.as<double>();
  if (n["error"]) e.error = n["error"].as<std::string>();
  if (n["applied"]) e.applied = n["applied"].as<bool>();
  return e;
}

}  // namespace

std::string uidOf(const std::string& key) {
  std::string uid = "uid-" + key;
  uid[uid.find('/')] = '-';
  return uid;
}

Scenario loadScenario(const std::string& path) {
  Scenario sc;
  sc.name = std::filesystem::path(path).stem().string();
  try {
    const YAML::Node root = YAML::LoadFile(path);
    sc.description = root["description"].as<std::string>("");
    sc.now = Timestamp{std::chrono::seconds{1'800'000'000}};
    for (const auto& n : root["nodes"]) sc.nodes.push_back(nodeOf(n));
    for (const auto& n : root["queues"]) sc.queues.push_back(queueOf(n));
    // A parent queue holds no pods: its namespaces default to none.
    for (std::size_t i = 0; i < sc.queues.size(); ++i) {
      const bool isParent = std::any_of(sc.queues.begin(), sc.queues.end(), [&](const auto& q) {
        return q.parent == sc.queues[i].name;
      });
      if (isParent && !root["queues"][i]["namespaces"]) sc.queues[i].namespaces.clear();
    }
    QuotaConfig whole;
    whole.queues = sc.queues;
    if (Status tree = config::validateQueueTree(whole); !tree.isOk())
      throw std::runtime_error(tree.reason());
    onlyKeys(root,
             {"description", "checkCpuMemory", "nodes", "queues", "pods", "reservations", "steps"},
             "the file");
    for (const auto& n : root["pods"]) {
      onlyKeys(n, kPodKeys, "a pod");
      sc.pods.push_back(podOf(n, sc.now));
    }
    for (const auto& n : root["reservations"]) {
      onlyKeys(n, {"node", "gpus", "holder", "queue", "reason"}, "a reservation");
      sc.reservations.push_back({n["node"].as<std::string>(), milli(n["gpus"]),
                                 n["holder"].as<std::string>(), n["queue"].as<std::string>(""),
                                 n["reason"].as<std::string>("reclaim"), ""});
    }
    sc.fit.checkCpuMemory = root["checkCpuMemory"].as<bool>(false);
    for (const auto& n : root["steps"]) {
      onlyKeys(
          n,
          withPodKeys({"verb", "scorer", "proposed", "spared", "quotaYaml", "maxMoves", "expect"}),
          "a step");
      Step step;
      step.verb = n["verb"].as<std::string>();
      if (n["pod"]) step.pod = podOf(n, sc.now);
      if (n["quotaYaml"]) step.quotaYaml = n["quotaYaml"].as<std::string>();
      step.scorer = n["scorer"].as<std::string>("blockfit");
      if (n["proposed"]) step.proposed = listMap(n["proposed"]);
      if (n["spared"]) step.spared = strings(n["spared"]);
      step.maxMoves = n["maxMoves"].as<int>(0);
      step.expect = expectOf(n["expect"]);
      sc.steps.push_back(std::move(step));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return sc;
}

}  // namespace gpufair::scenario
