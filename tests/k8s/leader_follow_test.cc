// Follow mode: gpufair leads exactly while the kube-scheduler in its own pod holds the scheduler's
// Lease, so the replica that answers the webhooks is the replica that writes. Against the fake API
// server over HTTP, with a manual clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/api.h"
#include "gpufair/k8s/events.h"
#include "gpufair/k8s/leader.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::ManualClock;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kLeases = "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases";
constexpr const char* kSchedulerLease =
    "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases/gpufair-scheduler";

class LeaderFollowTest : public ::testing::Test {
 protected:
  LeaderFollowTest() {
    fake_.start();
    client_ = fake::clientOf(fake_);
  }
  std::unique_ptr<LeaderElector> follower(const std::string& host) {
    LeaderElectorOptions options;
    options.ns = "gpufair-system";
    options.name = "gpufair-scheduler";
    options.identity = host + "_gpufair";
    options.followHolderPrefix = host + "_";
    return std::make_unique<LeaderElector>(client_, clock_, options);
  }
  // What kube-scheduler writes when it takes or renews its Lease.
  void schedulerHolds(const std::string& holder) {
    json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", "gpufair-scheduler"}, {"namespace", "gpufair-system"}}},
        {"spec",
         {{"holderIdentity", holder},
          {"leaseDurationSeconds", 15},
          {"renewTime", "2027-01-15T08:00:0" + std::to_string(++renewals_ % 10) + ".000000Z"}}}};
    if (fake_.get(kSchedulerLease)) {
      fake_.update(kSchedulerLease, lease);
    } else {
      fake_.create(kLeases, lease);
    }
  }
  std::size_t leaseWrites() const {
    return fake_.requests("PUT", kLeases).size() + fake_.requests("POST", kLeases).size();
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  int renewals_ = 0;
};

TEST_F(LeaderFollowTest, TheReplicaWhoseSchedulerHoldsTheLeaseLeadsAndOnlyIt) {
  auto a = follower("gpufair-7d9c-a");
  auto b = follower("gpufair-7d9c-b");
  schedulerHolds("gpufair-7d9c-a_4b3f0c1e-uuid");
  EXPECT_TRUE(a->tick());
  EXPECT_FALSE(b->tick());
  EXPECT_EQ(b->leader(), "gpufair-7d9c-a_4b3f0c1e-uuid");

  // kube-scheduler's leadership moves to the other pod: gpufair's follows at the next tick.
  schedulerHolds("gpufair-7d9c-b_99aa-uuid");
  EXPECT_FALSE(a->tick());
  EXPECT_FALSE(a->isLeader());
  EXPECT_TRUE(b->tick());
  for (int i = 0; i < 5; ++i) {
    clock_->advance(2s);
    schedulerHolds("gpufair-7d9c-b_99aa-uuid");  // renewed
    const bool aLeads = a->tick();
    const bool bLeads = b->tick();
    EXPECT_FALSE(aLeads);
    EXPECT_TRUE(bLeads);
    EXPECT_TRUE(b->isLeader());
  }
  EXPECT_EQ(leaseWrites(), 0u) << "a follower never writes the Lease it follows";
}

TEST_F(LeaderFollowTest, AStaleOrAbsentSchedulerLeaseMeansNobodyLeads) {
  auto a = follower("host-a");
  EXPECT_FALSE(a->tick()) << "no Lease yet";
  schedulerHolds("host-a_1");
  EXPECT_TRUE(a->tick());
  clock_->advance(16s);  // kube-scheduler stopped renewing (crashed): the record goes stale
  EXPECT_FALSE(a->tick());
  schedulerHolds("host-a_2");  // a restarted kube-scheduler takes it again
  EXPECT_TRUE(a->tick());
  EXPECT_TRUE(a->release().isOk());
  EXPECT_FALSE(a->isLeader());
  EXPECT_EQ(leaseWrites(), 0u);
}

TEST_F(LeaderFollowTest, APrefixMatchesOnlyFromTheStartOfTheIdentity) {
  auto a = follower("node");
  schedulerHolds("other-node_1");
  EXPECT_FALSE(a->tick());
}

// Two replicas' Event recorders, each gated by its follower: the Events are written by exactly the
// replica whose kube-scheduler leads, and by the other once leadership moves.
TEST_F(LeaderFollowTest, EventsAreWrittenByTheReplicaWhoseSchedulerLeads) {
  auto a = follower("replica-a");
  auto b = follower("replica-b");
  auto recorder = [&](LeaderElector& elector, const std::string& name) {
    EventRecorderOptions options;
    options.reportingInstance = name;
    options.isLeader = [&elector] { return elector.isLeader(); };
    return std::make_unique<EventRecorder>(client_, clock_, options);
  };
  auto eventsA = recorder(*a, "replica-a");
  auto eventsB = recorder(*b, "replica-b");
  fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", "train-1"));
  schedulerHolds("replica-b_1");
  a->tick();
  b->tick();
  eventsA->recordPod("team-a", "train-1", "", EventType::kNormal, events::kBorrowed, "from a");
  eventsB->recordPod("team-a", "train-1", "", EventType::kNormal, events::kBorrowed, "from b");
  ASSERT_TRUE(eventsA->waitIdle(5'000ms));
  ASSERT_TRUE(eventsB->waitIdle(5'000ms));
  auto written = fake_.list("/api/v1/namespaces/team-a/events");
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0]["reportingInstance"], "replica-b");
  EXPECT_EQ(written[0]["message"], "from b");

  schedulerHolds("replica-a_2");
  a->tick();
  b->tick();
  eventsA->recordPod("team-a", "train-1", "", EventType::kWarning, events::kUnschedulable, "a");
  eventsB->recordPod("team-a", "train-1", "", EventType::kWarning, events::kUnschedulable, "b");
  ASSERT_TRUE(eventsA->waitIdle(5'000ms));
  ASSERT_TRUE(eventsB->waitIdle(5'000ms));
  written = fake_.list("/api/v1/namespaces/team-a/events");
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(eventsA->stats().created, 1u);
  EXPECT_EQ(eventsB->stats().created, 1u);
  EXPECT_EQ(eventsA->stats().failed + eventsB->stats().failed, 0u);
}

}  // namespace
}  // namespace gpufair::k8s
