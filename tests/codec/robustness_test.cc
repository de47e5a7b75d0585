// Hostile input: every decoder must return a value or an error for anything it is fed, never crash,
// hang or read out of bounds (run under ASan/UBSan to make the last one visible).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"
#include "gpufair/common/quantity.h"

#include "codec_testing.h"

namespace gpufair::codec {
namespace {

struct Fixture {
  const char* file;
  bool (*decodes)(const std::string&);  // true: decoded; false: error (with a message)
};

template <typename T>
bool check(const Result<T>& r) {
  if (!r.ok()) {
    EXPECT_FALSE(r.error().empty());
  }
  return r.ok();
}

const Fixture kFixtures[] = {
    {"pod.json", [](const std::string& s) { return check(decodePodJson(s)); }},
    {"node.json", [](const std::string& s) { return check(decodeNodeJson(s)); }},
    {"configmap.json", [](const std::string& s) { return check(decodeConfigMapJson(s)); }},
};

TEST(DecoderRobustness, EveryPrefixIsAnErrorUntilComplete) {
  for (const auto& f : kFixtures) {
    std::string json = testing::testdata(f.file);
    while (!json.empty() && (json.back() == '\n' || json.back() == ' ')) json.pop_back();
    ASSERT_TRUE(f.decodes(json)) << f.file;
    for (std::size_t n = 0; n < json.size(); ++n) {
      // A proper prefix of one JSON object is never a complete document.
      EXPECT_FALSE(f.decodes(json.substr(0, n))) << f.file << " prefix of " << n << " bytes";
    }
  }
}

TEST(DecoderRobustness, ByteMutationsNeverCrash) {
  // Replacing any single byte with a structural character or a type-changing one must still end in
  // a value or an error; count both so the test shows it exercised the decoders.
  const char replacements[] = {'"', '{', '}', '[',  ']',  ',',   ':',
                               '0', '-', 'n', '\\', '\0', '\xff'};
  for (const auto& f : kFixtures) {
    const std::string json = testing::testdata(f.file);
    int decoded = 0;
    int rejected = 0;
    for (std::size_t i = 0; i < json.size(); i += 3) {
      for (char c : replacements) {
        std::string mutated = json;
        mutated[i] = c;
        (f.decodes(mutated) ? decoded : rejected)++;
      }
    }
    EXPECT_GT(decoded, 0) << f.file;
    EXPECT_GT(rejected, 0) << f.file;
  }
}

TEST(DecoderRobustness, RandomBytesAreRejected) {
  std::mt19937 rng(20261122);  // fixed seed: reproducible
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 64);
  for (int i = 0; i < 2000; ++i) {
    std::string s(static_cast<std::size_t>(length(rng)), '\0');
    for (auto& c : s) c = static_cast<char>(byte(rng));
    s.insert(0, "{");  // make the parser go past the first byte
    EXPECT_FALSE(decodePodJson(s).ok());
    EXPECT_FALSE(decodeNodeJson(s).ok());
    EXPECT_FALSE(decodeConfigMapJson(s).ok());
  }
}

TEST(DecoderRobustness, WrongTypesEverywhere) {
  // Each field of a pod replaced by each JSON type: decoded or rejected, never a crash.
  const std::vector<std::string> values = {"null",  "true", "0",  "-1.5e300", "\"\"",
                                           "\"x\"", "[]",   "{}", "[null]",   "{\"a\":null}"};
  const std::vector<std::string> templates = {
      R"({"metadata":{"name":"p","namespace":@,"labels":{"k":"v"}}})",
      R"({"metadata":{"name":"p","labels":@}})",
      R"({"metadata":{"name":"p","creationTimestamp":@}})",
      R"({"metadata":{"name":"p"},"spec":{"containers":@}})",
      R"({"metadata":{"name":"p"},"spec":{"containers":[@]}})",
      R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":@}]}})",
      R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":@}}]}})",
      R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":@}}}]}})",
      R"({"metadata":{"name":"p"},"spec":{"initContainers":[{"restartPolicy":@}]}})",
      R"({"metadata":{"name":"p"},"spec":{"overhead":@}})",
      R"({"metadata":{"name":"p"},"status":@})",
      R"({"metadata":{"name":"p"},"status":{"phase":@,"startTime":@}})",
  };
  int decoded = 0;
  int rejected = 0;
  for (const auto& t : templates) {
    for (const auto& v : values) {
      std::string json = t;
      for (auto at = json.find('@'); at != std::string::npos; at = json.find('@'))
        json.replace(at, 1, v);
      Result<policy::Pod> r = decodePodJson(json);
      if (r.ok()) {
        ++decoded;
        EXPECT_GE(r->gpus, 0) << json;
        EXPECT_EQ(r->name, "p") << json;
      } else {
        ++rejected;
        EXPECT_FALSE(r.error().empty()) << json;
      }
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(rejected, 0);
}

TEST(DecoderRobustness, DeepNestingIsAnError) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_FALSE(decodePodJson(deep).ok());
  const std::string deepObject =
      R"({"metadata":{"name":"p"},"x":)" + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_FALSE(decodePodJson(deepObject).ok());  // beyond simdjson's depth limit
}

TEST(DecoderRobustness, HugeNumbersAsQuantities) {
  for (const char* gpu : {"1e308", "-1e308", "18446744073709551615", "9223372036854775808",
                          "99999999999999999999999999", "\"9223372036854775807\"", "\"8Ei\""}) {
    const std::string json =
        std::string(
            R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":)") +
        gpu + "}}}]}}";
    Result<policy::Pod> r = decodePodJson(json);
    if (r.ok()) {
      EXPECT_GT(r->gpus, 0) << gpu;  // saturated, never wrapped to negative
    } else {
      EXPECT_FALSE(r.error().empty()) << gpu;
    }
  }
}

TEST(QuantityRobustness, EveryPrefixAndSuffixParsesOrFails) {
  for (const std::string text :
       {"-123.456e-7", "+0.000000001Ki", "12Gi", "1E18", "999999999999999999999999Ei"}) {
    for (std::size_t n = 0; n <= text.size(); ++n) {
      for (const std::string& piece : {text.substr(0, n), text.substr(n)}) {
        Result<Quantity> q = Quantity::parse(piece);
        if (q.ok()) {
          // Rounding away from zero never loses the sign.
          EXPECT_EQ(q->milliValue() < 0, q->isNegative()) << piece;
          EXPECT_EQ(q->value() < 0, q->isNegative()) << piece;
        } else {
          EXPECT_FALSE(q.error().empty()) << piece;
        }
      }
    }
  }
}

TEST(TimestampRobustness, EveryPrefixOfAValidTimestampIsAnError) {
  const std::string text = "2026-11-22T10:00:00.123456789+02:00";
  ASSERT_TRUE(parseTimestamp(text).ok());
  for (std::size_t n = 0; n < text.size(); ++n) {
    // Only the prefix ending right after the seconds' digits could look complete; it lacks a zone.
    EXPECT_FALSE(parseTimestamp(text.substr(0, n)).ok()) << text.substr(0, n);
  }
}

}  // namespace
}  // namespace gpufair::codec
