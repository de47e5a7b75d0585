// load_driver: gpufair under the load kube-scheduler v1 puts on an extender, end to end.
//
// It starts the in-process fake API server (tests/k8s/fake_apiserver.h), loads N nodes with
// nvidia.com/gpu (and optionally E bound pods already running on them), creates M pending one-GPU
// pods, then starts `gpufair serve --kubeconfig` against it as a child process and, once /readyz
// says ready, schedules the M pods the way kube-scheduler's extender client does
// (pkg/scheduler/extender.go, nodeCacheCapable):
//   - one scheduling loop, one pod at a time: POST /filter with the NodeNames of the nodes
//     kube-scheduler itself finds feasible (enough free nvidia.com/gpu, its own assumed pods
//     counted); POST /prioritize with the survivors only when more than one is left (with one,
//     kube-scheduler skips scoring altogether); pick the highest score;
//   - binding in the background, as kube-scheduler's binding goroutines: POST /bind on one of
//     --bind-workers threads, each with its own keep-alive connection; gpufair posts the Binding to
//     the fake API server and its watch confirms it.
// --write-latency-ms=N makes the fake API server answer every write (Bindings, PATCHes) after N ms,
// as a real kube-apiserver does after its etcd write; --serve-flags="--a=1 --b=2" adds serve flags.
// Every connection is HTTP/1.1 keep-alive. At the end it checks that every pod is bound in the fake
// API server and prints one `RESULT` line: pods/s, per-pod extender time (filter + prioritize +
// bind round trips) p50/p99, /filter's p50/p99 (what kube-scheduler's serial loop waits on),
// the extender's CPU per pod (cpu_us_per_pod over the run: its threads' on-CPU nanoseconds from
// /proc/<pid>/task/*/schedstat, cpu_clock=threads, or /proc/<pid>/stat's 10 ms ticks when a thread
// came or went, cpu_clock=ticks; named gpufair_cpu_us_per_pod before the limit server could be
// driven; cpu_ticks_us_per_pod is always the ticks' figure) and its resident memory.
// bench/load_driver.sh runs the matrix of sizes and modes.
// --limit-server=PATH [--limit-server-mode=fixed|simdjson] drives the shared limit server
// (../shared/bench/limit-server.cpp: Beast on 2 threads, no policy, no Binding, no watch) instead
// of gpufair, with the same calls per pod: its CPU per pod is the bare HTTP cost of a pod's
// webhook calls on this machine, the reference gpufair's is compared with in the same session.
// Its answers carry no decision, so the loop picks the first feasible node itself, never calls
// /prioritize, and no pod is bound in the fake API server.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <simdjson.h>

#include "k8s/fake_apiserver.h"
#include "load_driver_support.h"

namespace gpufair::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
  std::string gpufair = GPUFAIR_BINARY;
  std::string mode = "all";
  int nodes = 500;
  int pods = 2000;
  int existingPods = 0;     // bound pods already in the cluster, spread over the nodes
  int existingGpuPods = 0;  // of those, how many hold one GPU (the rest hold none)
  int gpusPerNode = 8;
  int bindWorkers = 16;
  // The fake API server answers every write (the Binding, PATCHes) after this long: a real
  // kube-apiserver's etcd write takes ms, the in-process fake's ~0.1 ms.
  int writeLatencyMs = 0;
  // The fake API server over TLS (its test CA in the kubeconfig), as every real kube-apiserver is:
  // the Binding, its answer and the watch events then go through gpufair's TLS streams.
  bool apiTls = false;
  std::string threads = "1";  // gpufair --threads (serve's default)
  std::string logLevel = "info";
  bool quota = false;  // a quota ConfigMap giving the pods' namespace every GPU
  std::string workDir = "/tmp/gpufair-load-driver";
  std::string serveFlags;  // more flags for gpufair serve, separated by spaces
  std::string perfOut;  // set: `perf record -g` gpufair while the pods are driven, into this file
  std::string limitServer;                // set: drive this limit-server binary instead of gpufair
  std::string limitServerMode = "fixed";  // its mode: fixed (reply ignores the body) or simdjson
  // > 0: the pending pods ask for this many thousandths of one GPU (gpufair.io/gpu-milli, which the
  // shipped scheduler config marks ignoredByScheduler) instead of one whole nvidia.com/gpu.
  int gpuMilli = 0;
};

