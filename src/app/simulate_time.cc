#include "simulate_time.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "gpufair/sim/scenario.h"
#include "gpufair/sim/time_report.h"

namespace gpufair::app {
namespace {

int fail(const std::string& message, int code) {
  std::cerr << "gpufair simulate --over-time: " << message << "\n";
  return code;
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  return static_cast<bool>(out);
}

// Every policy's replay, on a pool of threads; the first error, or "".
std::string replayAll(const sim::Scenario& scenario, const std::vector<sim::PodLifetime>& lifetimes,
                      const sim::SimulationOptions& options, double speedup,
                      std::atomic<std::size_t>& done, std::vector<sim::TimeReplayResult>& results) {
  results.resize(options.policies.size());
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::string error;
  auto work = [&] {
    for (std::size_t p = next++; p < options.policies.size(); p = next++) {
      sim::TimeReplayOptions to;
      to.scorer = options.policies[p];
      to.seed = options.seeds.front();
      to.cluster = options.service;
      to.progress = &done;
      to.arrivalSpeedup = speedup;
      auto result = sim::replayOverTime(scenario, lifetimes, to);
      std::lock_guard lock(mu);
      if (!result) {
        if (error.empty()) error = options.policies[p] + ": " + result.error();
        continue;
      }
      results[p] = std::move(result.value());
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
  auto scenario = sim::loadOpenbScenario(args.get("nodes"), args.get("pods"));
  if (!scenario) return fail(scenario.error(), 1);
  auto lifetimes = sim::loadPodLifetimes(args.get("pods"));
  if (!lifetimes) return fail(lifetimes.error(), 1);

  const double speedup = load > 0 ? sim::arrivalSpeedupFor(*scenario, *lifetimes, load) : 1.0;

  const bool quiet = args.has("quiet");
  const bool bar = !quiet && (args.has("progress") || ::isatty(STDERR_FILENO));
  std::atomic<std::size_t> done{0};
  const std::size_t total = lifetimes->size() * options.policies.size();
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
      replayAll(*scenario, *lifetimes, options, speedup, done, report.results);
  stop = true;
  if (progress.joinable()) progress.join();
  if (!error.empty()) return fail(error, 1);

  report.source = scenario->source;
  report.nodes = scenario->nodes.size();
  report.capacity = scenario->gpuCapacity();
  report.queues =
      args.has("queues") ? "queues from " + args.get("queues") : "one queue holding the cluster";
  report.policies = options.policies;
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
                 options.policies.size(), options.policies.size() == 1 ? "" : "s", report.seconds);
  }
  return 0;
}

}  // namespace gpufair::app
