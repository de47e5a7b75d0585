#include "gpufair/sim/time_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "gpufair/sim/svg_plot.h"

namespace gpufair::sim {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr double kDay = 86400.0;
constexpr double kHour = 3600.0;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double percentOf(MilliGpu v, MilliGpu capacity) {
  return capacity > 0 ? 100.0 * static_cast<double>(v) / static_cast<double>(capacity) : 0.0;
}

// "3.2m", "1.5h", "2.0d" for a wait in seconds.
std::string duration(double s) {
  if (s < 60) return fmt("%.0fs", s);
  if (s < 3600) return fmt("%.1fm", s / 60);
  if (s < kDay) return fmt("%.1fh", s / 3600);
  return fmt("%.1fd", s / kDay);
}

// One panel: `value` of each sample (percent) against time in days.
// The time axis' unit: minutes for replays shorter than two hours, else hours.
double lastSample(const TimeReport& r) {
  double last = 0;
  for (const auto& res : r.results) {
    if (!res.samples.empty()) last = std::max(last, static_cast<double>(res.samples.back().time));
  }
  return last;
}
double timeUnit(const TimeReport& r) {
  return lastSample(r) < 2 * kHour ? 60.0 : kHour;
}

template <typename Value>
std::string panel(const TimeReport& r, double top, double height, double yMax, const char* label,
                  const char* cls, Value value) {
  const double left = 64, width = 560;
  const double unit = timeUnit(r);
  const double span = std::max(1.0, lastSample(r) / unit);
  auto X = [&](double hours) { return left + width * hours / span; };
  auto Y = [&](double pct) { return top + height * (1 - std::min(pct, yMax) / yMax); };
  std::string s = "<rect x=\"" + fmt("%.1f", left) + "\" y=\"" + fmt("%.1f", top) + "\" width=\"" +
                  fmt("%.1f", width) + "\" height=\"" + fmt("%.1f", height) +
                  "\" fill=\"none\" stroke=\"#333\"/>\n<g fill=\"#333\" font-size=\"10\">\n";
  for (int k = 0; k <= 4; ++k) {
    const double y = yMax * k / 4;
    s += "<text x=\"" + fmt("%.1f", left - 6) + "\" y=\"" + fmt("%.1f", Y(y) + 3) +
         "\" text-anchor=\"end\">" + fmt("%.0f", y) + "</text>\n";
    const double d = span * k / 4;
    s += "<text x=\"" + fmt("%.1f", X(d)) + "\" y=\"" + fmt("%.1f", top + height + 13) +
         "\" text-anchor=\"middle\">" + fmt("%.0f", d) + "</text>\n";
  }
  s += "<text x=\"" + fmt("%.1f", left) + "\" y=\"" + fmt("%.1f", top - 6) + "\">" + label +
       "</text>\n</g>\n";
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    std::string d;
    for (const auto& sample : r.results[i].samples) {
      d += (d.empty() ? "M" : " L") + fmt("%.1f", X(static_cast<double>(sample.time) / unit)) +
           " " + fmt("%.1f", Y(value(sample, r.results[i].capacity)));
    }
    s += std::string("<path class=\"curve ") + cls + "\" data-policy=\"" +
         xmlEscape(r.policies[i]) + "\" d=\"" + d + "\" fill=\"none\" stroke=\"" +
         kPalette[i % std::size(kPalette)] + "\" stroke-width=\"1.4\"/>\n";
  }
  return s;
}

}  // namespace

std::string timeSummary(const TimeReport& r) {
  std::string s = "over-time replay: " + r.source + ", " + std::to_string(r.nodes) + " nodes, " +
                  std::to_string(r.capacity / kMilliPerGpu) + " GPUs, " + r.queues + "\n" +
                  "arrivals " + fmt("%.1f", r.arrivalSpeedup) +
                  "x faster than the trace: offered " + fmt("%.2f", r.offeredLoad) +
                  " x the GPU capacity\n";
  if (!r.control.empty()) s += r.control + "\n";
  s += "policy                mean alloc %   placed/pods   never   evictions   moves   restart "
       "p50/max   lost GPU-h\n";
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const TimeReplayResult& t = r.results[i];
    char line[200];
    std::snprintf(line, sizeof line, "%-20s %14.2f %8zu/%-6zu %6zu %11zu %7zu %8s/%-8s %8.1f\n",
                  r.policies[i].c_str(), t.meanAllocatedPercent, t.placed, t.pods,
                  t.pods - t.placed, t.evictions, t.moves, duration(t.restartP50).c_str(),
                  duration(t.restartMax).c_str(), t.lostGpuSeconds / kHour);
    s += line;
  }
  s += "\nwait from arrival to start, p50 / p90 / p99 / max (pods; never placed):\n";
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    s += r.policies[i] + "\n";
    for (const WaitStats& w : r.results[i].waits) {
      char line[200];
      std::snprintf(line, sizeof line, "  %-6s %8s %8s %8s %8s  (%zu; %zu)\n", w.size.c_str(),
                    duration(w.p50).c_str(), duration(w.p90).c_str(), duration(w.p99).c_str(),
                    duration(w.max).c_str(), w.pods, w.neverPlaced);
      s += line;
    }
  }
  return s;
}

