// The YAML-to-JSON conversion that feeds cluster-file objects to the codec.
#include <gtest/gtest.h>

#include "yaml_support.h"

namespace gpufair::config::detail {
namespace {

struct JsonCase {
  const char* name;
  const char* yaml;
  const char* json;
};

void PrintTo(const JsonCase& c, std::ostream* os) {
  *os << c.name;
}

class YamlToJson : public ::testing::TestWithParam<JsonCase> {};

TEST_P(YamlToJson, ConvertsFaithfully) {
  YAML::Node node = YAML::Load(GetParam().yaml);
  EXPECT_EQ(toJson(node), GetParam().json);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, YamlToJson,
    ::testing::Values(
        JsonCase{"PlainNumbers", "a: 10\nb: -2.5\nc: 1e3\nd: 0",
                 R"({"a":10,"b":-2.5,"c":1e3,"d":0})"},
        JsonCase{"QuotedNumbersStayStrings", "a: \"10\"\nb: '2.5'", R"({"a":"10","b":"2.5"})"},
        JsonCase{"NotJsonNumbersAreStrings", "a: 500m\nb: 012\nc: +1\nd: 1.\ne: .5\nf: 0x1F",
                 R"({"a":"500m","b":"012","c":"+1","d":"1.","e":".5","f":"0x1F"})"},
        JsonCase{"Bools", "a: true\nb: False\nc: \"true\"\nd: yes",
                 R"({"a":true,"b":false,"c":"true","d":"yes"})"},
        JsonCase{"Nulls", "a: null\nb: ~\nc:\nd: \"null\"",
                 R"({"a":null,"b":null,"c":null,"d":"null"})"},
        JsonCase{"ExplicitStringTag", "a: !!str 12", R"({"a":"12"})"},
        JsonCase{"Sequences", "- 1\n- [a, \"b\"]\n- {}", R"([1,["a","b"],{}])"},
        JsonCase{"Escapes", "a: \"q\\\"b\\\\s\\tt\\x01\"\nb: |\n  x\n  y\n",
                 R"({"a":"q\"b\\s\tt\u0001","b":"x\ny\n"})"},
        JsonCase{"Utf8PassesThrough", "a: caf\xC3\xA9", "{\"a\":\"caf\xC3\xA9\"}"},
        JsonCase{"StringMapsHoldStrings",
                 "metadata:\n  labels: {n: 4, b: true, e: }\n  annotations: {x: 1.5}\n"
                 "data: {k: 7}\nspec: {nodeSelector: {gpu: true}, replicas: 3}",
                 R"({"metadata":{"labels":{"n":"4","b":"true","e":""},"annotations":{"x":"1.5"}},)"
                 R"("data":{"k":"7"},"spec":{"nodeSelector":{"gpu":"true"},"replicas":3}})"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(EmbeddedLocator, LiteralBlocksMapToFileLines) {
  const std::string text = "data:\n  queues.yaml: |\n    queues:\n    - name: a\n";
  YAML::Node root = YAML::Load(text);
  Locator loc = embeddedLocator(root["data"]["queues.yaml"], text, Locator{"f.yaml", 0, 0}, "ctx");
  EXPECT_EQ(loc.source, "f.yaml");
  EXPECT_EQ(loc.lineOffset, 2);
  EXPECT_EQ(loc.columnOffset, 4);
  YAML::Node inner = YAML::Load(root["data"]["queues.yaml"].Scalar());
  EXPECT_EQ(loc.at(inner["queues"][0]["name"].Mark()), "f.yaml:4:13");
}

TEST(EmbeddedLocator, QuotedValuesAreNamedByContext) {
  const std::string text = "data:\n  queues.yaml: \"queues: []\\n\"\n";
  YAML::Node root = YAML::Load(text);
  Locator loc = embeddedLocator(root["data"]["queues.yaml"], text, Locator{"f.yaml", 0, 0}, "ctx");
  EXPECT_EQ(loc.source, "f.yaml:2: ctx");
  EXPECT_EQ(loc.lineOffset, 0);
  EXPECT_EQ(loc.columnOffset, 0);
}

}  // namespace
}  // namespace gpufair::config::detail
