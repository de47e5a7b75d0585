// `gpufair simulate`: replays a trace (the openb CSVs, or cluster + workload YAML) through the
// engine with one or more placement strategies over several seeds, and reports the GPU allocation
// reached as the arrived GPU request grows (table on stdout, --json, --plot SVG).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/config/quota.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/sim/simulation.h"
#include "gpufair/sim/svg_plot.h"

#include "cli.h"
#include "commands.h"
#include "simulate_time.h"

namespace gpufair::app {
namespace {

const std::vector<FlagSpec>& simulateFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {"nodes", "openb node list CSV (sn,cpu_milli,memory_mib,gpu,model)", ""},
      {"pods", "openb pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...)", ""},
      {"cluster", "instead of CSVs: a cluster file (Nodes; bound Pods start running)", ""},
      {"workload",
       "with --cluster: a file of Pods to draw from (default: the cluster file's "
       "unbound Pods)",
       ""},
      {"namespace", "gpufair's namespace, for quota ConfigMaps in cluster files", "gpufair-system"},
      {"policy",
       "comma-separated placement strategies: " + scorerList() +
           ", and \"hindsight\" (an offline planner that sees every arrival)",
       policy::kDefaultScorer},
      {"path",
       "how pods are placed, comma-separated: service (through the mirror and the extender "
       "service as serve runs them, the workload learned online), paper (the engine's scorer "
       "with the workload given: the ATC'23 protocol), service-given (the service path with the "
       "workload given)",
       "service"},
      {"filter-mode", "service path: serve's --filter-mode (best, all or top-N; serve's default)",
       api::kDefaultFilterMode},
      {"queues",
       "service path: a queues.yaml quota file; pods are spread over its queues by a hash of "
       "their name (default: one queue holding the whole cluster)",
       ""},
      {"cpu-only-pods",
       "service path: who places pods without GPUs: kube-scheduler (as serve is deployed: its "
       "managedResources send them no extender call; a random node with the CPU and memory) or "
       "gpufair (filter -> prioritize -> bind like GPU pods)",
       "kube-scheduler"},
      {"seeds", "seeds: a range and/or list, e.g. 42-51 or 1,2,5-7", "42-51"},
      {"load", "submit pods until their GPU request would pass this x the GPU capacity", "1.3"},
      {"sampling",
       "inflate (every trace pod once, then random ones: the paper's simulator) or "
       "resample (all drawn at random with replacement)",
       "inflate"},
      {"step", "curve resolution in percent of capacity", "1"},
      {"threads", "replays run in parallel (0: one per hardware thread)", "0"},
      {"json", "write the curves and summary as JSON to this file", ""},
      {"plot", "draw the curves of all policies as SVG to this file", ""},
      {"title", "title of the plot", ""},
      {"no-fragmentation", "skip the fragmentation measure (faster)", "", true},
      {"quiet", "no progress bar or final summary line on stderr", "", true},
      {"over-time",
       "replay over time: pods arrive at their creation_time, hold their resources for their "
       "trace duration and leave; pods that do not fit wait and are retried (service path, first "
       "seed; needs an openb pod list with creation_time and deletion_time)",
       "", true},
      {"offered-load",
       "with --over-time: speed the arrivals up (durations unchanged) until the pods ask this x "
       "the GPU capacity on average (default: the trace's own times)",
       ""},
      {"inflate",
       "with --over-time: add pods until the list holds this x its pods, each a random pod's "
       "copy (shape, duration) arriving at another random pod's creation time (default 1)",
       ""},
      {"consolidate",
       "with --over-time: run serve's consolidation controller in the replay: off, on, or on,off "
       "(each policy both ways; default off)",
       ""},
      {"reclaim",
       "with --over-time and --queues: run serve's reclaim controller in the replay: on or off "
       "(default on)",
       ""},
      {"movable-share",
       "with --over-time: the fraction of pods labelled gpufair.io/movable, by a hash of the "
       "name (borrowed pods are movable anyway; default 0)",
       ""},
      {"controller-period", "with --over-time: seconds of trace time between controller rounds",
       ""},
      {"resume",
       "with --over-time: what an evicted pod's replacement runs: full (its whole duration "
       "again, the default) or remaining (it resumes from a checkpoint)",
       ""},
      {"progress", "draw the progress bar even when stderr is not a terminal", "", true},
      {"help", "show this help", "", true},
  };
  return kFlags;
}

constexpr const char* kSummary =
    "Replays a workload through gpufair, one pod at a time, as the \"Beware of\n"
    "Fragmentation\" (ATC'23) experiments do: pods drawn from the pod list until their GPU\n"
    "request passes --load x the cluster's GPU capacity, each placed or failed for good. By\n"
    "default each pod goes through an in-process mirror and extender service as `gpufair serve`\n"
    "runs them (filter -> prioritize -> bind, quota admission on, the workload learned\n"
    "online); --path paper scores with the engine directly, the workload given (the paper's\n"
    "protocol). Prints the GPU allocation (median over seeds) at 90/95/100/130% arrived GPU\n"
    "request, and with several paths the difference to the paper mode.\n\n"
    "Example:\n"
    "  gpufair simulate --nodes openb_node_list_gpu_node.csv \\\n"
    "      --pods openb_pod_list_default.csv --policy fgd,bestfit --seeds 42-51 \\\n"
    "      --json out.json --plot out.svg";

