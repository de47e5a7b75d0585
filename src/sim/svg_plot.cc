#include "gpufair/sim/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpufair::sim {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string fine(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5f", v);
  return buf;
}

// The main plot's frame: pixel corners and the data values at the far corner.
struct Frame {
  double x0, y0, x1, y1;  // pixels of data (0, 0) and (xMax, yMax)
  int xMax;
  double yMax;
};

// A magnified view of where the policies part, x in [80, xMax] and y from just below the lowest
// curve there to 100, drawn in the empty lower right of the plot. It reuses the curves (<use>) so
// that every policy keeps exactly one <path>.
std::string zoomInset(const SimulationReport& report, const Frame& f) {
  constexpr int kFromX = 80;
  if (f.xMax <= kFromX + 10 || report.policies.empty()) return "";
  double lowest = 100;
  for (const auto& p : report.policies) {
    for (std::size_t k = 0; k < p.medianCurve.arrivedPercent.size(); ++k) {
      if (p.medianCurve.arrivedPercent[k] >= kFromX && p.medianCurve.allocatedPercent[k])
        lowest = std::min(lowest, *p.medianCurve.allocatedPercent[k]);
    }
  }
  const double yLo = std::clamp(std::floor((lowest - 1) / 5) * 5, 0.0, 95.0);
  auto px = [&](double x) { return f.x0 + (f.x1 - f.x0) * x / f.xMax; };
  auto py = [&](double y) { return f.y0 + (f.y1 - f.y0) * y / f.yMax; };
  // The inset box: right half of the plot, lower part.
  const double bx0 = f.x0 + (f.x1 - f.x0) * 0.52, bx1 = f.x1 - 12;
  const double by0 = f.y0 - (f.y0 - f.y1) * 0.47, by1 = f.y0 - 34;
  const double sx = (bx1 - bx0) / (px(f.xMax) - px(kFromX));
  const double sy = (by1 - by0) / (py(yLo) - py(100));
  auto ix = [&](double x) { return bx0 + (px(x) - px(kFromX)) * sx; };
  auto iy = [&](double y) { return by0 + (py(y) - py(100)) * sy; };

  std::string s = "<g class=\"zoom\">\n<defs><clipPath id=\"zoom-clip\"><rect x=\"" + num(bx0) +
                  "\" y=\"" + num(by0) + "\" width=\"" + num(bx1 - bx0) + "\" height=\"" +
                  num(by1 - by0) + "\"/></clipPath></defs>\n";
  s += "<rect x=\"" + num(bx0) + "\" y=\"" + num(by0) + "\" width=\"" + num(bx1 - bx0) +
       "\" height=\"" + num(by1 - by0) + "\" fill=\"white\" stroke=\"#333\"/>\n";
  s += "<g stroke=\"#e5e5e5\">\n";
  for (double y = yLo; y <= 100; y += 5)
    s += "<line x1=\"" + num(bx0) + "\" y1=\"" + num(iy(y)) + "\" x2=\"" + num(bx1) + "\" y2=\"" +
         num(iy(y)) + "\"/>\n";
  s += "</g>\n<g fill=\"#333\" font-size=\"10\">\n";
  for (double y = yLo; y <= 100; y += 5)
    s += "<text x=\"" + num(bx0 - 4) + "\" y=\"" + num(iy(y) + 3) + "\" text-anchor=\"end\">" +
         std::to_string(static_cast<int>(y)) + "</text>\n";
  for (int x = kFromX; x <= f.xMax; x += 10)
    s += "<text x=\"" + num(ix(x)) + "\" y=\"" + num(by1 + 12) + "\" text-anchor=\"middle\">" +
         std::to_string(x) + "</text>\n";
  s += "</g>\n<g clip-path=\"url(#zoom-clip)\">\n<g transform=\"translate(" +
       fine(bx0 - px(kFromX) * sx) + " " + fine(by0 - py(100) * sy) + ") scale(" + fine(sx) + " " +
       fine(sy) + ")\">\n";
  for (std::size_t i = 0; i < report.policies.size(); ++i)
    s += "<use href=\"#curve-" + std::to_string(i) + "\"/>\n";
  s += "</g>\n</g>\n</g>\n";
  return s;
}

// The picture's size and margins, and the main plot's data range, in pixels and percents.
struct Layout {
  double w = 0, h = 0;
  double left = 64, right = 190, top = 48, bottom = 56;
  double plotW = 0, plotH = 0;
  int xMax = 10;  // a multiple of 10
  double yMax = 100;
  double X(double v) const { return left + plotW * v / xMax; }
  double Y(double v) const { return top + plotH * (1 - v / yMax); }
};

Layout layoutOf(const SimulationReport& report, const PlotOptions& options) {
  Layout l;
  l.w = std::max(options.width, 400);
  l.h = std::max(options.height, 300);
  l.plotW = l.w - l.left - l.right;
  l.plotH = l.h - l.top - l.bottom;
  int xMax = 10;
  for (const auto& p : report.policies) {
    if (!p.medianCurve.arrivedPercent.empty())
      xMax = std::max(xMax, p.medianCurve.arrivedPercent.back());
  }
  l.xMax = (xMax + 9) / 10 * 10;
  return l;
}

