// Shared by the reclaim tests (reclaim_test.cc, reclaim_rules_test.cc): a fixed now, clusters of
// identical nodes and the queue and pod sets the cases start from.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gpufair/policy/reclaim.h"

#include "testing/builders.h"

namespace gpufair::policy::reclaim_test {

using testing::MakeNode;
using testing::MakePod;
using testing::MakeQueue;

inline const Timestamp kNow = Timestamp{std::chrono::hours{500'000}};

// A running pod that started `minutes` ago.
inline Pod ran(MakePod pod, int minutes) {
  Pod p = pod.obj();
  p.started = kNow - std::chrono::minutes{minutes};
  return p;
}

inline QueueQuota minRuntime(QueueQuota q, std::chrono::seconds s) {
  q.reclaimMinRuntime = s;
  return q;
}

inline std::vector<Node> nodes(int count, double gpus) {
  std::vector<Node> out;
  for (int i = 1; i <= count; ++i) out.push_back(MakeNode("node-" + std::to_string(i)).gpus(gpus));
  return out;
}

inline std::vector<QueueQuota> abTwenty() {
  return {MakeQueue("team-a").deserved(20), MakeQueue("team-b").deserved(20)};
}

// Team A runs 40 GPUs on 4 x 10 while B is idle: a1..a4 whole nodes, except node-4 (8 + 2).
inline std::vector<Pod> teamAEverywhere() {
  return {ran(MakePod("team-a", "a1").gpus(10).on("node-1"), 300),
          ran(MakePod("team-a", "a2").gpus(10).on("node-2"), 200),
          ran(MakePod("team-a", "a3").gpus(10).on("node-3"), 100),
          ran(MakePod("team-a", "a4").gpus(8).on("node-4"), 50),
          ran(MakePod("team-a", "a5").gpus(2).on("node-4"), 40)};
}

}  // namespace gpufair::policy::reclaim_test
