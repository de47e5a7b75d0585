#include "simulate_time.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "gpufair/sim/scenario.h"
#include "gpufair/sim/time_report.h"

#include "replay_controllers.h"

namespace gpufair::app {
namespace {

int fail(const std::string& message, int code) {
  std::cerr << "gpufair simulate --over-time: " << message << "\n";
  return code;
}

// What runs in every replay beside the policy: the flags --consolidate .. --resume.
struct Control {
  std::vector<bool> consolidate{false};  // one replay per policy and entry
  bool reclaim = false;
  double movableShare = 0;
  std::int64_t period = 10;
  bool resumeRemaining = false;
  double inflate = 1;
};

// A number flag in [lo, hi], or an error naming it.
std::string number(const ParsedArgs& args, const char* flag, double lo, double hi, double& out) {
  if (!args.has(flag)) return "";
  try {
    std::size_t used = 0;
    out = std::stod(args.get(flag), &used);
    if (used == args.get(flag).size() && out >= lo && out <= hi) return "";
  } catch (const std::exception&) {
  }
  return std::string("--") + flag + " \"" + args.get(flag) + "\" is not a number in [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string parseControl(const ParsedArgs& args, bool queues, Control& c) {
  const std::string mode = args.has("consolidate") ? args.get("consolidate") : "off";
  if (mode == "on") {
    c.consolidate = {true};
  } else if (mode == "on,off" || mode == "off,on") {
    c.consolidate = {mode == "on,off", mode != "on,off"};
  } else if (mode != "off") {
    return "--consolidate \"" + mode + "\": expected off, on or on,off";
  }
  const std::string reclaim = args.has("reclaim") ? args.get("reclaim") : "on";
  if (reclaim != "on" && reclaim != "off")
    return "--reclaim \"" + reclaim + "\": expected on or off";
  c.reclaim = queues && reclaim == "on";
  const std::string resume = args.has("resume") ? args.get("resume") : "full";
  if (resume != "full" && resume != "remaining")
    return "--resume \"" + resume + "\": expected full or remaining";
  c.resumeRemaining = resume == "remaining";
  double period = 10;
  for (const std::string& e : {number(args, "movable-share", 0, 1, c.movableShare),
                               number(args, "controller-period", 1, 86400, period),
                               number(args, "inflate", 1, 100, c.inflate)}) {
    if (!e.empty()) return e;
  }
  c.period = static_cast<std::int64_t>(period);
  return "";
}

// The controllers in words, for the report; "" when none runs.
std::string describe(const Control& c) {
  const bool consolidate =
      std::find(c.consolidate.begin(), c.consolidate.end(), true) != c.consolidate.end();
  if (!consolidate && !c.reclaim) return "";
  std::string s =
      std::string("controllers every ") + std::to_string(c.period) +
      " s: " + (c.reclaim ? "reclaim" : "") + (c.reclaim && consolidate ? " and " : "") +
      (consolidate ? "consolidation" : "") + "; movable: borrowed pods and " +
      std::to_string(static_cast<int>(std::lround(c.movableShare * 100))) +
      "% of the pods (labelled); evicted pods run " +
      (c.resumeRemaining ? "what was left of their duration" : "their full duration again");
  return s;
}

// A replay's name in the report: the policy, "+consolidate" when consolidation runs.
std::string labelOf(const std::string& policy, bool consolidate) {
  return consolidate ? policy + "+consolidate" : policy;
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  return static_cast<bool>(out);
}

// Every policy's replay (each consolidation mode), on a pool of threads; the first error, or "".
std::string replayAll(const sim::Scenario& scenario, const std::vector<sim::PodLifetime>& lifetimes,
                      const sim::SimulationOptions& options, const Control& control, double speedup,
                      std::atomic<std::size_t>& done, std::vector<sim::TimeReplayResult>& results) {
  const std::size_t modes = control.consolidate.size();
  results.resize(options.policies.size() * modes);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::string error;
  auto work = [&] {
    for (std::size_t k = next++; k < results.size(); k = next++) {
      const std::string& policy = options.policies[k / modes];
      const bool consolidate = control.consolidate[k % modes];
      sim::TimeReplayOptions to;
      to.scorer = policy;
      to.seed = options.seeds.front();
      to.cluster = options.service;
      to.progress = &done;
      to.arrivalSpeedup = speedup;
      if (consolidate || control.reclaim) {
        to.controller = makeReplayController(
            {consolidate, control.reclaim, std::chrono::seconds(300), std::chrono::seconds(120)});
        to.controllerPeriod = control.period;
        to.controlWhileWaitingOnly = true;
        to.movableShare = control.movableShare;
        to.resumeRemaining = control.resumeRemaining;
      }
      auto result = sim::replayOverTime(scenario, lifetimes, to);
      std::lock_guard lock(mu);
      if (!result) {
        if (error.empty()) error = labelOf(policy, consolidate) + ": " + result.error();
        continue;
      }
      results[k] = std::move(result.value());
    }
  };
  unsigned threads = options.threads ? options.threads : std::thread::hardware_concurrency();
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(results.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return error;
}

}  // namespace

int runSimulateOverTime(const ParsedArgs& args, const sim::SimulationOptions& options) {
  if (!args.has("nodes") || !args.has("pods"))
    return fail("needs --nodes and --pods: an openb pod list with creation and deletion times", 2);
  for (const auto& name : options.policies) {
    if (name == sim::kHindsightPolicy)
      return fail("the hindsight planner has no replay over time", 2);
  }
  double load = 0;
  try {
    load = args.has("offered-load") ? std::stod(args.get("offered-load")) : 0;
  } catch (const std::exception&) {
    load = -1;
  }
  if (!(load >= 0) || load > 100)
    return fail("--offered-load \"" + args.get("offered-load") + "\" is not a number in [0, 100]",
                2);
  Control control;
  if (const std::string e = parseControl(args, options.service.queues.has_value(), control);
      !e.empty())
    return fail(e, 2);
  auto scenario = sim::loadOpenbScenario(args.get("nodes"), args.get("pods"));
  if (!scenario) return fail(scenario.error(), 1);
  auto lifetimes = sim::loadPodLifetimes(args.get("pods"));
  if (!lifetimes) return fail(lifetimes.error(), 1);
  sim::inflateArrivals(scenario.value(), lifetimes.value(), control.inflate, options.seeds.front());

  const double speedup = load > 0 ? sim::arrivalSpeedupFor(*scenario, *lifetimes, load) : 1.0;
  if (load > 0 && sim::offeredLoadAt(*scenario, *lifetimes, speedup) < load * 0.99) {
    return fail("the pod list cannot offer --offered-load " + args.get("offered-load") +
                    " however fast it arrives (at most " +
                    std::to_string(sim::offeredLoadAt(*scenario, *lifetimes, speedup)) +
                    "); --inflate adds pods",
                1);
  }

  const bool quiet = args.has("quiet");
  const bool bar = !quiet && (args.has("progress") || ::isatty(STDERR_FILENO));
  std::atomic<std::size_t> done{0};
  const std::size_t total =
      lifetimes->size() * options.policies.size() * control.consolidate.size();
  std::atomic<bool> stop{false};
  std::thread progress;
  if (bar) {
    progress = std::thread([&] {
      while (!stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        std::fprintf(stderr, "\rover-time replay: %zu/%zu pods arrived   ", done.load(), total);
      }
      std::fprintf(stderr, "\r%60s\r", "");
    });
  }
  const auto start = std::chrono::steady_clock::now();
  sim::TimeReport report;
  const std::string error =
      replayAll(*scenario, *lifetimes, options, control, speedup, done, report.results);
  stop = true;
  if (progress.joinable()) progress.join();
  if (!error.empty()) return fail(error, 1);

  report.source = scenario->source;
  report.nodes = scenario->nodes.size();
  report.capacity = scenario->gpuCapacity();
  report.queues =
      args.has("queues") ? "queues from " + args.get("queues") : "one queue holding the cluster";
  report.control = describe(control);
  for (const std::string& policy : options.policies) {
    for (bool consolidate : control.consolidate)
      report.policies.push_back(labelOf(policy, consolidate));
  }
  report.arrivalSpeedup = speedup;
  report.offeredLoad = sim::offeredLoadAt(*scenario, *lifetimes, speedup);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << sim::timeSummary(report);
  if (args.has("json") && !writeFile(args.get("json"), sim::timeJson(report)))
    return fail("cannot write " + args.get("json"), 1);
  if (args.has("plot") && !writeFile(args.get("plot"), sim::timePlotSvg(report, args.get("title"))))
    return fail("cannot write " + args.get("plot"), 1);
  if (!quiet) {
    std::fprintf(stderr, "gpufair simulate --over-time: %zu replay%s in %.1f s\n",
                 report.policies.size(), report.policies.size() == 1 ? "" : "s", report.seconds);
  }
  return 0;
}

}  // namespace gpufair::app
