#include "yaml_support.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

#include <yaml-cpp/eventhandler.h>

#include "gpufair/common/json.h"

namespace gpufair::config::detail {
namespace {

bool isJsonNumber(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// Keys whose values Kubernetes types as map[string]string: their scalars are always strings, so a
// hand-written `gpufair.io/gang-size: 4` or `gpufair.io/quota-config: true` means what it says.
bool isStringMapKey(std::string_view key) {
  return key == "labels" || key == "annotations" || key == "nodeSelector" || key == "matchLabels" ||
         key == "data" || key == "stringData";
}

// stringMap: `node` is one of those maps, so its scalar values are emitted as strings (null as "",
// as Go decodes a JSON null into a string).
void appendJson(const YAML::Node& node, std::string& out, bool stringMap) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      out += '{';
      bool first = true;
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (!first) out += ',';
        first = false;
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
        appendJsonString(out, key);
        out += ':';
        if (stringMap && (it->second.IsScalar() || it->second.IsNull())) {
          appendJsonString(out, it->second.IsScalar() ? it->second.Scalar() : std::string());
        } else {
          appendJson(it->second, out, isStringMapKey(key));
        }
      }
      out += '}';
      return;
    }
    case YAML::NodeType::Sequence: {
      out += '[';
      bool first = true;
      for (const auto& item : node) {
        if (!first) out += ',';
        first = false;
        appendJson(item, out, false);
      }
      out += ']';
      return;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "?") {
        if (isJsonNumber(s)) {
          out += s;
          return;
        }
        if (s == "true" || s == "True" || s == "TRUE") {
          out += "true";
          return;
        }
        if (s == "false" || s == "False" || s == "FALSE") {
          out += "false";
          return;
        }
      }
      appendJsonString(out, s);
      return;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out += "null";
      return;
  }
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string Locator::at(const YAML::Mark& mark) const {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + lineOffset + 1) + ":" +
         std::to_string(mark.column + columnOffset + 1);
}

std::string Locator::line(const YAML::Mark& mark) const {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + lineOffset + 1);
}

void ErrorList::add(const Locator& where, const YAML::Mark& mark, std::string_view what) {
  errors_.push_back(where.at(mark) + ": " + std::string(what));
}

std::string ErrorList::joined() const {
  std::string out;
  for (const auto& e : errors_) {
    if (!out.empty()) out += '\n';
    out += e;
  }
  return out;
}

namespace {

// Counts documents without building nodes, and gives up once there are more than `limit`.
class DocumentCounter final : public YAML::EventHandler {
 public:
  explicit DocumentCounter(std::size_t limit) : limit_(limit) {}
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > limit_) {
      throw YAML::ParserException(mark, "the YAML parser does not advance past this point");
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::size_t limit_;
  std::size_t documents_ = 0;
};

// yaml-cpp 0.7 (Debian 12) never finishes LoadAll on some malformed streams: a flow entry at
// document level ("\"x\",", found by tests/fuzz/fuzz_quota_yaml) yields empty documents forever,
// allocating until the process runs out of memory. A stream holds at most one document more than
// it has "---" and "..." markers, so the documents are counted first (events only, no nodes)
// against that bound, and such input is a syntax error.
void checkDocumentsEnd(std::string_view text) {
  std::size_t markers = 0;
  for (std::string_view marker : {"---", "..."}) {
    for (auto pos = text.find(marker); pos != std::string_view::npos;
         pos = text.find(marker, pos + 3)) {
      ++markers;
    }
  }
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  DocumentCounter counter(markers + 1);
  while (parser.HandleNextDocument(counter)) {
  }
}

}  // namespace

Result<std::vector<YAML::Node>> loadDocuments(std::string_view text, const Locator& where) {
  try {
    checkDocumentsEnd(text);
    return YAML::LoadAll(std::string(text));
  } catch (const YAML::ParserException& e) {
    return Result<std::vector<YAML::Node>>::failure(where.at(e.mark) +
                                                    ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    return Result<std::vector<YAML::Node>>::failure(where.at(e.mark) + ": invalid YAML: " + e.msg);
  }
}

Locator embeddedLocator(const YAML::Node& value, std::string_view fileText, const Locator& file,
                        std::string_view context) {
  Locator fallback{file.line(value.Mark()) + ": " + std::string(context), 0, 0};
  const YAML::Mark mark = value.Mark();
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return fallback;
  // Find the start of the mark's line, then check that a literal block ("|", "|-", "|+") starts
  // there.
  std::size_t pos = 0;
  for (int line = 0; line < mark.line; ++line) {
    pos = fileText.find('\n', pos);
    if (pos == std::string_view::npos) return fallback;
    ++pos;
  }
  std::size_t indicator = pos + static_cast<std::size_t>(mark.column);
  if (indicator >= fileText.size() || fileText[indicator] != '|') return fallback;
  // Literal blocks keep every line, so line k of the value is line mark.line + 1 + k of the file,
  // shifted right by the block's indentation (that of its first non-blank line).
  std::size_t next = fileText.find('\n', indicator);
  int indent = 0;
  while (next != std::string_view::npos) {
    std::size_t lineStart = next + 1;
    std::size_t i = lineStart;
    while (i < fileText.size() && fileText[i] == ' ') ++i;
    if (i < fileText.size() && fileText[i] != '\n' && fileText[i] != '\r') {
      indent = static_cast<int>(i - lineStart);
      break;
    }
    next = fileText.find('\n', lineStart);
  }
  return Locator{file.source, file.lineOffset + mark.line + 1, file.columnOffset + indent};
}

std::string toJson(const YAML::Node& node) {
  std::string out;
  appendJson(node, out, false);
  return out;
}

const char* describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "nothing";
}

YAML::Node child(const YAML::Node& map, std::string_view key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string scalarAt(const YAML::Node& map, std::string_view key) {
  YAML::Node value = child(map, key);
  return value.IsScalar() ? value.Scalar() : std::string();
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Result<std::string>::failure(path +
                                        ": cannot open: " + std::generic_category().message(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Result<std::string>::failure(path +
                                        ": cannot read: " + std::generic_category().message(errno));
  return text.str();
}

std::string joinWords(std::span<const std::string_view> words) {
  std::string out;
  for (auto w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

std::string_view closestWord(std::string_view word, std::span<const std::string_view> candidates) {
  std::string_view best;
  std::size_t bestDistance = 3;
  for (auto c : candidates) {
    std::size_t d = editDistance(word, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace gpufair::config::detail
