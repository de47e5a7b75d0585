// mirror_bench: what the Kubernetes side costs gpufair (issue 3's speed targets).
//   relist: a full paginated LIST of N nodes + M pods (pages of 500, as the reflector asks for
//   them)
//           decoded and applied to the Mirror, then the first snapshot built. Target: 5,000 nodes
//           + 150,000 pods under 2 s, resident memory under 500 MB.
//   ingest: watch event lines (MODIFIED / ADDED / DELETED pods) decoded and applied as the
//           reflector's watch loop does. Target: at least 100,000 pod events/s.
// The objects are realistic API server JSON (managed fields, status, init containers: ~4.5 KB a
// pod), made from tests/codec/testdata. Generation is not timed; pages are made one at a time so
// the process's peak memory is the mirror's, not the generator's.
//
// Usage: mirror_bench [--nodes N] [--pods M] [--gpu-share PCT] [--events E] [--snapshot-every K]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <time.h>

#include "gpufair/common/clock.h"
#include "gpufair/k8s/sinks.h"
#include "gpufair/state/mirror.h"

#include "reflector_decode.h"

namespace {

using gpufair::k8s::ListDecoder;
using gpufair::k8s::WatchDecoder;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  int nodes = 5000;
  int pods = 150000;
  int gpuSharePercent = 25;  // share of pods that request GPUs (the rest are CPU pods)
  int events = 300000;
  int snapshotEvery = 0;  // 0: no snapshot during ingest
};

json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    std::exit(1);
  }
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// Peak and current resident memory of this process (VmHWM, VmRSS), in MB.
std::pair<double, double> residentMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  double hwm = 0;
  double rss = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::atof(line.c_str() + 6) / 1024.0;
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024.0;
  }
  return {hwm, rss};
}

class Generator {
 public:
  Generator(const std::string& dir, const Options& options)
      : pod_(readJson(dir + "/pod.json")), node_(readJson(dir + "/node.json")), options_(options) {
    pod_["metadata"].erase("labels");  // no queue label, no over-quota label: namespace queues
  }

  std::string node(int i) const {
    json n = node_;
    const std::string name = "gpu-node-" + std::to_string(i);
    n["metadata"]["name"] = name;
    n["metadata"]["uid"] = "node-uid-" + std::to_string(i);
    n["metadata"]["labels"]["kubernetes.io/hostname"] = name;
    return n.dump();
  }

  // Pod i: GPU pods (1, 2 or 4 GPUs) are bound round-robin to nodes except every tenth, which
  // is pending; CPU pods are bound and ask for no GPU.
  std::string pod(int i, int version, const char* phase = "Running") const {
    json p = pod_;
    auto& meta = p["metadata"];
    meta["name"] = "pod-" + std::to_string(i);
    meta["namespace"] = "team-" + std::to_string(i % 20);
    meta["uid"] = "pod-uid-" + std::to_string(i);
    meta["resourceVersion"] = std::to_string(1000 + version);
    const bool gpu = (i % 100) < options_.gpuSharePercent;
    auto& spec = p["spec"];
    for (auto* list : {&spec["containers"], &spec["initContainers"]}) {
      for (auto& c : *list) {
        for (const char* kind : {"requests", "limits"}) {
          auto& r = c["resources"][kind];
          if (!r.contains("nvidia.com/gpu")) continue;
          if (gpu && list == &spec["containers"]) {
            r["nvidia.com/gpu"] = std::to_string(1 << (i % 3));
          } else {
            r.erase("nvidia.com/gpu");
          }
        }
      }
    }
    if (gpu && i % 10 == 9) {
      spec.erase("nodeName");
      p["status"] = {{"phase", "Pending"}};
    } else {
      spec["nodeName"] = "gpu-node-" + std::to_string(i % options_.nodes);
      p["status"]["phase"] = phase;
    }
    return p.dump();
  }

  static std::string listBody(const char* kind, const std::vector<std::string>& items,
                              const std::string& continueToken) {
    std::string body = std::string("{\"kind\":\"") + kind +
                       "\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1000\"";
    if (!continueToken.empty()) body += ",\"continue\":\"" + continueToken + "\"";
    body += "},\"items\":[";
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) body += ',';
      body += items[i];
    }
    return body + "]}";
  }

 private:
  json pod_;
  json node_;
  Options options_;
};

// CPU time of this thread: the machine is shared, so wall time alone overstates the cost.
double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Lists `count` objects made by `make` through ListDecoder and the sink's page-wise path; returns
// the seconds spent decoding and applying (generation excluded).
struct Spent {
  double wall = 0;
  double cpu = 0;
};

