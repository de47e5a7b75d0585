#include "gpufair/k8s/leader.h"

#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/fake_apiserver.h"
#include "k8s/mock_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::ManualClock;
using nlohmann::json;
using ::testing::_;
using testing::MockKubeClient;
using ::testing::NiceMock;
using testing::reply;
using testing::statusReply;
using testing::transportFailure;
using namespace std::chrono_literals;

constexpr const char* kLeasePath =
    "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases/gpufair";
constexpr const char* kLeasesPath = "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases";

// One Lease as kube-apiserver keeps it: resourceVersion checked on PUT, AlreadyExists on POST.
class LeaseServer {
 public:
  ApiResponse handle(const ApiRequest& request) {
    std::lock_guard lock(mu_);
    log_.push_back(request.method + " " + request.path);
    if (failing_) return transportFailure("connection refused");
    if (request.method == "GET" && request.path == kLeasePath) {
      if (!lease_) return statusReply(404, "NotFound", "leases \"gpufair\" not found");
      return reply(200, lease_->dump());
    }
    json sent = json::parse(request.body);
    if (request.method == "POST" && request.path == kLeasesPath) {
      if (lease_) return statusReply(409, "AlreadyExists", "leases \"gpufair\" already exists");
      return store(std::move(sent), 201);
    }
    if (request.method == "PUT" && request.path == kLeasePath) {
      if (beforeWrite_) std::exchange(beforeWrite_, nullptr)();
      if (!lease_) return statusReply(404, "NotFound", "leases \"gpufair\" not found");
      if (sent["metadata"].value("resourceVersion", "") !=
          (*lease_)["metadata"]["resourceVersion"]) {
        return statusReply(409, "Conflict", "the object has been modified");
      }
      return store(std::move(sent), 200);
    }
    return statusReply(400, "BadRequest", "unexpected " + request.method + " " + request.path);
  }

  // Another replica writes the Lease.
  void setHolder(const std::string& holder, int transitions = 0, int durationSeconds = 15) {
    json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", "gpufair"}, {"namespace", "gpufair-system"}}},
        {"spec",
         {{"holderIdentity", holder},
          {"leaseDurationSeconds", durationSeconds},
          {"renewTime", "2027-01-15T08:00:0" + std::to_string(version_ % 10) + ".000000Z"},
          {"leaseTransitions", transitions}}}};
    store(std::move(lease), 200);
  }
  json spec() {
    std::lock_guard lock(mu_);
    return lease_ ? (*lease_)["spec"] : json();
  }
  std::vector<std::string> takeLog() {
    std::lock_guard lock(mu_);
    return std::exchange(log_, {});
  }
  void fail(bool failing) {
    std::lock_guard lock(mu_);
    failing_ = failing;
  }
  void beforeNextWrite(std::function<void()> action) {
    std::lock_guard lock(mu_);
    beforeWrite_ = std::move(action);
  }

 private:
  ApiResponse store(json lease, int code) {
    lease["metadata"]["resourceVersion"] = std::to_string(++version_);
    lease_ = lease;
    return reply(code, lease.dump());
  }

  std::recursive_mutex mu_;  // beforeWrite_ actions call setHolder()
  std::optional<json> lease_;
  int version_ = 0;
  bool failing_ = false;
  std::function<void()> beforeWrite_;
  std::vector<std::string> log_;
};

class LeaderElectorTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderElector> make(const std::string& identity) {
    auto client = std::make_shared<NiceMock<MockKubeClient>>();
    ON_CALL(*client, send(_)).WillByDefault([this](const ApiRequest& r) {
      return server_.handle(r);
    });
    LeaderElectorOptions options;
    options.identity = identity;
    options.onStartedLeading = [this] { calls_.push_back("started"); };
    options.onStoppedLeading = [this] {
      // isLeader() is already false when the callback runs.
      calls_.push_back(std::string("stopped") +
                       (elector_ && elector_->isLeader() ? "-still-leader" : ""));
    };
    options.onNewLeader = [this](const std::string& holder) {
      calls_.push_back("leader=" + holder);
    };
    return std::make_unique<LeaderElector>(client, clock_, options);
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  LeaseServer server_;
  std::vector<std::string> calls_;
  std::unique_ptr<LeaderElector> elector_;
};

