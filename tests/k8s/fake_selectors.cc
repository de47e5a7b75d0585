#include <stdexcept>

#include "k8s/fake_server_state.h"

namespace gpufair::k8s::fake {
namespace {

std::string trim(std::string s) {
  auto begin = s.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  auto end = s.find_last_not_of(' ');
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> splitTerms(const std::string& selector) {
  std::vector<std::string> out;
  std::string current;
  for (char c : selector) {
    if (c == ',') {
      out.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  out.push_back(trim(current));
  std::erase_if(out, [](const std::string& s) { return s.empty(); });
  return out;
}

// The value at a dotted path ("spec.nodeName"), as a string; "" when absent.
std::string fieldValue(const nlohmann::json& object, const std::string& path) {
  const nlohmann::json* at = &object;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto dot = path.find('.', start);
    auto part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(part)) return "";
    at = &(*at)[part];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_null()) return "";
  return at->dump();
}

}  // namespace

Selector Selector::parse(const std::string& labelSelector, const std::string& fieldSelector) {
  Selector out;
  for (bool field : {false, true}) {
    for (const auto& term : splitTerms(field ? fieldSelector : labelSelector)) {
      Requirement r;
      r.field = field;
      if (auto ne = term.find("!="); ne != std::string::npos) {
        r.key = trim(term.substr(0, ne));
        r.op = "!=";
        r.value = trim(term.substr(ne + 2));
      } else if (auto eq = term.find('='); eq != std::string::npos) {
        r.key = trim(term.substr(0, eq));
        r.op = "=";
        auto rest = term.substr(eq + 1);
        if (!rest.empty() && rest[0] == '=') rest.erase(0, 1);
        r.value = trim(rest);
      } else if (!field && term[0] == '!') {
        r.key = trim(term.substr(1));
        r.op = "!exists";
      } else if (!field) {
        r.key = term;
        r.op = "exists";
      } else {
        throw std::invalid_argument("invalid field selector term \"" + term + "\"");
      }
      out.requirements_.push_back(std::move(r));
    }
  }
  return out;
}

bool Selector::matches(const nlohmann::json& object) const {
  static const nlohmann::json kNoLabels = nlohmann::json::object();
  const auto& metadata = object.contains("metadata") ? object["metadata"] : kNoLabels;
  const auto& labels = metadata.contains("labels") && metadata["labels"].is_object()
                           ? metadata["labels"]
                           : kNoLabels;
  for (const auto& r : requirements_) {
    bool has = r.field || labels.contains(r.key);
    std::string value =
        r.field
            ? fieldValue(object, r.key)
            : (has && labels[r.key].is_string() ? labels[r.key].get<std::string>() : std::string());
    bool ok = false;
    if (r.op == "=") ok = has && value == r.value;
    if (r.op == "!=") ok = !has || value != r.value;
    if (r.op == "exists") ok = has;
    if (r.op == "!exists") ok = !has;
    if (!ok) return false;
  }
  return true;
}

}  // namespace gpufair::k8s::fake