std::string timeJson(const TimeReport& r) {
  using J = nlohmann::ordered_json;
  J doc = {{"schema", "gpufair.simulate.time/v1"},
           {"source", r.source},
           {"nodes", r.nodes},
           {"capacityGpus", static_cast<double>(r.capacity) / kMilliPerGpu},
           {"queues", r.queues},
           {"control", r.control},
           {"seconds", r.seconds},
           {"policies", J::array()}};
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const TimeReplayResult& t = r.results[i];
    J waits = J::array();
    for (const WaitStats& w : t.waits) {
      waits.push_back({{"size", w.size},
                       {"pods", w.pods},
                       {"neverPlaced", w.neverPlaced},
                       {"p50", w.p50},
                       {"p90", w.p90},
                       {"p99", w.p99},
                       {"max", w.max}});
    }
    J samples = J::array();
    for (const TimeSample& s : t.samples) {
      samples.push_back({s.time, s.allocated, s.pending, s.running, s.waiting});
    }
    doc["policies"].push_back(
        {{"policy", r.policies[i]},
         {"pods", t.pods},
         {"placed", t.placed},
         {"evictions", t.evictions},
         {"moves", t.moves},
         {"restartWaitSeconds", {{"p50", t.restartP50}, {"max", t.restartMax}}},
         {"neverRestarted", t.neverRestarted},
         {"lostGpuSeconds", t.lostGpuSeconds},
         {"spanSeconds", t.span},
         {"meanAllocatedPercent", t.meanAllocatedPercent},
         {"waitSeconds", waits},
         {"sampleColumns", {"time", "allocatedMilliGpu", "pendingMilliGpu", "running", "waiting"}},
         {"samples", samples}});
  }
  return doc.dump(1) + "\n";
}

std::string timePlotSvg(const TimeReport& r, const std::string& title) {
  double pendingMax = 10;
  for (const auto& res : r.results) {
    for (const auto& s : res.samples)
      pendingMax = std::max(pendingMax, percentOf(s.pending, res.capacity));
  }
  pendingMax = std::ceil(pendingMax / 10) * 10;
  std::string s =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"800\" height=\"560\" viewBox=\"0 0 800 560\" font-family=\"DejaVu Sans, Helvetica, "
      "Arial, sans-serif\" font-size=\"12\">\n<rect width=\"800\" height=\"560\" "
      "fill=\"white\"/>\n";
  s += "<text x=\"64\" y=\"24\" font-size=\"15\" font-weight=\"bold\">" +
       xmlEscape(title.empty() ? "GPU allocation and pending demand over time" : title) +
       "</text>\n";
  s += panel(r, 60, 200, 100, "GPU allocation (% of capacity)", "allocated",
             [](const TimeSample& x, MilliGpu c) { return percentOf(x.allocated, c); });
  s += panel(r, 310, 200, pendingMax, "pending GPU demand (% of capacity)", "pending",
             [](const TimeSample& x, MilliGpu c) { return percentOf(x.pending, c); });
  s += "<text x=\"344\" y=\"545\" text-anchor=\"middle\" fill=\"#333\">" +
       std::string(timeUnit(r) == kHour ? "hours" : "minutes") +
       " from the busy "
       "window's start</text>\n";
  for (std::size_t i = 0; i < r.policies.size(); ++i) {
    const double y = 70 + 22.0 * static_cast<double>(i);
    s += "<line x1=\"640\" y1=\"" + fmt("%.1f", y) + "\" x2=\"662\" y2=\"" + fmt("%.1f", y) +
         "\" stroke=\"" + kPalette[i % std::size(kPalette)] + "\" stroke-width=\"3\"/>\n";
    s += "<text x=\"668\" y=\"" + fmt("%.1f", y + 4) + "\">" + xmlEscape(r.policies[i]) +
         "</text>\n";
  }
  return s + "</svg>\n";
}

}  // namespace gpufair::sim