TEST_F(LeaderElectorTest, CreatesAnAbsentLeaseAndLeads) {
  elector_ = make("me");
  EXPECT_FALSE(elector_->isLeader());
  EXPECT_TRUE(elector_->tick());
  EXPECT_TRUE(elector_->isLeader());
  EXPECT_EQ(server_.takeLog(), (std::vector<std::string>{"GET " + std::string(kLeasePath),
                                                         "POST " + std::string(kLeasesPath)}));
  json spec = server_.spec();
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["renewTime"], formatMicroTime(clock_->now()));
  EXPECT_EQ(spec["acquireTime"], formatMicroTime(clock_->now()));
  EXPECT_EQ(calls_, (std::vector<std::string>{"leader=me", "started"}));
  EXPECT_EQ(elector_->leader(), "me");
}

TEST_F(LeaderElectorTest, TheLeaderRenewsWithItsLastRecord) {
  elector_ = make("me");
  ASSERT_TRUE(elector_->tick());
  server_.takeLog();
  clock_->advance(2s);
  EXPECT_TRUE(elector_->tick());
  EXPECT_EQ(server_.takeLog(), std::vector<std::string>{"PUT " + std::string(kLeasePath)});
  EXPECT_EQ(server_.spec()["renewTime"], formatMicroTime(clock_->now()));
  EXPECT_EQ(server_.spec()["leaseTransitions"], 0);
}

TEST_F(LeaderElectorTest, RespectsALiveForeignLeaseAndTakesOverWhenItExpires) {
  server_.setHolder("other", 4);
  elector_ = make("me");
  EXPECT_FALSE(elector_->tick());
  clock_->advance(14s);  // not yet leaseDuration since we first saw this record
  EXPECT_FALSE(elector_->tick());
  EXPECT_EQ(elector_->leader(), "other");
  clock_->advance(1s);
  EXPECT_TRUE(elector_->tick());
  json spec = server_.spec();
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseTransitions"], 5);
  EXPECT_EQ(spec["acquireTime"], formatMicroTime(clock_->now()));
  EXPECT_EQ(calls_, (std::vector<std::string>{"leader=other", "leader=me", "started"}));
}

TEST_F(LeaderElectorTest, AForeignLeaseThatKeepsBeingRenewedIsNeverTaken) {
  server_.setHolder("other");
  elector_ = make("me");
  for (int i = 0; i < 30; ++i) {
    EXPECT_FALSE(elector_->tick());
    clock_->advance(2s);
    server_.setHolder("other");  // renewed: the record changed
  }
  EXPECT_TRUE(calls_.end() == std::find(calls_.begin(), calls_.end(), "started"));
}

TEST_F(LeaderElectorTest, AConflictMeansReadAgain) {
  server_.setHolder("");  // released by its last holder
  elector_ = make("me");
  // Between our read and our write another candidate takes the Lease.
  server_.beforeNextWrite([this] { server_.setHolder("fast", 1); });
  EXPECT_FALSE(elector_->tick());
  EXPECT_EQ(server_.takeLog(), (std::vector<std::string>{"GET " + std::string(kLeasePath),
                                                         "PUT " + std::string(kLeasePath),
                                                         "GET " + std::string(kLeasePath)}));
  EXPECT_EQ(elector_->leader(), "fast");
  EXPECT_EQ(server_.spec()["holderIdentity"], "fast");
}

TEST_F(LeaderElectorTest, TwoCandidatesOneLeader) {
  elector_ = make("a");
  auto b = make("b");
  EXPECT_TRUE(elector_->tick());
  EXPECT_FALSE(b->tick());
  clock_->advance(2s);
  EXPECT_TRUE(elector_->tick());
  EXPECT_FALSE(b->tick());
  EXPECT_EQ(server_.spec()["holderIdentity"], "a");
}