Options parseOptions(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      throw std::runtime_error("arguments are --name=value, not " + arg);
    }
    kv[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  auto take = [&](const char* name, auto& out) {
    auto it = kv.find(name);
    if (it == kv.end()) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(out)>, int>) {
      out = std::stoi(it->second);
    } else if constexpr (std::is_same_v<std::decay_t<decltype(out)>, bool>) {
      out = it->second == "true" || it->second == "1";
    } else {
      out = it->second;
    }
    kv.erase(it);
  };
  take("gpufair", o.gpufair);
  take("mode", o.mode);
  take("nodes", o.nodes);
  take("pods", o.pods);
  take("existing-pods", o.existingPods);
  take("existing-gpu-pods", o.existingGpuPods);
  take("gpus-per-node", o.gpusPerNode);
  take("bind-workers", o.bindWorkers);
  take("write-latency-ms", o.writeLatencyMs);
  take("api-tls", o.apiTls);
  take("threads", o.threads);
  take("log-level", o.logLevel);
  take("quota", o.quota);
  take("work-dir", o.workDir);
  take("perf-out", o.perfOut);
  take("serve-flags", o.serveFlags);
  take("limit-server", o.limitServer);
  take("limit-server-mode", o.limitServerMode);
  take("gpu-milli", o.gpuMilli);
  if (!kv.empty()) throw std::runtime_error("unknown option --" + kv.begin()->first);
  if (o.gpuMilli < 0 || o.gpuMilli >= 1000) {
    throw std::runtime_error("--gpu-milli is 1..999 (0: whole GPUs), not " +
                             std::to_string(o.gpuMilli));
  }
  if (o.limitServerMode != "fixed" && o.limitServerMode != "simdjson") {
    throw std::runtime_error("--limit-server-mode is fixed or simdjson, not " + o.limitServerMode);
  }
  return o;
}

std::string nodeName(int i) {
  return "node-" + std::to_string(i);
}

// The fake cluster: nodes, running pods, the pending pods (their JSON as kube-scheduler sends it).
std::vector<std::string> loadCluster(k8s::fake::FakeApiServer& api, const Options& o,
                                     std::vector<int>& freeGpus) {
  freeGpus.assign(o.nodes, o.gpusPerNode);
  for (int i = 0; i < o.nodes; ++i)
    api.create("/api/v1/nodes", k8s::fake::makeNode(nodeName(i), o.gpusPerNode));
  for (int i = 0; i < o.existingPods; ++i) {
    const int node = i % o.nodes;
    json pod = k8s::fake::makePod("running", "r-" + std::to_string(i), nodeName(node));
    if (i < o.existingGpuPods && freeGpus[node] > 0) {
      --freeGpus[node];
    } else {
      pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "100m"}}}};
    }
    api.create("/api/v1/namespaces/running/pods", std::move(pod));
  }
  if (o.quota) {
    const std::string queues = "queues:\n- name: bench\n  namespaces: [bench]\n  gpu: {deserved: " +
                               std::to_string(o.nodes * o.gpusPerNode) + "}\n";
    api.create("/api/v1/namespaces/gpufair-system/configmaps",
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata",
                 {{"name", "queues"},
                  {"namespace", "gpufair-system"},
                  {"labels", {{"gpufair.io/quota-config", "true"}}}}},
                {"data", {{"queues.yaml", queues}}}});
  }
  std::vector<std::string> pending;
  pending.reserve(o.pods);
  for (int i = 0; i < o.pods; ++i) {
    json pod = k8s::fake::makePod("bench", "p-" + std::to_string(i));
    if (o.gpuMilli > 0) {
      pod["spec"]["containers"][0]["resources"] = {
          {"limits", {{"gpufair.io/gpu-milli", std::to_string(o.gpuMilli)}}}};
    }
    pending.push_back(api.create("/api/v1/namespaces/bench/pods", std::move(pod)).dump());
  }
  return pending;
}

