// Private helpers of the config module around yaml-cpp: locating nodes in their file, loading
// documents with line-numbered syntax errors, and converting YAML trees to JSON for the codec.
// yaml-cpp stays inside src/config; nothing here is part of the public API.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpufair/common/status.h"

namespace gpufair::config::detail {

// Where a parsed text sits in the file the user edits. Marks are 0-based; messages are 1-based.
// A document embedded in a literal block scalar is shifted by the block's first line and indent.
struct Locator {
  std::string source;
  int lineOffset = 0;
  int columnOffset = 0;

  // "source:LINE:COL" (or just "source" for a null mark).
  std::string at(const YAML::Mark& mark) const;
  // "source:LINE" of the node's first line.
  std::string line(const YAML::Mark& mark) const;
  int fileLine(const YAML::Mark& mark) const { return mark.line + lineOffset + 1; }
};

// Errors collected while walking a document; reported all at once, one per line.
class ErrorList {
 public:
  void add(const Locator& where, const YAML::Mark& mark, std::string_view what);
  void addRaw(std::string message) { errors_.push_back(std::move(message)); }
  bool empty() const { return errors_.empty(); }
  std::size_t size() const { return errors_.size(); }
  std::string joined() const;

 private:
  std::vector<std::string> errors_;
};

// All documents of a YAML (or JSON) stream. A syntax error fails with "source:LINE:COL: ...".
Result<std::vector<YAML::Node>> loadDocuments(std::string_view text, const Locator& where);

// The Locator of a string value embedded in `fileText`: mapped to file lines when the value is a
// literal block scalar ("key: |"), else named "<context>" with lines counted inside the value.
Locator embeddedLocator(const YAML::Node& value, std::string_view fileText, const Locator& file,
                        std::string_view context);

// JSON text of a YAML tree. Plain (unquoted) scalars that are JSON numbers or true/false become
// numbers and bools; null stays null; every other scalar, and every quoted one, is a string. Values
// of Kubernetes string maps (labels, annotations, nodeSelector, matchLabels, data) are always
// strings.
std::string toJson(const YAML::Node& node);

// "a map", "a list", "a string", "null": what a node is, for messages.
const char* describe(const YAML::Node& node);

// A child of a map by exact key, or an undefined node.
YAML::Node child(const YAML::Node& map, std::string_view key);

// The scalar value at `key` of a map, or "" when absent or not a scalar.
std::string scalarAt(const YAML::Node& map, std::string_view key);

Result<std::string> readFile(const std::string& path);

// `words` joined as "a, b, c".
std::string joinWords(std::span<const std::string_view> words);

// The closest of `candidates` to `word` when it is a likely typo (edit distance <= 2), else "".
std::string_view closestWord(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace gpufair::config::detail
