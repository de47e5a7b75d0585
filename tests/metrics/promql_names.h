// The metric names a PromQL expression reads: identifiers that are not functions, keywords,
// aggregation modifiers' label lists, label matchers, durations, strings or numbers.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <string_view>

namespace gpufair::metrics::testsupport {

inline std::set<std::string> promqlMetricNames(std::string_view expr) {
  static const std::set<std::string, std::less<>> kKeywords = {
      "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or",
      "unless", "inf", "nan", "atan2",
      // aggregation operators, which may take their modifier before the parenthesis
      "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
      "topk", "quantile"};
  static const std::set<std::string, std::less<>> kLabelLists = {
      "by", "without", "on", "ignoring", "group_left", "group_right"};
  std::set<std::string> names;
  std::size_t i = 0;
  auto skipTo = [&](char close) {
    while (i < expr.size() && expr[i] != close) {
      if (expr[i] == '"' || expr[i] == '\'') {
        const char quote = expr[i++];
        while (i < expr.size() && expr[i] != quote) i += expr[i] == '\\' ? 2 : 1;
      }
      ++i;
    }
    ++i;
  };
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '{') {
      ++i;
      skipTo('}');
    } else if (c == '[') {
      ++i;
      skipTo(']');
    } else if (c == '"' || c == '\'') {
      ++i;
      skipTo(c);
    } else if (c == '$') {  // a dashboard variable
      ++i;
      while (i < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '_'))
        ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      while (i < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.'))
        ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':') {
      const std::size_t start = i;
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) ||
                                 expr[i] == '_' || expr[i] == ':'))
        ++i;
      const std::string word(expr.substr(start, i - start));
      std::size_t next = i;
      while (next < expr.size() && std::isspace(static_cast<unsigned char>(expr[next]))) ++next;
      const bool call = next < expr.size() && expr[next] == '(';
      if (kLabelLists.count(word) && call) {
        i = next + 1;
        skipTo(')');
      } else if (!call && !kKeywords.count(word)) {
        names.insert(word);
      }
    } else {
      ++i;
    }
  }
  return names;
}

}  // namespace gpufair::metrics::testsupport
