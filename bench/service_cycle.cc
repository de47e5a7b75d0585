// service_cycle: gpufair's own work for one scheduled pod, without sockets. The load driver
// (load_driver.cc) measures a pod's whole cost in `gpufair serve`, and most of that is the
// kernel's: loopback TCP, wake-ups, the API server's share of each send (bench/RESULTS.md,
// "The floor under gpufair's CPU per pod"). This takes the kernel away and keeps everything that
// is gpufair's own, on one thread, as serve does it per pod:
//   - /filter: the request body exactly as kube-scheduler sends it (the pod's JSON as the fake API
//     server stores it, NodeNames = the nodes kube-scheduler finds feasible) through
//     ExtenderService::filter();
//   - /bind: the ExtenderBindingArgs through ExtenderService::bind(), the Binder answering at once
//     (the Binding POST is the kernel's and the API server's);
//   - the watch: the bound pod's MODIFIED event line through the reflector's WatchDecoder and
//     PodSink, as the pods watch delivers it.
// The nodes and pending pods are listed first, through the same sinks. Printed: thread CPU time
// per pod for each step and in all (user and system), and the pods bound.
//
// Usage: service_cycle [--nodes=N] [--pods=M] [--mode=best|all|top-N] [--gpus-per-node=G]
//                      [--quota=true|false] [--repeat=R]
// --repeat runs the whole cycle R times on fresh mirrors and prints each.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <simdjson.h>
#include <sys/resource.h>
#include <time.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/common/clock.h"
#include "gpufair/config/quota.h"
#include "gpufair/k8s/sinks.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/state/mirror.h"

#include "k8s/fake_apiserver.h"
#include "reflector_decode.h"

namespace {

using namespace gpufair;
using nlohmann::json;

struct Options {
  int nodes = 2000;
  int pods = 5000;
  int gpusPerNode = 8;
  std::string mode = "best";
  bool quota = true;
  int repeat = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      throw std::runtime_error("flags are --name=value, not " + arg);
    }
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    if (name == "nodes") {
      o.nodes = std::stoi(value);
    } else if (name == "pods") {
      o.pods = std::stoi(value);
    } else if (name == "gpus-per-node") {
      o.gpusPerNode = std::stoi(value);
    } else if (name == "mode") {
      o.mode = value;
    } else if (name == "quota") {
      o.quota = value == "true" || value == "1";
    } else if (name == "repeat") {
      o.repeat = std::stoi(value);
    } else {
      throw std::runtime_error("unknown flag --" + name);
    }
  }
  if (o.nodes < 1 || o.pods < 1 || o.gpusPerNode < 1 || o.repeat < 1) {
    throw std::runtime_error("--nodes, --pods, --gpus-per-node and --repeat are at least 1");
  }
  return o;
}

// User and system CPU time of the calling thread, in µs.
struct Cpu {
  double user = 0;
  double system = 0;
  static Cpu now() {
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return {static_cast<double>(usage.ru_utime.tv_sec) * 1e6 + usage.ru_utime.tv_usec,
            static_cast<double>(usage.ru_stime.tv_sec) * 1e6 + usage.ru_stime.tv_usec};
  }
};

double threadNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

std::string nodeName(int i) {
  return "node-" + std::to_string(i);
}

