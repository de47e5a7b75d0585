// A hand-written SVG line chart of a simulation: allocated GPUs (% of capacity) against arrived
// GPU request (% of capacity), one <path class="curve"> per policy (the median over seeds at each
// point), axes with ticks, a dashed y = x reference and a legend with each policy's value at 100%
// arrived. Self-contained (no scripts, no external fonts); renders in browsers and rsvg-convert.
// Thread-safety: a pure function.
#pragma once

#include <string>

#include "gpufair/sim/report.h"

namespace gpufair::sim {

struct PlotOptions {
  std::string title;  // empty: "GPU allocation vs arrived GPU request"
  int width = 760;
  int height = 500;
};

std::string plotSvg(const SimulationReport& report, const PlotOptions& options = {});

// Text for SVG/XML: & < > " ' escaped.
std::string xmlEscape(std::string_view text);

}  // namespace gpufair::sim