TEST_F(LeaderElectorTest, FailingRenewalsEndLeadershipAtTheRenewDeadline) {
  elector_ = make("me");
  ASSERT_TRUE(elector_->tick());
  server_.fail(true);
  clock_->advance(2s);
  EXPECT_TRUE(elector_->tick());  // one failed renewal is not yet a lost lease
  clock_->advance(6s);
  EXPECT_TRUE(elector_->tick());
  clock_->advance(2s);  // 10 s since the last renewal: no longer leader, even before a tick
  EXPECT_FALSE(elector_->isLeader());
  EXPECT_FALSE(elector_->tick());
  EXPECT_EQ(calls_, (std::vector<std::string>{"leader=me", "started", "stopped"}));
  clock_->advance(2s);
  EXPECT_FALSE(elector_->tick());
  EXPECT_EQ(calls_.size(), 3u);  // stopped only once
}

TEST_F(LeaderElectorTest, AnotherHolderEndsLeadershipAtOnce) {
  elector_ = make("me");
  ASSERT_TRUE(elector_->tick());
  server_.setHolder("usurper", 1);
  clock_->advance(2s);
  EXPECT_FALSE(elector_->tick());
  EXPECT_FALSE(elector_->isLeader());
  EXPECT_EQ(calls_,
            (std::vector<std::string>{"leader=me", "started", "leader=usurper", "stopped"}));
}

TEST_F(LeaderElectorTest, ReleaseHandsTheLeaseOverQuickly) {
  elector_ = make("me");
  ASSERT_TRUE(elector_->tick());
  Status released = elector_->release();
  ASSERT_TRUE(released.isOk()) << released.reason();
  EXPECT_FALSE(elector_->isLeader());
  json spec = server_.spec();
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  EXPECT_EQ(calls_, (std::vector<std::string>{"leader=me", "started", "stopped", "leader="}));

  auto next = make("next");  // takes it at its first try, without waiting for expiry
  EXPECT_TRUE(next->tick());
  EXPECT_EQ(server_.spec()["leaseTransitions"], 1);
  EXPECT_TRUE(elector_->release().isOk());  // not ours anymore: nothing to do
  EXPECT_EQ(server_.spec()["holderIdentity"], "next");
}

TEST_F(LeaderElectorTest, InconsistentDurationsAreRejected) {
  LeaderElectorOptions options;
  options.renewDeadline = options.leaseDuration;
  EXPECT_THROW(LeaderElector(std::make_shared<NiceMock<MockKubeClient>>(), clock_, options),
               std::invalid_argument);
  EXPECT_THAT(LeaderElector::defaultIdentity(), ::testing::MatchesRegex(".+_[0-9a-f]{16}"));
}

TEST(LeaderElectorRun, RunsOnItsOwnThreadUntilStopped) {
  LeaseServer server;
  auto client = std::make_shared<NiceMock<MockKubeClient>>();
  ON_CALL(*client, send(_)).WillByDefault([&](const ApiRequest& r) { return server.handle(r); });
  LeaderElectorOptions options;
  options.identity = "runner";
  options.leaseDuration = 3s;
  options.renewDeadline = 2s;
  options.retryPeriod = 10ms;
  LeaderElector elector(client, std::make_shared<SystemClock>(), options);
  elector.start();
  for (int i = 0; i < 500 && !elector.isLeader(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(elector.isLeader());
  elector.stop();
  EXPECT_TRUE(elector.release().isOk());
  EXPECT_EQ(server.spec()["holderIdentity"], "");
}

TEST(LeaderElectorAgainstFakeApiServer, OneLeaderThenAQuickHandOver) {
  fake::FakeApiServer server;
  server.start();
  ClientConfig config;
  config.server = server.url();
  auto client = makeKubeClient(config);
  ASSERT_TRUE(client.ok()) << client.error();
  auto clock = std::make_shared<ManualClock>();
  LeaderElectorOptions options;
  options.identity = "a";
  LeaderElector a(client.value(), clock, options);
  options.identity = "b";
  LeaderElector b(client.value(), clock, options);

  EXPECT_TRUE(a.tick());
  EXPECT_FALSE(b.tick());
  clock->advance(2s);
  EXPECT_TRUE(a.tick());
  EXPECT_FALSE(b.tick());
  ASSERT_TRUE(a.release().isOk());
  EXPECT_TRUE(b.tick());
  auto lease = server.get("/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases/gpufair");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  EXPECT_FALSE(a.isLeader());
  EXPECT_TRUE(b.isLeader());
}

}  // namespace
}  // namespace gpufair::k8s
