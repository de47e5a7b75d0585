// The ports of state/ports.h as the file mode implements them: MirrorEvictor, and the names of
// eviction outcomes used in logs.
#include "gpufair/state/mirror_evictor.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gpufair::state {
namespace {

using testing::MakeNode;
using testing::MakePod;

TEST(MirrorEvictorTest, DeletesThePodOrSaysItIsGone) {
  auto clock = std::make_shared<testing::ManualClock>();
  Mirror mirror(clock);
  mirror.upsertNode(MakeNode("node-1").gpus(8));
  const policy::Pod pod = MakePod("team-a", "a").gpus(8).on("node-1");
  mirror.upsertPod(pod);
  MirrorEvictor evictor(mirror);
  EXPECT_EQ(evictor.evict(pod, "why").outcome, EvictOutcome::kEvicted);
  EXPECT_EQ(mirror.findPod(pod.uid), nullptr);
  EXPECT_EQ(mirror.snapshot()->findNode("node-1")->free(), testing::gpus(8));
  EXPECT_EQ(evictor.evict(pod, "why").outcome, EvictOutcome::kNotFound);
}

TEST(EvictOutcomeTest, EveryOutcomeHasAName) {
  EXPECT_STREQ(evictOutcomeName(EvictOutcome::kEvicted), "evicted");
  EXPECT_STREQ(evictOutcomeName(EvictOutcome::kRefused), "refused");
  EXPECT_STREQ(evictOutcomeName(EvictOutcome::kNotFound), "not-found");
  EXPECT_STREQ(evictOutcomeName(EvictOutcome::kError), "error");
}

}  // namespace
}  // namespace gpufair::state
