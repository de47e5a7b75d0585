// Gang membership from the label gpufair.io/gang and the annotation gpufair.io/gang-size.
#include <string>

#include <gtest/gtest.h>

#include "gpufair/codec/objects.h"

namespace gpufair::codec {
namespace {

std::string pod(const std::string& labels, const std::string& annotations) {
  return R"({"metadata":{"name":"train-0","namespace":"team-b","labels":)" + labels +
         R"(,"annotations":)" + annotations +
         R"(},"spec":{"containers":[{"name":"main","resources":{"requests":{"nvidia.com/gpu":"8"}}}]}})";
}

TEST(DecodeGang, ReadsTheGangAndItsSize) {
  auto r = decodePodJson(pod(R"({"gpufair.io/gang":"train"})", R"({"gpufair.io/gang-size":"4"})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gang, "train");
  EXPECT_EQ(r->gangSize, 4);
  EXPECT_EQ(r->gangKey(), "gang:team-b/train");
  EXPECT_EQ(r->gangError, "");
}

TEST(DecodeGang, APodWithoutTheLabelIsNoMember) {
  auto r = decodePodJson(pod("{}", R"({"gpufair.io/gang-size":"4"})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->inGang());
  EXPECT_EQ(r->gangKey(), "");
}

// The pod still decodes (it may be running and hold GPUs); the reason waits for filter.
TEST(DecodeGang, AnUnreadableSizeIsAReasonNotADecodeError) {
  auto r = decodePodJson(pod(R"({"gpufair.io/gang":"train"})", R"({"gpufair.io/gang-size":"-1"})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->gpus, 8000);
  EXPECT_EQ(r->gangSize, 0);
  EXPECT_EQ(r->gangError,
            "annotation gpufair.io/gang-size of pod team-b/train-0: \"-1\" is not a whole number "
            "from 1 to 100000");
  auto missing = decodePodJson(pod(R"({"gpufair.io/gang":"train"})", "{}"));
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_NE(missing->gangError.find("has no annotation gpufair.io/gang-size"), std::string::npos);
}

}  // namespace
}  // namespace gpufair::codec