int fail(const std::string& message, int code) {
  std::cerr << "gpufair simulate: " << message << "\n";
  return code;
}

bool parseNumber(const std::string& text, double& out) {
  try {
    std::size_t used = 0;
    out = std::stod(text, &used);
    return used == text.size() && std::isfinite(out);
  } catch (const std::exception&) {
    return false;
  }
}

std::string withCommas(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// Redraws a one-line bar on stderr (a terminal only) until stopped.
class ProgressBar {
 public:
  ProgressBar(const sim::Progress& progress, bool enabled) : progress_(progress) {
    if (enabled) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressBar() { stop(); }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
      thread_.join();
      std::fprintf(stderr, "\r%80s\r", "");
    }
  }

 private:
  void loop() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    // Quiet for the first second: short runs need no bar.
    if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) return;
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; })) {
      const std::size_t total = progress_.total.load();
      const std::size_t done = progress_.done.load();
      const double f = total ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char bar[31];
      const int filled = static_cast<int>(f * 30);
      for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
      bar[30] = '\0';
      std::string eta = "";
      if (f > 0.02)
        eta = "  ~" + std::to_string(static_cast<int>(elapsed * (1 - f) / f)) + "s left";
      std::fprintf(stderr, "\r[%s] %3d%%  runs %zu/%zu  %.0fs%s   ", bar, static_cast<int>(f * 100),
                   progress_.runsDone.load(), progress_.runsTotal.load(), elapsed, eta.c_str());
      std::fflush(stderr);
    }
  }

  const sim::Progress& progress_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

bool writeFile(const std::string& path, const std::string& text, std::string& error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

// How the input flags combine (`csv`: --nodes or --pods given); an error message, or "".
std::string checkInputFlags(const ParsedArgs& args, bool csv, const std::string& usageText) {
  if (csv && args.has("cluster")) return "give either --nodes/--pods or --cluster, not both";
  if (csv && (!args.has("nodes") || !args.has("pods"))) return "--nodes and --pods go together";
  if (!csv && !args.has("cluster"))
    return "no input: give --nodes FILE --pods FILE, or --cluster FILE\n\n" + usageText;
  if (args.has("workload") && !args.has("cluster")) return "--workload needs --cluster";
  return "";
}

// The simulation options from the flags (all but `progress`); an error message, or "".
std::string parseOptions(const ParsedArgs& args, sim::SimulationOptions& options) {
  auto policies = sim::parsePolicies(args.get("policy"));
  if (!policies) return policies.error();
  for (const auto& name : *policies) {
    if (name != sim::kHindsightPolicy && policy::findScorer(name) == nullptr) {
      return "unknown policy \"" + name + "\" (known: " + scorerList() + ", " +
             sim::kHindsightPolicy + ")";
    }
  }
  options.policies = *policies;
  auto seeds = sim::parseSeeds(args.get("seeds"));
  if (!seeds) return seeds.error();
  options.seeds = *seeds;
  if (!parseNumber(args.get("load"), options.load) || options.load <= 0 || options.load > 100)
    return "--load \"" + args.get("load") + "\" is not a number in (0, 100]";
  auto sampling = sim::parseSampling(args.get("sampling"));
  if (!sampling) return "--sampling must be inflate or resample";
  options.sampling = *sampling;
  double step = 0, threads = 0;
  if (!parseNumber(args.get("step"), step) || step < 1 || step > 100 || step != std::floor(step))
    return "--step must be a whole number of percent in 1..100";
  options.step = static_cast<int>(step);
  if (!parseNumber(args.get("threads"), threads) || threads < 0 || threads > 1024 ||
      threads != std::floor(threads))
    return "--threads must be a whole number in 0..1024";
  options.threads = static_cast<unsigned>(threads);
  options.measureFragmentation = !args.has("no-fragmentation");
  auto paths = sim::parsePaths(args.get("path"));
  if (!paths) return "--path: " + paths.error();
  options.paths = *paths;
  auto filterMode = api::FilterMode::parse(args.get("filter-mode"));
  if (!filterMode) return "--filter-mode: " + filterMode.error();
  options.service.filterMode = *filterMode;
  const std::string cpuOnly = args.get("cpu-only-pods");
  if (cpuOnly != "kube-scheduler" && cpuOnly != "gpufair")
    return "--cpu-only-pods must be kube-scheduler or gpufair, not \"" + cpuOnly + "\"";
  options.service.cpuOnlyPodsBypassExtender = cpuOnly == "kube-scheduler";
  const int maxPoint = static_cast<int>(std::ceil(options.load * 100 - 1e-9));
  options.summaryPoints.clear();
  for (int p : {90, 95, 100, 130}) {
    if (p <= maxPoint) options.summaryPoints.push_back(p);
  }
  return "";
}

Result<sim::Scenario> loadScenario(const ParsedArgs& args, bool csv) {
  if (csv) return sim::loadOpenbScenario(args.get("nodes"), args.get("pods"));
  return sim::loadYamlScenario(args.get("cluster"),
                               args.has("workload") ? args.get("workload") : args.get("cluster"),
                               args.get("namespace"));
}

// The --json and --plot files, if asked for; false, with `error` set, if one cannot be written.
bool writeOutputs(const ParsedArgs& args, const sim::SimulationReport& report, std::string& error) {
  if (args.has("json") && !writeFile(args.get("json"), sim::toJson(report), error)) return false;
  if (args.has("plot")) {
    sim::PlotOptions plot;
    plot.title = args.get("title");
    if (!writeFile(args.get("plot"), sim::plotSvg(report, plot), error)) return false;
  }
  return true;
}

// With the paper path and another one: per policy, how far each other path is from the paper
// mode at every summary point (what the service path, and learning the workload online, cost).
std::string pathDifferences(const sim::SimulationReport& report,
                            const sim::SimulationOptions& options) {
  const auto paper = std::find(options.paths.begin(), options.paths.end(), sim::Path::kPaper);
  if (paper == options.paths.end() || options.paths.size() < 2) return "";
  auto row = [&](const std::string& policy, sim::Path path) -> const sim::PolicyReport* {
    const std::string name = policy + " (" + sim::pathName(path) + ")";
    for (const auto& p : report.policies) {
      if (p.policy == name) return &p;
    }
    return nullptr;
  };
  std::string out = "\ndifference to the paper mode, points of GPU allocation (median of seeds):\n";
  for (const auto& policy : options.policies) {
    const sim::PolicyReport* base = row(policy, sim::Path::kPaper);
    for (sim::Path path : options.paths) {
      const sim::PolicyReport* other = row(policy, path);
      if (base == nullptr || other == nullptr || path == sim::Path::kPaper) continue;
      out += "  " + other->policy + " - paper:";
      for (std::size_t i = 0; i < report.summaryPoints.size(); ++i) {
        char cell[48] = "  -";
        if (base->allocationAt[i] && other->allocationAt[i])
          std::snprintf(cell, sizeof cell, "  %+.2f at %d%%",
                        *other->allocationAt[i] - *base->allocationAt[i], report.summaryPoints[i]);
        out += cell;
      }
      out += "\n";
    }
  }
  return out;
}

// The final summary line on stderr; `pods`: the pods submitted over all runs.
void printSummaryLine(const sim::SimulationReport& report, std::size_t pods) {
  char line[256];
  std::snprintf(line, sizeof line,
                "gpufair simulate: %zu run%s (%s pods) on %zu nodes in %.1f s, %u thread%s\n",
                report.policies.size() * report.seeds.size(),
                report.policies.size() * report.seeds.size() == 1 ? "" : "s",
                withCommas(pods).c_str(), report.nodes, report.seconds, report.threads,
                report.threads == 1 ? "" : "s");
  std::cerr << line;
}

}  // namespace

