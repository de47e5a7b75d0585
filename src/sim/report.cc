#include "gpufair/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace gpufair::sim {
namespace {

double percentOf(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

// Rounded for output: three decimals are far below the noise between seeds.
double rounded(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

nlohmann::ordered_json optionalArray(const std::vector<std::optional<double>>& values) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& v : values) out.push_back(v ? nlohmann::ordered_json(rounded(*v)) : nullptr);
  return out;
}

nlohmann::ordered_json curveJson(const Curve& c) {
  nlohmann::ordered_json j;
  j["arrived_percent"] = c.arrivedPercent;
  j["allocated_percent"] = optionalArray(c.allocatedPercent);
  j["fragmented_percent"] = optionalArray(c.fragmentedPercent);
  j["fragmented_of_free_percent"] = optionalArray(c.fragmentedOfFreePercent);
  return j;
}

std::vector<std::optional<double>> medianAcross(const std::vector<RunReport>& runs,
                                                std::size_t points,
                                                std::vector<std::optional<double>> Curve::*series) {
  std::vector<std::optional<double>> out(points);
  for (std::size_t i = 0; i < points; ++i) {
    std::vector<double> values;
    for (const auto& run : runs) {
      const auto& s = run.curve.*series;
      if (i < s.size() && s[i]) values.push_back(*s[i]);
    }
    out[i] = median(std::move(values));
  }
  return out;
}

}  // namespace

std::optional<double> Curve::allocatedAt(int percent) const {
  for (std::size_t i = 0; i < arrivedPercent.size(); ++i) {
    if (arrivedPercent[i] == percent) return allocatedPercent[i];
  }
  return std::nullopt;
}

int arrivedBucket(MilliGpu arrived, MilliGpu capacity) {
  // Half to even (the default rounding mode), as Python's round().
  const double b =
      std::nearbyint(percentOf(static_cast<double>(arrived), static_cast<double>(capacity)));
  return b > 1e9 ? 1000000000 : static_cast<int>(b);
}