template <typename Make>
Spent list(const char* kind, int count, Make make, gpufair::k8s::ReflectorSink& sink) {
  constexpr int kPage = 500;
  ListDecoder decoder;
  std::vector<std::string> items;
  std::vector<std::string> page;
  Clock::duration spent{};
  double cpu = 0;
  sink.beginList();
  for (int start = 0; start < count; start += kPage) {
    page.clear();
    for (int i = start; i < std::min(count, start + kPage); ++i) page.push_back(make(i));
    std::string body = Generator::listBody(
        kind, page, start + kPage < count ? "page" + std::to_string(start) : "");
    const auto t0 = Clock::now();
    const double c0 = threadCpuSeconds();
    auto decoded = decoder.decode(body, items);
    if (!decoded) {
      std::cerr << "list decode failed: " << decoded.error() << "\n";
      std::exit(1);
    }
    sink.listPage(items);
    items.clear();
    spent += Clock::now() - t0;
    cpu += threadCpuSeconds() - c0;
  }
  const auto t0 = Clock::now();
  const double c0 = threadCpuSeconds();
  sink.endList();
  spent += Clock::now() - t0;
  cpu += threadCpuSeconds() - c0;
  return {seconds(spent), cpu};
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--nodes")
      options.nodes = value;
    else if (flag == "--pods")
      options.pods = value;
    else if (flag == "--gpu-share")
      options.gpuSharePercent = value;
    else if (flag == "--events")
      options.events = value;
    else if (flag == "--snapshot-every")
      options.snapshotEvery = value;
    else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  Generator gen(GPUFAIR_TESTDATA_DIR, options);
  gpufair::state::Mirror mirror(std::make_shared<gpufair::SystemClock>());
  gpufair::k8s::NodeSink nodeSink(mirror);
  gpufair::k8s::PodSink podSink(mirror);

  const auto before = residentMb();
  const Spent nodes = list(
      "NodeList", options.nodes, [&](int i) { return gen.node(i); }, nodeSink);
  const Spent pods = list(
      "PodList", options.pods, [&](int i) { return gen.pod(i, 0); }, podSink);
  auto t0 = Clock::now();
  double c0 = threadCpuSeconds();
  auto snapshot = mirror.snapshot();
  const Spent first{seconds(Clock::now() - t0), threadCpuSeconds() - c0};
  const auto afterList = residentMb();
  std::printf(
      "relist: %d nodes + %d pods (%d%% with GPUs): %.3f s wall, %.3f s CPU "
      "(CPU: nodes %.3f s, pods %.3f s, first snapshot %.3f s)\n",
      options.nodes, options.pods, options.gpuSharePercent, nodes.wall + pods.wall + first.wall,
      nodes.cpu + pods.cpu + first.cpu, nodes.cpu, pods.cpu, first.cpu);
  std::printf(
      "relist: resident memory %.0f MB before, %.0f MB after, peak %.0f MB; "
      "mirror holds %zu nodes, %zu pending pods, %.0f GPUs allocated\n",
      before.second, afterList.second, afterList.first, snapshot->nodes().size(),
      snapshot->pending().size(), static_cast<double>(snapshot->allocated()) / 1000.0);
  snapshot.reset();

  // Watch events: a pool of lines cycled (MODIFIED status updates of listed pods, ADDED new
  // pods, DELETED ones, in 8:1:1), each decoded and dispatched as the reflector's watch loop does.
  constexpr int kPool = 20000;
  std::vector<std::string> lines;
  lines.reserve(kPool);
  for (int k = 0; k < kPool; ++k) {
    const int kind = k % 10;
    if (kind == 8) {
      lines.push_back("{\"type\":\"ADDED\",\"object\":" + gen.pod(options.pods + k, 1) + "}");
    } else if (kind == 9) {
      lines.push_back("{\"type\":\"DELETED\",\"object\":" + gen.pod(options.pods + k - 1, 2) + "}");
    } else {
      lines.push_back(
          "{\"type\":\"MODIFIED\",\"object\":" +
          gen.pod((k * 7919) % options.pods, 3 + k, k % 50 == 0 ? "Succeeded" : "Running") + "}");
    }
  }
  WatchDecoder decoder;
  std::size_t bytes = 0;
  t0 = Clock::now();
  c0 = threadCpuSeconds();
  for (int e = 0; e < options.events; ++e) {
    const std::string& line = lines[static_cast<std::size_t>(e % kPool)];
    bytes += line.size();
    auto event = decoder.decode(line);
    if (!event) {
      std::cerr << "watch decode failed: " << event.error() << "\n";
      return 1;
    }
    if (event->type == "ADDED") {
      podSink.added(event->object);
    } else if (event->type == "MODIFIED") {
      podSink.modified(event->object);
    } else if (event->type == "DELETED") {
      podSink.deleted(event->object);
    }
    if (options.snapshotEvery > 0 && (e + 1) % options.snapshotEvery == 0) mirror.snapshot();
  }
  const double ingestSeconds = seconds(Clock::now() - t0);
  const double ingestCpu = threadCpuSeconds() - c0;
  const auto afterIngest = residentMb();
  std::printf(
      "ingest: %d pod events (%.1f KB each): %.3f s wall = %.0f events/s; %.3f s CPU = "
      "%.0f events/s, %.0f MB/s%s\n",
      options.events, static_cast<double>(bytes) / options.events / 1024.0, ingestSeconds,
      options.events / ingestSeconds, ingestCpu, options.events / ingestCpu,
      static_cast<double>(bytes) / ingestCpu / 1e6,
      options.snapshotEvery > 0
          ? (", a snapshot every " + std::to_string(options.snapshotEvery) + " events").c_str()
          : "");
  std::printf("ingest: resident memory %.0f MB, peak %.0f MB; decode errors %llu\n",
              afterIngest.second, afterIngest.first,
              static_cast<unsigned long long>(podSink.decodeErrors() + nodeSink.decodeErrors()));
  return podSink.decodeErrors() + nodeSink.decodeErrors() == 0 ? 0 : 1;
}
