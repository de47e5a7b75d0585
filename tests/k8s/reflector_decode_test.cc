// The reflector's LIST and WATCH decoders: the object text the sinks get, resourceVersions, ERROR
// statuses, and lines that are not what the API server writes.
#include "reflector_decode.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpufair::k8s {
namespace {

constexpr const char* kPod =
    R"({"metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"42"},)"
    R"("spec":{"nodeName":"n1"},"status":{"phase":"Running"}})";

TEST(WatchDecoder, CanonicalLinesPassTheObjectTextOnAsIs) {
  WatchDecoder decoder;
  for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
    const std::string line = std::string(R"({"type":")") + type + R"(","object":)" + kPod + "}";
    auto event = decoder.decode(line);
    ASSERT_TRUE(event.ok()) << event.error();
    EXPECT_EQ(event->type, type);
    EXPECT_EQ(event->object, kPod);
    EXPECT_EQ(simdjson::minify(event->parsed), kPod);  // what the sink decodes, parsed once
    EXPECT_EQ(event->resourceVersion, "42");
  }
}

TEST(WatchDecoder, OtherShapesAreParsedWhole) {
  WatchDecoder decoder;
  // Object first, spaces, an extra field: still one event with the same object.
  const std::string lines[] = {
      std::string(R"({"object":)") + kPod + R"(,"type":"MODIFIED"})",
      std::string(R"( { "type" : "MODIFIED" , "object" : )") + kPod + " }\r\n",
      std::string(R"({"type":"MODIFIED","object":)") + kPod + R"(,"extra":{"a":1}})",
  };
  for (const auto& line : lines) {
    auto event = decoder.decode(line);
    ASSERT_TRUE(event.ok()) << line << ": " << event.error();
    EXPECT_EQ(event->type, "MODIFIED");
    EXPECT_EQ(nlohmann::json::parse(event->object), nlohmann::json::parse(kPod)) << line;
    EXPECT_EQ(simdjson::minify(event->parsed), event->object) << line;
    EXPECT_EQ(event->resourceVersion, "42");
  }
}

TEST(WatchDecoder, BookmarksCarryOnlyTheirVersion) {
  WatchDecoder decoder;
  auto event = decoder.decode(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"77",)"
      R"("annotations":{"k8s.io/initial-events-end":"true"}}}})");
  ASSERT_TRUE(event.ok()) << event.error();
  EXPECT_EQ(event->type, "BOOKMARK");
  EXPECT_EQ(event->resourceVersion, "77");
  EXPECT_TRUE(event->object.empty());
}

TEST(WatchDecoder, ErrorEventsCarryTheStatus) {
  WatchDecoder decoder;
  auto event = decoder.decode(
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)"
      R"j("message":"too old resource version: 1 (500)","reason":"Expired","code":410}})j");
  ASSERT_TRUE(event.ok()) << event.error();
  EXPECT_EQ(event->type, "ERROR");
  EXPECT_EQ(event->code, 410);
  EXPECT_EQ(event->message, "too old resource version: 1 (500)");
}

TEST(WatchDecoder, BrokenLinesAreErrorsNotCrashes) {
  WatchDecoder decoder;
  const std::string bad[] = {
      "",
      "not json",
      R"({"type":"ADDED","object":{"metadata":)",  // cut mid-object
      R"({"type":"ADDED"})",
      R"({"object":{}})",
      R"({"type":"ADDED","object":"text"})",
      R"({"type":"ADDED","object":{"a":1}}})",  // one brace too many
  };
  for (const auto& line : bad) {
    EXPECT_FALSE(decoder.decode(line).ok()) << line;
  }
}

TEST(ListDecoder, ItemsKeepTheirTextAndTheContinueToken) {
  ListDecoder decoder;
  std::string body = std::string(R"({"kind":"PodList","metadata":{"resourceVersion":"9",)") +
                     R"("continue":"abc"},"items":[)" + kPod + "," + kPod + "]}";
  std::vector<std::string> items;
  auto page = decoder.decode(body, items);
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_EQ(page->resourceVersion, "9");
  EXPECT_EQ(page->continueToken, "abc");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], kPod);
}

}  // namespace
}  // namespace gpufair::k8s