// Grid, ticks, axis labels, the plot's frame and the ideal line.
std::string axes(const Layout& l, const SimulationReport& report) {
  const int xMax = l.xMax;
  const double yMax = l.yMax;
  std::string s = "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n";
  for (int x = 0; x <= xMax; x += 10)
    s += "<line x1=\"" + num(l.X(x)) + "\" y1=\"" + num(l.Y(0)) + "\" x2=\"" + num(l.X(x)) +
         "\" y2=\"" + num(l.Y(yMax)) + "\"/>\n";
  for (int y = 0; y <= yMax; y += 10)
    s += "<line x1=\"" + num(l.X(0)) + "\" y1=\"" + num(l.Y(y)) + "\" x2=\"" + num(l.X(xMax)) +
         "\" y2=\"" + num(l.Y(y)) + "\"/>\n";
  s += "</g>\n<g fill=\"#333\">\n";
  for (int x = 0; x <= xMax; x += 10)
    s += "<text x=\"" + num(l.X(x)) + "\" y=\"" + num(l.Y(0) + 18) + "\" text-anchor=\"middle\">" +
         std::to_string(x) + "</text>\n";
  for (int y = 0; y <= yMax; y += 10)
    s += "<text x=\"" + num(l.X(0) - 8) + "\" y=\"" + num(l.Y(y) + 4) + "\" text-anchor=\"end\">" +
         std::to_string(y) + "</text>\n";
  s += "<text x=\"" + num(l.left + l.plotW / 2) + "\" y=\"" + num(l.h - 14) +
       "\" text-anchor=\"middle\">Arrived GPU request (% of " +
       std::to_string(report.capacity / kMilliPerGpu) + " GPUs)</text>\n";
  s += "<text transform=\"translate(18 " + num(l.top + l.plotH / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">GPU allocation (% of capacity)</text>\n";
  s += "</g>\n";
  s += "<rect x=\"" + num(l.X(0)) + "\" y=\"" + num(l.Y(yMax)) + "\" width=\"" + num(l.plotW) +
       "\" height=\"" + num(l.plotH) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  // Ideal: everything that arrived is allocated, up to the capacity.
  s += "<polyline points=\"" + num(l.X(0)) + "," + num(l.Y(0)) + " " + num(l.X(100)) + "," +
       num(l.Y(100)) + " " + num(l.X(xMax)) + "," + num(l.Y(100)) +
       "\" fill=\"none\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n";
  return s;
}

// Policy i's median curve (<path id="curve-i">) and its legend entry, with its allocation at 100 %
// arrived if the summary has that point.
std::string curveAndLegend(const Layout& l, const SimulationReport& report, std::size_t i) {
  const PolicyReport& p = report.policies[i];
  const char* color = kPalette[i % std::size(kPalette)];
  std::string d;
  bool pen = false;
  for (std::size_t k = 0; k < p.medianCurve.arrivedPercent.size(); ++k) {
    const auto& v = p.medianCurve.allocatedPercent[k];
    if (!v) {
      pen = false;
      continue;
    }
    d += (pen ? " L" : (d.empty() ? "M" : " M")) + num(l.X(p.medianCurve.arrivedPercent[k])) + " " +
         num(l.Y(std::clamp(*v, 0.0, l.yMax)));
    pen = true;
  }
  if (d.empty()) d = "M" + num(l.X(0)) + " " + num(l.Y(0));
  std::string s = "<path id=\"curve-" + std::to_string(i) + "\" class=\"curve\" data-policy=\"" +
                  xmlEscape(p.policy) + "\" d=\"" + d + "\" fill=\"none\" stroke=\"" + color +
                  "\" stroke-width=\"1.8\" vector-effect=\"non-scaling-stroke\"/>\n";
  const double ly = l.top + 10 + 22.0 * static_cast<double>(i);
  const double lx = l.w - l.right + 16;
  s += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 22) + "\" y2=\"" +
       num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"3\"/>\n";
  std::string label = p.policy;
  for (std::size_t j = 0; j < report.summaryPoints.size() && j < p.allocationAt.size(); ++j) {
    if (report.summaryPoints[j] == 100 && p.allocationAt[j]) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.2f%%", *p.allocationAt[j]);
      label += buf;
    }
  }
  s += "<text x=\"" + num(lx + 30) + "\" y=\"" + num(ly + 4) + "\">" + xmlEscape(label) +
       "</text>\n";
  return s;
}

}  // namespace

std::string xmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string plotSvg(const SimulationReport& report, const PlotOptions& options) {
  const Layout l = layoutOf(report, options);
  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(l.w) + "\" height=\"" + num(l.h) +
       "\" viewBox=\"0 0 " + num(l.w) + " " + num(l.h) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(l.w) + "\" height=\"" + num(l.h) +
       "\" fill=\"white\"/>\n";
  const std::string title =
      options.title.empty() ? "GPU allocation vs arrived GPU request" : options.title;
  s += "<text x=\"" + num(l.left) + "\" y=\"26\" font-size=\"15\" font-weight=\"bold\">" +
       xmlEscape(title) + "</text>\n";
  s += axes(l, report);
  for (std::size_t i = 0; i < report.policies.size(); ++i) s += curveAndLegend(l, report, i);
  s += zoomInset(report, {l.X(0), l.Y(0), l.X(l.xMax), l.Y(l.yMax), l.xMax, l.yMax});
  const double noteY = l.top + 10 + 22.0 * static_cast<double>(report.policies.size()) + 8;
  s += "<text x=\"" + num(l.w - l.right + 16) + "\" y=\"" + num(noteY) +
       "\" fill=\"#666\" font-size=\"10\">(at 100% arrived)</text>\n";
  s += "</svg>\n";
  return s;
}

}  // namespace gpufair::sim