Curve curveOf(std::span<const ReplayEvent> events, MilliGpu capacity, int maxPercent, int step) {
  Curve c;
  if (step <= 0) step = 1;
  struct Bucket {
    double allocated = 0, fragmented = 0, ofFree = 0;
    std::size_t count = 0;
  };
  std::vector<Bucket> buckets(static_cast<std::size_t>(std::max(0, maxPercent)) + 2);
  const double cap = static_cast<double>(capacity);
  for (const auto& e : events) {
    const int b = arrivedBucket(e.arrived, capacity);
    if (b < 0 || static_cast<std::size_t>(b) >= buckets.size()) continue;
    Bucket& bucket = buckets[static_cast<std::size_t>(b)];
    const double free = cap - static_cast<double>(e.allocated);
    bucket.allocated += percentOf(static_cast<double>(e.allocated), cap);
    bucket.fragmented += percentOf(e.fragmented, cap);
    bucket.ofFree += percentOf(e.fragmented, free);
    ++bucket.count;
  }
  for (int x = 0; x <= maxPercent; x += step) {
    Bucket sum = buckets[static_cast<std::size_t>(x)];
    if (sum.count == 0) {
      for (int d : {-1, 1}) {
        const int y = x + d;
        if (y < 0 || y >= static_cast<int>(buckets.size())) continue;
        const Bucket& b = buckets[static_cast<std::size_t>(y)];
        sum.allocated += b.allocated;
        sum.fragmented += b.fragmented;
        sum.ofFree += b.ofFree;
        sum.count += b.count;
      }
    }
    c.arrivedPercent.push_back(x);
    if (sum.count == 0) {
      c.allocatedPercent.emplace_back();
      c.fragmentedPercent.emplace_back();
      c.fragmentedOfFreePercent.emplace_back();
      continue;
    }
    const double n = static_cast<double>(sum.count);
    c.allocatedPercent.emplace_back(sum.allocated / n);
    c.fragmentedPercent.emplace_back(sum.fragmented / n);
    c.fragmentedOfFreePercent.emplace_back(sum.ofFree / n);
  }
  return c;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

void summarize(SimulationReport& report) {
  for (auto& p : report.policies) {
    p.allocationAt.clear();
    for (int point : report.summaryPoints) {
      std::vector<double> values;
      for (const auto& run : p.runs) {
        if (auto v = run.curve.allocatedAt(point)) values.push_back(*v);
      }
      p.allocationAt.push_back(median(std::move(values)));
    }
    p.medianCurve = Curve{};
    if (p.runs.empty()) continue;
    const std::size_t points = p.runs.front().curve.arrivedPercent.size();
    p.medianCurve.arrivedPercent = p.runs.front().curve.arrivedPercent;
    p.medianCurve.allocatedPercent = medianAcross(p.runs, points, &Curve::allocatedPercent);
    p.medianCurve.fragmentedPercent = medianAcross(p.runs, points, &Curve::fragmentedPercent);
    p.medianCurve.fragmentedOfFreePercent =
        medianAcross(p.runs, points, &Curve::fragmentedOfFreePercent);
  }
}

std::string toJson(const SimulationReport& report) {
  nlohmann::ordered_json j;
  j["schema"] = "gpufair.simulate/v1";
  j["scenario"] = {{"source", report.source},
                   {"nodes", report.nodes},
                   {"gpu_capacity", static_cast<double>(report.capacity) / kMilliPerGpu},
                   {"pod_templates", report.templates}};
  j["protocol"] = {{"load", report.load},
                   {"sampling", report.sampling},
                   {"seeds", report.seeds},
                   {"tie_break", "seeded random node order"},
                   {"fit", "gpu, gpu model, cpu, memory"}};
  j["summary_points"] = report.summaryPoints;
  auto policies = nlohmann::ordered_json::array();
  for (const auto& p : report.policies) {
    nlohmann::ordered_json pj;
    pj["policy"] = p.policy;
    nlohmann::ordered_json at = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < report.summaryPoints.size() && i < p.allocationAt.size(); ++i) {
      const auto& v = p.allocationAt[i];
      at[std::to_string(report.summaryPoints[i])] =
          v ? nlohmann::ordered_json(rounded(*v)) : nlohmann::ordered_json(nullptr);
    }
    pj["allocation_at_arrived"] = std::move(at);
    auto runs = nlohmann::ordered_json::array();
    for (const auto& r : p.runs) {
      nlohmann::ordered_json rj;
      rj["seed"] = r.seed;
      rj["pods"] = r.pods;
      rj["placed"] = r.placed;
      rj["failed"] = r.failed;
      rj["arrived_gpus"] = rounded(static_cast<double>(r.arrivedGpus) / kMilliPerGpu);
      rj["allocated_gpus"] = rounded(static_cast<double>(r.allocatedGpus) / kMilliPerGpu);
      rj["seconds"] = rounded(r.seconds);
      rj["curve"] = curveJson(r.curve);
      runs.push_back(std::move(rj));
    }
    pj["runs"] = std::move(runs);
    policies.push_back(std::move(pj));
  }
  j["policies"] = std::move(policies);
  j["seconds"] = rounded(report.seconds);
  j["threads"] = report.threads;
  return j.dump(1) + "\n";
}

std::string summaryTable(const SimulationReport& report) {
  std::size_t width = 6;
  for (const auto& p : report.policies) width = std::max(width, p.policy.size());
  std::string out = "GPU allocation (% of " + std::to_string(report.capacity / kMilliPerGpu) +
                    " GPUs) at arrived GPU request, median of " +
                    std::to_string(report.seeds.size()) + " seed" +
                    (report.seeds.size() == 1 ? "" : "s") + "\n";
  std::string head = "policy";
  head.resize(width, ' ');
  for (int point : report.summaryPoints) {
    char cell[32];
    std::snprintf(cell, sizeof cell, "  %8s", (std::to_string(point) + "%").c_str());
    head += cell;
  }
  out += head + "\n";
  for (const auto& p : report.policies) {
    std::string row = p.policy;
    row.resize(width, ' ');
    for (std::size_t i = 0; i < report.summaryPoints.size(); ++i) {
      char cell[32];
      if (i < p.allocationAt.size() && p.allocationAt[i]) {
        std::snprintf(cell, sizeof cell, "  %8.2f", *p.allocationAt[i]);
      } else {
        std::snprintf(cell, sizeof cell, "  %8s", "-");
      }
      row += cell;
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace gpufair::sim