// The pod as the API server stores it (uid, resourceVersion, creationTimestamp).
json storedPod(int i, std::uint64_t resourceVersion) {
  json pod = k8s::fake::makePod("bench", "p-" + std::to_string(i));
  pod["metadata"]["uid"] = "uid-p-" + std::to_string(i);
  pod["metadata"]["resourceVersion"] = std::to_string(resourceVersion);
  pod["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z";
  return pod;
}

// The binder: the Binding is the API server's; here it succeeds at once and the pod is confirmed
// when its watch event arrives, as with k8s::KubeBinder.
class AcceptingBinder final : public state::Binder {
 public:
  Status bind(const policy::Pod& /*pod*/, std::string_view /*node*/, bool /*overQuota*/) override {
    ++binds;
    return Status::ok();
  }
  bool confirmsImmediately() const override { return false; }
  int binds = 0;
};

struct Spent {
  double filterNs = 0;
  double bindNs = 0;
  double watchNs = 0;
  Cpu before;
  Cpu after;
  int bound = 0;
};

Spent runOnce(const Options& o, const std::shared_ptr<const policy::Scorer>& scorer,
              const api::FilterMode& mode) {
  state::Mirror mirror(std::make_shared<SystemClock>());
  mirror.setScorer(scorer);
  k8s::NodeSink nodeSink(mirror);
  k8s::PodSink podSink(mirror);
  std::uint64_t resourceVersion = 1;
  {
    std::vector<std::string> nodes;
    for (int i = 0; i < o.nodes; ++i) nodes.push_back(k8s::fake::makeNode(nodeName(i)).dump());
    nodeSink.replace(nodes);
  }
  std::vector<std::string> pods;
  pods.reserve(static_cast<std::size_t>(o.pods));
  for (int i = 0; i < o.pods; ++i) pods.push_back(storedPod(i, ++resourceVersion).dump());
  podSink.replace(pods);
  if (o.quota) {
    auto quota =
        config::parseQuotaYaml("queues:\n- name: bench\n  namespaces: [bench]\n  gpu: {deserved: " +
                                   std::to_string(o.nodes * o.gpusPerNode) + "}\n",
                               "bench");
    if (!quota) throw std::runtime_error(quota.error());
    mirror.setQuotaConfig(*quota);
  }
  AcceptingBinder binder;
  api::ExtenderService service(mirror, *scorer, binder);
  service.setFilterMode(mode);
  k8s::WatchDecoder decoder;
  simdjson::dom::parser answers;
  std::vector<int> freeGpus(static_cast<std::size_t>(o.nodes), o.gpusPerNode);

  Spent spent;
  spent.before = Cpu::now();
  for (int i = 0; i < o.pods; ++i) {
    // kube-scheduler: its own filters leave the nodes with a GPU free.
    std::string body = "{\"Pod\":" + pods[static_cast<std::size_t>(i)] + ",\"NodeNames\":[";
    bool first = true;
    for (int n = 0; n < o.nodes; ++n) {
      if (freeGpus[static_cast<std::size_t>(n)] <= 0) continue;
      body += first ? "\"" : ",\"";
      body += nodeName(n) + "\"";
      first = false;
    }
    body += "]}";
    double t = threadNs();
    const api::Response filtered = service.filter(body);
    spent.filterNs += threadNs() - t;
    simdjson::dom::element doc;
    simdjson::dom::array names;
    if (filtered.status != 200 || answers.parse(filtered.body).get(doc) ||
        doc["NodeNames"].get(names) || names.size() == 0) {
      throw std::runtime_error("/filter answered " + std::to_string(filtered.status) + ": " +
                               filtered.body.substr(0, 300));
    }
    const std::string chosen(names.at(0).get_string().value());
    --freeGpus[static_cast<std::size_t>(std::stoi(chosen.substr(5)))];

    const std::string bindBody = "{\"PodName\":\"p-" + std::to_string(i) +
                                 "\",\"PodNamespace\":\"bench\",\"PodUID\":\"uid-p-" +
                                 std::to_string(i) + "\",\"Node\":\"" + chosen + "\"}";
    t = threadNs();
    const api::Response bound = service.bind(bindBody);
    spent.bindNs += threadNs() - t;
    if (bound.status != 200 || bound.body.find("\"Error\":\"\"") == std::string::npos) {
      throw std::runtime_error("/bind answered " + bound.body.substr(0, 300));
    }
    ++spent.bound;

    json event = json::parse(pods[static_cast<std::size_t>(i)]);
    event["spec"]["nodeName"] = chosen;
    event["metadata"]["resourceVersion"] = std::to_string(++resourceVersion);
    const std::string line = "{\"type\":\"MODIFIED\",\"object\":" + event.dump() + "}";
    t = threadNs();
    auto decoded = decoder.decode(line);
    if (!decoded) throw std::runtime_error("watch line: " + decoded.error());
    podSink.changed(k8s::ReflectorSink::Change::kModified, decoded->object, decoded->parsed);
    spent.watchNs += threadNs() - t;
  }
  spent.after = Cpu::now();
  if (binder.binds != spent.bound) throw std::runtime_error("binds and bound pods differ");
  return spent;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    auto mode = api::FilterMode::parse(o.mode);
    if (!mode) throw std::runtime_error(mode.error());
    const std::shared_ptr<const policy::Scorer> scorer = policy::makeScorer(policy::kDefaultScorer);
    for (int r = 0; r < o.repeat; ++r) {
      const Spent s = runOnce(o, scorer, *mode);
      const double pods = s.bound;
      // Thread CPU of the timed steps only (building kube-scheduler's request bodies is not
      // gpufair's); user and system over the whole loop, bodies included.
      std::printf(
          "RESULT mode=%s nodes=%d pods=%d bound=%d us_per_pod=%.1f filter_us=%.1f bind_us=%.1f "
          "watch_us=%.1f loop_user_us_per_pod=%.1f loop_system_us_per_pod=%.1f\n",
          mode->name().c_str(), o.nodes, o.pods, s.bound,
          (s.filterNs + s.bindNs + s.watchNs) / 1e3 / pods, s.filterNs / 1e3 / pods,
          s.bindNs / 1e3 / pods, s.watchNs / 1e3 / pods, (s.after.user - s.before.user) / pods,
          (s.after.system - s.before.system) / pods);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "service_cycle: %s\n", e.what());
    return 2;
  }
}