std::string namesJson(const std::vector<int>& nodes) {
  std::string out = "[";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) out += ',';
    out += '"' + nodeName(nodes[i]) + '"';
  }
  return out + "]";
}

struct RunTotals {
  int scheduled = 0;
  int unschedulable = 0;
  std::string firstRefusal;
};

// kube-scheduler's scheduling loop, one pod at a time. Returns the node index chosen, or -1.
// With the limit server (o.limitServer) the answer decides nothing: the first feasible node is
// taken. A fractional pod's gpufair.io/gpu-milli is ignoredByScheduler: kube-scheduler finds every
// node feasible and counts nothing for it.
int schedulePod(KeepAliveClient& client, simdjson::dom::parser& parser, const std::string& pod,
                std::vector<int>& freeGpus, std::mutex& freeMu, PodTiming& timing,
                RunTotals& totals, const Options& o) {
  const bool reference = !o.limitServer.empty();
  const int wholeGpus = o.gpuMilli > 0 ? 0 : 1;
  std::vector<int> feasible;
  {
    std::lock_guard lock(freeMu);
    for (std::size_t n = 0; n < freeGpus.size(); ++n) {
      if (freeGpus[n] >= wholeGpus) feasible.push_back(static_cast<int>(n));
    }
  }
  if (feasible.empty()) return -1;
  const std::string args = "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":";
  auto start = Clock::now();
  HttpAnswer answer = client.post("/filter", args + namesJson(feasible) + "}");
  timing.filter = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  if (reference) {
    if (answer.status != 200) throw std::runtime_error("/filter answered " + answer.error);
    std::lock_guard lock(freeMu);
    freeGpus[feasible.front()] -= wholeGpus;
    ++totals.scheduled;
    return feasible.front();
  }
  simdjson::dom::element doc;
  simdjson::dom::array names;
  if (answer.status != 200 || parser.parse(answer.body).get(doc) || doc["NodeNames"].get(names)) {
    throw std::runtime_error("/filter answered " + std::to_string(answer.status) + " " +
                             answer.error + answer.body.substr(0, 300));
  }
  std::vector<std::string> passed;
  for (auto name : names) passed.emplace_back(std::string_view(name));
  if (passed.empty()) {
    if (totals.firstRefusal.empty()) totals.firstRefusal = answer.body.substr(0, 300);
    ++totals.unschedulable;
    return -1;
  }
  std::string chosen = passed.front();
  if (passed.size() > 1) {
    std::string list = "[";
    for (std::size_t i = 0; i < passed.size(); ++i) list += (i ? ",\"" : "\"") + passed[i] + '"';
    start = Clock::now();
    answer = client.post("/prioritize", args + list + "]}");
    timing.prioritize = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    timing.prioritized = true;
    simdjson::dom::array scores;
    if (answer.status != 200 || parser.parse(answer.body).get(scores)) {
      throw std::runtime_error("/prioritize answered " + std::to_string(answer.status));
    }
    std::int64_t best = -1;
    for (auto entry : scores) {
      const std::int64_t score = entry["Score"].get_int64().value_unsafe();
      if (score > best) {
        best = score;
        chosen = std::string(entry["Host"].get_string().value_unsafe());
      }
    }
  }
  const int node = std::stoi(chosen.substr(5));  // "node-<i>"
  std::lock_guard lock(freeMu);
  freeGpus[node] -= wholeGpus;  // kube-scheduler assumes the pod before binding it
  ++totals.scheduled;
  return node;
}

