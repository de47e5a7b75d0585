#include "gpufair/common/json.h"

#include <string>

#include <gtest/gtest.h>

namespace gpufair {
namespace {

std::string literal(std::string_view text) {
  std::string out = "x";  // appends, never replaces
  appendJsonString(out, text);
  return out;
}

TEST(AppendJsonString, PlainTextIsCopiedBetweenQuotes) {
  EXPECT_EQ(literal(""), "x\"\"");
  EXPECT_EQ(literal(std::string_view()), "x\"\"");  // null data(): no memcpy from it (UBSan)
  EXPECT_EQ(literal("gpu-node-1"), "x\"gpu-node-1\"");
  EXPECT_EQ(literal("a longer name than eight bytes"), "x\"a longer name than eight bytes\"");
  EXPECT_EQ(literal("\xc3\xa9t\xc3\xa9"), "x\"\xc3\xa9t\xc3\xa9\"");  // UTF-8 passes through
}

TEST(AppendJsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(literal("say \"hi\""), "x\"say \\\"hi\\\"\"");
  EXPECT_EQ(literal("C:\\path"), "x\"C:\\\\path\"");
  EXPECT_EQ(literal("a\nb\tc\rd\be\ff"), "x\"a\\nb\\tc\\rd\\be\\ff\"");
  EXPECT_EQ(literal(std::string_view("\x01\x1f", 2)), "x\"\\u0001\\u001f\"");
  EXPECT_EQ(literal(std::string_view("\0", 1)), "x\"\\u0000\"");
  // Escapes found by the 8-byte scan at every position, including the overlapping tail.
  for (std::size_t at = 0; at < 19; ++at) {
    std::string text(19, 'a');
    text[at] = '"';
    std::string expected = "x\"" + std::string(at, 'a') + "\\\"" + std::string(18 - at, 'a') + "\"";
    EXPECT_EQ(literal(text), expected) << "quote at " << at;
  }
}

}  // namespace
}  // namespace gpufair
