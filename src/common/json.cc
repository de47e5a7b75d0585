#include "gpufair/common/json.h"

#include <cstdint>
#include <cstring>

namespace gpufair {
namespace {

// Names and reasons rarely need escaping: scan 8 bytes at a time for a control character, '"' or
// '\\' (the classic "has a zero byte" bit trick on word ^ pattern), then byte by byte within a hit.
bool needsEscape(unsigned char c) {
  return c < 0x20 || c == '"' || c == '\\';
}

bool wordNeedsEscape(std::uint64_t word) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  auto hasZeroByte = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const std::uint64_t control = (word - kOnes * 0x20) & ~word & kHighs;  // a byte below 0x20
  return (control | hasZeroByte(word ^ (kOnes * '"')) | hasZeroByte(word ^ (kOnes * '\\'))) != 0;
}

std::size_t firstToEscape(std::string_view text, std::size_t from) {
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, text.data() + i, sizeof word);
    if (wordNeedsEscape(word)) break;
  }
  if (i < text.size() && i + 8 > text.size() && text.size() >= 8) {
    // The tail: the last 8 bytes, overlapping bytes already known to be clean.
    std::uint64_t word;
    std::memcpy(&word, text.data() + text.size() - 8, sizeof word);
    if (!wordNeedsEscape(word)) return text.size();
  }
  for (; i < text.size(); ++i) {
    if (needsEscape(static_cast<unsigned char>(text[i]))) return i;
  }
  return text.size();
}

}  // namespace

bool isPlainJsonString(std::string_view text) {
  return firstToEscape(text, 0) == text.size();
}

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t i = firstToEscape(text, 0);
  if (i == text.size()) {  // the common case: one copy between quotes
    const std::size_t at = out.size();
    out.resize(at + text.size() + 2);
    char* to = out.data() + at;
    to[0] = '"';
    // An empty string_view may have a null data(); memcpy must not be given one.
    if (!text.empty()) std::memcpy(to + 1, text.data(), text.size());
    to[text.size() + 1] = '"';
    return;
  }
  out += '"';
  std::size_t runStart = 0;
  for (; i < text.size(); i = firstToEscape(text, i + 1)) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.append(text.data() + runStart, i - runStart);
    runStart = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(text.data() + runStart, text.size() - runStart);
  out += '"';
}

}  // namespace gpufair
