// The files `gpufair simulate` writes: the JSON report and the SVG plot.
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpufair/sim/report.h"
#include "gpufair/sim/svg_plot.h"

namespace gpufair::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SimulationReport twoPolicies(std::string secondName = "bestfit") {
  SimulationReport r;
  r.source = "nodes.csv + pods.csv";
  r.nodes = 3;
  r.capacity = 6000;
  r.templates = 10;
  r.load = 1.3;
  r.sampling = "inflate";
  r.seeds = {42, 43};
  r.summaryPoints = {90, 95, 100, 130};
  for (const std::string& name : {std::string("fgd"), secondName}) {
    PolicyReport p;
    p.policy = name;
    for (std::uint64_t seed : r.seeds) {
      RunReport run;
      run.seed = seed;
      run.pods = 12;
      run.placed = 10;
      run.failed = 2;
      run.arrivedGpus = 7800;
      run.allocatedGpus = 5600;
      for (int x = 0; x <= 130; ++x) {
        run.curve.arrivedPercent.push_back(x);
        if (x == 7) {  // a gap, as when no event is near
          run.curve.allocatedPercent.emplace_back();
          run.curve.fragmentedPercent.emplace_back();
          run.curve.fragmentedOfFreePercent.emplace_back();
          continue;
        }
        run.curve.allocatedPercent.emplace_back(std::min(x, 90 + static_cast<int>(seed % 2)));
        run.curve.fragmentedPercent.emplace_back(x / 20.0);
        run.curve.fragmentedOfFreePercent.emplace_back(x / 10.0);
      }
      p.runs.push_back(run);
    }
    r.policies.push_back(p);
  }
  summarize(r);
  return r;
}

TEST(JsonReport, FollowsTheSchema) {
  const auto j = nlohmann::json::parse(toJson(twoPolicies()));
  EXPECT_EQ(j["schema"], "gpufair.simulate/v1");
  EXPECT_EQ(j["scenario"]["nodes"], 3);
  EXPECT_EQ(j["scenario"]["gpu_capacity"], 6.0);
  EXPECT_EQ(j["protocol"]["load"], 1.3);
  EXPECT_EQ(j["protocol"]["sampling"], "inflate");
  EXPECT_EQ(j["protocol"]["seeds"], nlohmann::json::array({42, 43}));
  EXPECT_EQ(j["summary_points"], nlohmann::json::array({90, 95, 100, 130}));
  ASSERT_EQ(j["policies"].size(), 2u);
  const auto& fgd = j["policies"][0];
  EXPECT_EQ(fgd["policy"], "fgd");
  EXPECT_EQ(fgd["allocation_at_arrived"]["100"], 90.5) << "median of 90 and 91";
  ASSERT_EQ(fgd["runs"].size(), 2u);
  const auto& run = fgd["runs"][0];
  for (const char* key :
       {"seed", "pods", "placed", "failed", "arrived_gpus", "allocated_gpus", "seconds", "curve"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(run["allocated_gpus"], 5.6);
  const auto& curve = run["curve"];
  for (const char* key : {"arrived_percent", "allocated_percent", "fragmented_percent",
                          "fragmented_of_free_percent"}) {
    ASSERT_TRUE(curve[key].is_array()) << key;
    EXPECT_EQ(curve[key].size(), 131u) << key;
  }
  EXPECT_TRUE(curve["allocated_percent"][7].is_null()) << "gaps are null";
  EXPECT_EQ(curve["allocated_percent"][50], 50.0);
}

// A small well-formedness check: tags nest and close, attributes are quoted, text and attribute
// values carry no raw '<' and only known entities after '&'.
bool wellFormedXml(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  std::size_t i = 0;
  auto entityOk = [&](std::size_t at) {
    static const std::regex entity("&(amp|lt|gt|quot|apos|#[0-9]+);");
    return std::regex_search(xml.begin() + static_cast<long>(at), xml.end(), entity,
                             std::regex_constants::match_continuous);
  };
  while (i < xml.size()) {
    if (xml[i] == '&' && !entityOk(i)) return why = "bad entity at " + std::to_string(i), false;
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return why = "unclosed tag", false;
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("?")) continue;
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1)) return why = "mismatched </" + tag, false;
      open.pop_back();
      continue;
    }
    const bool selfClosing = tag.ends_with("/");
    if (selfClosing) tag.pop_back();
    const std::string name = tag.substr(0, tag.find_first_of(" \n"));
    static const std::regex attrs(R"(^[A-Za-z_:][\w:.-]*(\s+[A-Za-z_:][\w:.-]*="[^"<]*")*\s*$)");
    if (!std::regex_match(tag, attrs)) return why = "bad attributes in <" + tag + ">", false;
    if (!selfClosing) open.push_back(name);
  }
  if (!open.empty()) return why = "unclosed <" + open.back() + ">", false;
  return true;
}

TEST(SvgPlot, IsWellFormedXmlWithOnePathPerPolicy) {
  const std::string svg = plotSvg(twoPolicies("we<ird&name"), {"openb \"default\"", 760, 500});
  std::string why;
  EXPECT_TRUE(wellFormedXml(svg, why)) << why;
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  std::size_t paths = 0;
  for (std::size_t at = svg.find("<path"); at != std::string::npos; at = svg.find("<path", at + 1))
    ++paths;
  EXPECT_EQ(paths, 2u);
  EXPECT_THAT(svg, HasSubstr("data-policy=\"fgd\""));
  EXPECT_THAT(svg, HasSubstr("we&lt;ird&amp;name"));
  EXPECT_THAT(svg, Not(HasSubstr("we<ird")));
  EXPECT_THAT(svg, HasSubstr("openb &quot;default&quot;"));
  EXPECT_THAT(svg, HasSubstr("fgd 90.50%")) << "legend carries the value at 100% arrived";
  EXPECT_THAT(svg, HasSubstr(">130</text>")) << "x axis ticks up to the load";
  // A gap in the curve starts a new subpath.
  EXPECT_THAT(svg, HasSubstr(" M"));
}

TEST(SvgPlot, CheckerRejectsBrokenXml) {
  std::string why;
  EXPECT_FALSE(wellFormedXml("<svg><g></svg>", why));
  EXPECT_FALSE(wellFormedXml("<svg a=b/>", why));
  EXPECT_FALSE(wellFormedXml("<svg>a & b</svg>", why));
  EXPECT_TRUE(wellFormedXml("<?xml version=\"1.0\"?><svg a=\"1\"><g/>x &amp; y</svg>", why));
}

}  // namespace
}  // namespace gpufair::sim
