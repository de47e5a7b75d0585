#include "gpufair/sim/simulation.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "gpufair/policy/scorer.h"
#include "gpufair/sim/hindsight.h"
#include "gpufair/sim/service_replay.h"

namespace gpufair::sim {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> splitComma(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(
        trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool parseUnsigned(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// The scorer of each policy, in order; null for the hindsight planner (hindsight.h), which has
// none. Fails on an unknown name.
Result<std::vector<policy::ScorerPtr>> makeScorers(const std::vector<std::string>& policies,
                                                   const policy::WorkloadPtr& workload) {
  using R = Result<std::vector<policy::ScorerPtr>>;
  std::vector<policy::ScorerPtr> scorers;
  for (const auto& name : policies) {
    if (name == kHindsightPolicy) {  // no scorer: the offline planner (hindsight.h)
      scorers.push_back(nullptr);
      continue;
    }
    policy::ScorerOptions so;
    so.workload = workload;
    auto scorer = policy::makeScorer(name, so);
    if (!scorer) {
      std::string known;
      for (const auto& n : policy::scorerNames()) known += (known.empty() ? "" : ", ") + n;
      known += std::string(", ") + kHindsightPolicy;
      return R::failure("unknown policy \"" + name + "\" (known: " + known + ")");
    }
    scorers.push_back(std::move(scorer));
  }
  return scorers;
}

// Each seed's submitted pods (indices into scenario.templates), in seed order; `total` gets the
// number of pods over all seeds.
Result<std::vector<std::vector<std::size_t>>> sampleOrders(const Scenario& scenario,
                                                           const SimulationOptions& options,
                                                           MilliGpu capacity, std::size_t& total) {
  using R = Result<std::vector<std::vector<std::size_t>>>;
  const std::vector<MilliGpu> requests = scenario.templateRequests();
  std::vector<std::vector<std::size_t>> orders;
  for (std::uint64_t seed : options.seeds) {
    auto order = samplePods(requests, capacity, {options.load, options.sampling, seed});
    if (!order) return R::failure(scenario.source + ": " + order.error());
    total += order->size();
    orders.push_back(std::move(order.value()));
  }
  return orders;
}

// One row of the report: a policy on a path (the hindsight planner on none).
struct Row {
  std::size_t policy;
  Path path;
};

std::vector<Row> rowsOf(const SimulationOptions& options) {
  std::vector<Row> rows;
  for (std::size_t p = 0; p < options.policies.size(); ++p) {
    if (options.policies[p] == kHindsightPolicy) {
      rows.push_back({p, Path::kPaper});
      continue;
    }
    for (Path path : options.paths) rows.push_back({p, path});
  }
  return rows;
}

std::string rowName(const SimulationOptions& options, const Row& row) {
  const std::string& name = options.policies[row.policy];
  if (options.paths.size() <= 1 || name == kHindsightPolicy) return name;
  return name + " (" + pathName(row.path) + ")";
}

// The report before any run: the scenario's figures and one empty run per (row, seed).
SimulationReport emptyReport(const Scenario& scenario, const SimulationOptions& options,
                             const std::vector<Row>& rows, MilliGpu capacity) {
  SimulationReport report;
  report.source = scenario.source;
  report.nodes = scenario.nodes.size();
  report.capacity = capacity;
  report.templates = scenario.templates.size();
  report.load = options.load;
  report.sampling = samplingName(options.sampling);
  report.seeds = options.seeds;
  report.summaryPoints = options.summaryPoints;
  for (const Row& row : rows) {
    PolicyReport p;
    p.policy = rowName(options, row);
    p.runs.resize(options.seeds.size());
    report.policies.push_back(std::move(p));
  }
  return report;
}

// What every (policy, seed) job of one simulation reads.
struct JobContext {
  const Scenario& scenario;
  const SimulationOptions& options;
  const policy::WorkloadPtr& workload;
  const std::vector<policy::ScorerPtr>& scorers;  // per policy; null: hindsight
  const std::vector<Row>& rows;
  const policy::Scorer* hindsightScorer;
  const std::vector<std::vector<std::size_t>>& orders;  // per seed
  MilliGpu capacity;
  int maxPercent;  // the curves' last point
};

// Replays row r's policy on its path on the pods of seed s; throws what the replay throws.
ReplayResult replayJob(const JobContext& c, std::size_t r, std::size_t s) {
  const std::size_t p = c.rows[r].policy;
  const Path path = c.rows[r].path;
  if (c.scorers[p] && path != Path::kPaper) {
    ServiceReplayOptions so;
    so.scorer = c.options.policies[p];
    so.seed = c.options.seeds[s];
    so.cluster = c.options.service;
    so.cluster.workload = path == Path::kServiceGiven ? c.workload : nullptr;
    so.measureWorkload = c.workload;
    so.measureFragmentation = c.options.measureFragmentation;
    so.progress = c.options.progress ? &c.options.progress->done : nullptr;
    auto result = replayService(c.scenario, c.orders[s], so);
    if (!result) throw std::runtime_error(result.error());
    return std::move(result.value());
  }
  ReplayOptions ro;
  ro.seed = c.options.seeds[s];
  ro.workload = c.workload;
  ro.measureFragmentation = c.options.measureFragmentation;
  ro.progress = c.options.progress ? &c.options.progress->done : nullptr;
  if (c.scorers[p]) return replay(c.scenario, c.orders[s], *c.scorers[p], ro);
  const int points[] = {100};  // each plan is costly; the tables read 100 % arrived
  ReplayOptions quiet = ro;
  quiet.progress = nullptr;
  quiet.measureFragmentation = false;
  ReplayResult result = hindsightReplay(c.scenario, c.orders[s], points, c.hindsightScorer, quiet);
  if (ro.progress) ro.progress->fetch_add(c.orders[s].size());
  return result;
}

// Hands the jobs (policy-major) out to the threads that call work(). They are all alike in length,
// so in order. The first failure stops the handing out.
// Thread-safety: work() may run on several threads at once; error() only after they all returned.
class JobQueue {
 public:
  JobQueue(const JobContext& context, SimulationReport& report, std::size_t jobs)
      : c_(context), report_(report), jobs_(jobs) {}

  // Runs jobs until none is left or one failed.
  void work() {
    while (true) {
      const std::size_t job = next_.fetch_add(1);
      if (job >= jobs_) return;
      const std::size_t r = job / c_.options.seeds.size();
      const std::size_t s = job % c_.options.seeds.size();
      const auto start = Clock::now();
      ReplayResult result;
      try {
        result = replayJob(c_, r, s);
      } catch (const std::exception& e) {  // e.g. out of memory: fail the run, not the process
        std::lock_guard<std::mutex> lock(errorMu_);
        if (error_.empty())
          error_ = report_.policies[r].policy + ", seed " + std::to_string(c_.options.seeds[s]) +
                   ": " + e.what();
        next_ = jobs_;
        return;
      }
      record(report_.policies[r].runs[s], s, result, secondsSince(start));
      if (c_.options.progress) c_.options.progress->runsDone.fetch_add(1);
    }
  }

  const std::string& error() const { return error_; }

 private:
  void record(RunReport& run, std::size_t s, const ReplayResult& result, double seconds) const {
    run.seconds = seconds;
    run.seed = c_.options.seeds[s];
    run.pods = c_.orders[s].size();
    run.placed = result.placed;
    run.failed = result.failed;
    run.arrivedGpus = result.events.empty() ? 0 : result.events.back().arrived;
    run.allocatedGpus = result.events.empty() ? 0 : result.events.back().allocated;
    run.curve = curveOf(result.events, c_.capacity, c_.maxPercent, c_.options.step);
  }

  const JobContext& c_;
  SimulationReport& report_;  // each job writes its own run only
  const std::size_t jobs_;
  std::atomic<std::size_t> next_{0};
  std::mutex errorMu_;
  std::string error_;  // GUARDED_BY(errorMu_)
};

// The pool's size: `requested`, or one per hardware thread if 0; at least 1, at most `jobs`.
unsigned threadCount(unsigned requested, std::size_t jobs) {
  const unsigned threads = requested ? requested : std::thread::hardware_concurrency();
  return static_cast<unsigned>(std::clamp<std::size_t>(threads ? threads : 1, 1, jobs));
}

}  // namespace

Result<std::vector<std::uint64_t>> parseSeeds(std::string_view text) {
  using R = Result<std::vector<std::uint64_t>>;
  constexpr std::uint64_t kMaxSeeds = 10000;
  std::vector<std::uint64_t> out;
  std::set<std::uint64_t> seen;
  for (const std::string& item : splitComma(text)) {
    const std::string bad = "seeds \"" + std::string(text) + "\": ";
    if (item.empty()) return R::failure(bad + "empty item (expected e.g. 42-51 or 1,2,5-7)");
    std::uint64_t lo = 0, hi = 0;
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      if (!parseUnsigned(item, lo)) return R::failure(bad + "\"" + item + "\" is not a seed");
      hi = lo;
    } else if (!parseUnsigned(trim(item.substr(0, dash)), lo) ||
               !parseUnsigned(trim(item.substr(dash + 1)), hi)) {
      return R::failure(bad + "\"" + item + "\" is not a range like 42-51");
    }
    if (hi < lo) return R::failure(bad + "range \"" + item + "\" goes down");
    if (hi - lo >= kMaxSeeds || out.size() + (hi - lo) >= kMaxSeeds)
      return R::failure(bad + "more than " + std::to_string(kMaxSeeds) + " seeds");
    for (std::uint64_t s = lo;; ++s) {
      if (!seen.insert(s).second) return R::failure(bad + "seed " + std::to_string(s) + " twice");
      out.push_back(s);
      if (s == hi) break;
    }
  }
  return out;
}

const char* pathName(Path path) {
  switch (path) {
    case Path::kPaper:
      return "paper";
    case Path::kService:
      return "service";
    case Path::kServiceGiven:
      return "service-given";
  }
  return "?";
}

std::optional<Path> parsePath(std::string_view text) {
  for (Path path : {Path::kPaper, Path::kService, Path::kServiceGiven}) {
    if (text == pathName(path)) return path;
  }
  return std::nullopt;
}

Result<std::vector<Path>> parsePaths(std::string_view text) {
  using R = Result<std::vector<Path>>;
  std::vector<Path> out;
  for (const std::string& item : splitComma(text)) {
    const auto path = parsePath(item);
    if (!path)
      return R::failure("path \"" + item + "\" is not one of paper, service, service-given");
    if (std::find(out.begin(), out.end(), *path) != out.end())
      return R::failure("path " + item + " given twice");
    out.push_back(*path);
  }
  return out;
}

Result<std::vector<std::string>> parsePolicies(std::string_view text) {
  using R = Result<std::vector<std::string>>;
  std::vector<std::string> out;
  for (std::string& item : splitComma(text)) {
    if (item.empty()) return R::failure("policies \"" + std::string(text) + "\": empty item");
    if (std::find(out.begin(), out.end(), item) != out.end())
      return R::failure("policy " + item + " given twice");
    out.push_back(std::move(item));
  }
  return out;
}

Result<SimulationReport> simulate(const Scenario& scenario, const SimulationOptions& options) {
  using R = Result<SimulationReport>;
  if (options.policies.empty()) return R::failure("no policy given");
  if (options.seeds.empty()) return R::failure("no seed given");
  if (options.paths.empty()) return R::failure("no path given");
  if (!(options.load > 0) || options.load > 100) return R::failure("the load must be in (0, 100]");

  // The target workload (fgd, fragmentation): the scenario's pod list, as the paper's simulator
  // derives its typical pods from the trace.
  auto workload = std::make_shared<const policy::Workload>(
      typicalWorkload(scenario.templates, options.typicalPopularity));
  auto scorers = makeScorers(options.policies, workload);
  if (!scorers) return R::failure(scorers.error());

  // The hindsight planner also replays the arrival order through the default strategy.
  policy::ScorerOptions fgdOptions;
  fgdOptions.workload = workload;
  const policy::ScorerPtr hindsightScorer = policy::makeScorer(policy::kDefaultScorer, fgdOptions);

  const MilliGpu capacity = scenario.gpuCapacity();
  std::size_t total = 0;
  auto orders = sampleOrders(scenario, options, capacity, total);
  if (!orders) return R::failure(orders.error());

  const std::vector<Row> rows = rowsOf(options);
  SimulationReport report = emptyReport(scenario, options, rows, capacity);
  const std::size_t jobs = rows.size() * options.seeds.size();
  if (options.progress) {
    options.progress->total = total * rows.size();
    options.progress->runsTotal = jobs;
  }
  const JobContext context{
      scenario, options,  workload,
      *scorers, rows,     hindsightScorer.get(),
      *orders,  capacity, static_cast<int>(std::ceil(options.load * 100.0 - 1e-9))};
  JobQueue queue(context, report, jobs);
  const unsigned threads = threadCount(options.threads, jobs);
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back([&queue] { queue.work(); });
  queue.work();
  for (auto& t : pool) t.join();
  if (!queue.error().empty()) return R::failure(queue.error());
  report.seconds = secondsSince(start);
  report.threads = threads;
  summarize(report);
  return report;
}

}  // namespace gpufair::sim