std::vector<std::string> serveArgs(const Options& o, const std::string& kubeconfig) {
  std::vector<std::string> args{"serve",
                                "--kubeconfig=" + kubeconfig,
                                "--listen=127.0.0.1:0",
                                "--metrics-listen=off",
                                "--filter-mode=" + o.mode,
                                "--threads=" + o.threads,
                                "--log-level=" + o.logLevel};
  for (std::size_t at = 0; at < o.serveFlags.size();) {
    const std::size_t space = std::min(o.serveFlags.find(' ', at), o.serveFlags.size());
    if (space > at) args.push_back(o.serveFlags.substr(at, space - at));
    at = space + 1;
  }
  return args;
}

int run(const Options& o) {
  std::filesystem::create_directories(o.workDir);
  k8s::fake::FakeApiServerOptions apiOptions;
  apiOptions.historyLimit = 10'000'000;
  apiOptions.writeLatency = std::chrono::milliseconds(o.writeLatencyMs);
  apiOptions.tls = o.apiTls;
  k8s::fake::FakeApiServer api(apiOptions);
  api.start();
  std::vector<int> freeGpus;
  auto loadStart = Clock::now();
  const std::vector<std::string> pods = loadCluster(api, o, freeGpus);
  std::fprintf(stderr, "load_driver: %d nodes, %d running pods, %d pending pods loaded in %.1f s\n",
               o.nodes, o.existingPods, o.pods,
               std::chrono::duration<double>(Clock::now() - loadStart).count());

  const bool reference = !o.limitServer.empty();
  std::optional<GpufairChild> child;
  std::uint16_t port = 0;
  if (reference) {
    port = freePort();
    child.emplace(o.limitServer, std::vector<std::string>{std::to_string(port), o.limitServerMode},
                  o.workDir + "/limit-server.log");
  } else {
    child.emplace(
        o.gpufair,
        serveArgs(
            o, writeKubeconfig(api.url(), o.apiTls ? k8s::fake::testPki().caPem : "", o.workDir)),
        o.workDir + "/gpufair.log");
    port = child->waitForPort(std::chrono::seconds{60});
  }
  KeepAliveClient client(port);
  const auto readyStart = Clock::now();
  while (client.get("/readyz").status != 200) {
    if (child->exited())
      throw std::runtime_error("the extender exited; see its log in " + o.workDir);
    if (Clock::now() - readyStart > std::chrono::minutes(5)) throw std::runtime_error("not ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double readySeconds = std::chrono::duration<double>(Clock::now() - loadStart).count();
  const ProcessUsage before = processUsage(child->pid());
  api.clearRequests();

  std::optional<GpufairChild> perf;
  if (!o.perfOut.empty()) {
    perf.emplace("/usr/bin/perf",
                 std::vector<std::string>{"record", "-e", "cpu-clock", "-F", "1999", "-g", "-p",
                                          std::to_string(child->pid()), "-o", o.perfOut},
                 o.workDir + "/perf.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::vector<PodTiming> timings(o.pods);
  std::mutex freeMu;
  RunTotals totals;
  simdjson::dom::parser parser;
  std::vector<std::string> uids;
  for (const auto& pod : pods) uids.push_back(json::parse(pod)["metadata"]["uid"]);
  const auto start = Clock::now();
  {
    Binders binders(port, o.bindWorkers, timings, freeGpus, freeMu);
    for (int i = 0; i < o.pods; ++i) {
      const int node =
          schedulePod(client, parser, pods[i], freeGpus, freeMu, timings[i], totals, o);
      if (node < 0) continue;
      binders.submit({i, node,
                      "{\"PodName\":\"p-" + std::to_string(i) +
                          "\",\"PodNamespace\":\"bench\",\"PodUID\":\"" + uids[i] +
                          "\",\"Node\":\"" + nodeName(node) + "\"}"});
    }
    binders.finish();
    if (binders.failures() > 0) {
      std::fprintf(stderr, "load_driver: %d binds failed, first: %s\n", binders.failures(),
                   binders.firstError().c_str());
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const ProcessUsage after = processUsage(child->pid());
  perf.reset();  // SIGTERM: perf writes its file and exits

  std::vector<double> perPod;
  std::vector<double> filters;  // the serial scheduling loop waits on these
  int bound = 0;
  int prioritized = 0;
  for (const auto& t : timings) {
    if (!t.bound) continue;
    ++bound;
    prioritized += t.prioritized ? 1 : 0;
    perPod.push_back(t.filter + t.prioritize + t.bind);
    filters.push_back(t.filter);
  }
  const std::size_t bindings = api.requests("POST", "/api/v1/namespaces/bench/pods").size();
  int boundInApi = 0;
  int withGpuIndex = 0;  // fractional pods: the GPU chosen rides on the Binding as an annotation
  for (const auto& pod : api.list("/api/v1/namespaces/bench/pods")) {
    if (!pod["spec"].contains("nodeName")) continue;
    ++boundInApi;
    withGpuIndex += pod["metadata"].contains("annotations") &&
                            pod["metadata"]["annotations"].contains("gpufair.io/gpu-index")
                        ? 1
                        : 0;
  }
  if (totals.unschedulable > 0) {
    std::fprintf(stderr, "load_driver: %d pods unschedulable, first: %s\n", totals.unschedulable,
                 totals.firstRefusal.c_str());
  }
  const double onePod = bound > 0 ? 1.0 / bound : 0;
  // The threads' nanosecond clocks when the same threads ran throughout (a thread gone takes its
  // time with it), else /proc/<pid>/stat's ticks.
  const bool onCpuClock = before.threadsOnCpuSeconds > 0 && after.threadIds == before.threadIds &&
                          after.threadsOnCpuSeconds >= before.threadsOnCpuSeconds;
  const double ticksPerPodUs = (after.cpuSeconds - before.cpuSeconds) * 1e6 * onePod;
  const double cpuPerPodUs =
      onCpuClock ? (after.threadsOnCpuSeconds - before.threadsOnCpuSeconds) * 1e6 * onePod
                 : ticksPerPodUs;
  const std::string extender =
      reference ? "limit-server-" + o.limitServerMode : std::string("gpufair");
  std::printf(
      "RESULT extender=%s mode=%s nodes=%d existing_pods=%d pods=%d bound=%d bound_in_api=%d "
      "api_writes=%zu prioritized=%d seconds=%.2f pods_per_s=%.0f extender_us_p50=%.0f "
      "extender_us_p99=%.0f filter_us_p50=%.0f filter_us_p99=%.0f cpu_us_per_pod=%.1f "
      "rss_mib=%.0f peak_rss_mib=%.0f ready_s=%.1f write_latency_ms=%d gpu_milli=%d "
      "with_gpu_index=%d system_us_per_pod=%.1f voluntary_switches_per_pod=%.2f "
      "involuntary_switches_per_pod=%.2f cpu_clock=%s cpu_ticks_us_per_pod=%.1f\n",
      extender.c_str(), o.mode.c_str(), o.nodes, o.existingPods, o.pods, bound, boundInApi,
      bindings, prioritized, seconds, bound / seconds, quantile(perPod, 0.5),
      quantile(perPod, 0.99), quantile(filters, 0.5), quantile(filters, 0.99), cpuPerPodUs,
      after.rssMiB, after.peakRssMiB, readySeconds, o.writeLatencyMs, o.gpuMilli, withGpuIndex,
      (after.systemSeconds - before.systemSeconds) * 1e6 * onePod,
      static_cast<double>(after.voluntarySwitches - before.voluntarySwitches) * onePod,
      static_cast<double>(after.involuntarySwitches - before.involuntarySwitches) * onePod,
      onCpuClock ? "threads" : "ticks", ticksPerPodUs);
  // The limit server posts no Binding: only gpufair's pods are looked for in the API server.
  const bool apiAgrees =
      reference || (boundInApi == o.pods && (o.gpuMilli == 0 || withGpuIndex == o.pods));
  return bound == o.pods && apiAgrees ? 0 : 1;
}

}  // namespace
}  // namespace gpufair::bench

int main(int argc, char** argv) {
  try {
    return gpufair::bench::run(gpufair::bench::parseOptions(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_driver: %s\n", e.what());
    return 2;
  }
}
