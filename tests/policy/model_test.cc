// The model types' own rules: phases, GPU shapes, allowed models and gang labels.
#include "gpufair/policy/model.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gpufair::policy {
namespace {

using testing::MakePod;

TEST(PodPhase, NamesRoundTripAndUnknownTextIsUnknown) {
  for (PodPhase p : {PodPhase::kPending, PodPhase::kRunning, PodPhase::kSucceeded,
                     PodPhase::kFailed, PodPhase::kUnknown}) {
    EXPECT_EQ(parsePhase(phaseName(p)), p) << phaseName(p);
  }
  EXPECT_EQ(parsePhase(""), PodPhase::kPending);  // no status yet
  EXPECT_EQ(parsePhase("running"), PodPhase::kUnknown);
}

TEST(PodShape, WholeAndFractionalRequests) {
  Pod p;
  p.setWholeGpus(3);
  EXPECT_EQ(p.gpus, 3000);
  EXPECT_FALSE(p.isFractional());
  EXPECT_EQ(p.gpuCount(), 3);
  EXPECT_EQ(p.perGpu(), kMilliPerGpu);
  EXPECT_EQ(p.gpusUsed(), 3);
  p.setGpuShare(250);
  EXPECT_TRUE(p.isFractional());
  EXPECT_EQ(p.gpuCount(), 0);
  EXPECT_EQ(p.perGpu(), 250);
  EXPECT_EQ(p.gpusUsed(), 1);
  p.setGpuShare(1000);  // a whole GPU is not a share
  EXPECT_FALSE(p.isFractional());
  EXPECT_EQ(p.gpuCount(), 1);
  p.gpus = 1500;  // set alone: a whole-GPU pod, rounded up
  p.gpuShare = 0;
  EXPECT_EQ(p.gpuCount(), 2);
  Pod none;
  EXPECT_EQ(none.perGpu(), 0);
  EXPECT_EQ(none.gpusUsed(), 0);
}

TEST(PodShape, HoldsGpusWhileBoundAndNotFinished) {
  EXPECT_FALSE(MakePod("t", "pending").gpus(1).obj().holdsGpus());
  EXPECT_TRUE(MakePod("t", "running").gpus(1).on("n").obj().holdsGpus());
  EXPECT_TRUE(MakePod("t", "stopping").gpus(1).on("n").terminating().obj().holdsGpus());
  const Pod done = MakePod("t", "done").gpus(1).on("n").phase(PodPhase::kSucceeded);
  EXPECT_FALSE(done.holdsGpus());
  EXPECT_TRUE(done.isFinished());
}

TEST(PodModels, EmptyAllowsAnyModel) {
  EXPECT_TRUE(MakePod("t", "any").obj().allowsModel("A100"));
  EXPECT_TRUE(MakePod("t", "any").obj().allowsModel(""));
  const Pod picky = MakePod("t", "picky").models({"V100M16", "V100M32"});
  EXPECT_TRUE(picky.allowsModel("V100M32"));
  EXPECT_FALSE(picky.allowsModel("V100"));
  EXPECT_FALSE(picky.allowsModel(""));
}

TEST(GangLabels, KeysAndErrors) {
  Pod p = MakePod("team-b", "w").gang("train", 4);
  EXPECT_EQ(p.gangKey(), "gang:team-b/train");
  EXPECT_EQ(p.gangName(), "team-b/train");
  EXPECT_EQ(p.gangSize, 4);
  p.annotations[kGangSizeAnnotation] = " 8 ";  // spaces around the number are fine
  applyGangLabels(p);
  EXPECT_EQ(p.gangSize, 8);
  EXPECT_TRUE(p.gangError.empty());
  for (const char* bad : {"0", "-1", "4.5", "100001", "", "four"}) {
    p.annotations[kGangSizeAnnotation] = bad;
    applyGangLabels(p);
    EXPECT_EQ(p.gangSize, 0) << bad;
    EXPECT_NE(p.gangError.find("is not a whole number from 1 to 100000"), std::string::npos)
        << bad << ": " << p.gangError;
  }
  p.annotations.erase(kGangSizeAnnotation);
  applyGangLabels(p);
  EXPECT_NE(p.gangError.find("has no annotation gpufair.io/gang-size"), std::string::npos);
  p.labels.erase(kGangLabel);
  applyGangLabels(p);
  EXPECT_FALSE(p.inGang());
  EXPECT_EQ(p.gangKey(), "");
  EXPECT_TRUE(p.gangError.empty());
}

}  // namespace
}  // namespace gpufair::policy