int runSimulate(const std::vector<std::string>& argv) {
  auto parsed = parseArgs(argv, simulateFlags());
  const std::string usageText = usage("simulate [flags]", kSummary, simulateFlags());
  if (!parsed) return fail(parsed.error() + "\n\n" + usageText, 2);
  const ParsedArgs& args = *parsed;
  if (args.has("help")) {
    std::cout << usageText;
    return 0;
  }
  if (!args.positional.empty())
    return fail("unexpected argument \"" + args.positional[0] + "\"", 2);

  const bool csv = args.has("nodes") || args.has("pods");
  if (const std::string error = checkInputFlags(args, csv, usageText); !error.empty())
    return fail(error, 2);
  sim::SimulationOptions options;
  if (const std::string error = parseOptions(args, options); !error.empty()) return fail(error, 2);
  // The service path logs every rejection at info, as serve does; a replay rejects thousands.
  spdlog::set_level(spdlog::level::warn);
  if (args.has("queues")) {
    auto queues = config::loadQuotaFile(args.get("queues"));
    if (!queues) return fail("--queues: " + queues.error(), 1);
    options.service.queues = std::move(queues.value());
  }
  if (args.has("over-time")) return runSimulateOverTime(args, options);
  for (const char* flag : {"offered-load", "inflate", "consolidate", "reclaim", "movable-share",
                           "controller-period", "resume"}) {
    if (args.has(flag)) return fail(std::string("--") + flag + " needs --over-time", 2);
  }
  auto scenario = loadScenario(args, csv);
  if (!scenario) return fail(scenario.error(), 1);

  const bool quiet = args.has("quiet");
  sim::Progress progress;
  options.progress = &progress;
  ProgressBar bar(progress, !quiet && (args.has("progress") || ::isatty(STDERR_FILENO)));
  auto report = sim::simulate(*scenario, options);
  bar.stop();
  if (!report) return fail(report.error(), 1);

  std::cout << sim::summaryTable(*report) << pathDifferences(*report, options);
  std::string error;
  if (!writeOutputs(args, *report, error)) return fail(error, 1);
  if (!quiet) printSummaryLine(*report, progress.done.load());
  return 0;
}

}  // namespace gpufair::app
