#include "gpufair/k8s/events.h"

#include <future>
#include <mutex>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/mock_client.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using gpufair::testing::ManualClock;
using ::testing::_;
using testing::body;
using testing::MockKubeClient;
using ::testing::NiceMock;
using testing::reply;
using testing::statusReply;
using namespace std::chrono_literals;

constexpr auto kWait = std::chrono::milliseconds{5'000};

// Answers every request like kube-apiserver (created Events get names) and records them.
class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() {
    ON_CALL(*client_, send(_)).WillByDefault([this](const ApiRequest& request) {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      if (!answers_.empty()) {
        ApiResponse next = answers_.front();
        answers_.erase(answers_.begin());
        return next;
      }
      if (request.method == "POST") {
        return reply(201,
                     R"({"metadata":{"name":"ev-)" + std::to_string(requests_.size()) + "\"}}");
      }
      return reply(200);
    });
  }
  std::unique_ptr<EventRecorder> make(EventRecorderOptions options = {}) {
    if (options.reportingInstance.empty()) options.reportingInstance = "gpufair-0";
    return std::make_unique<EventRecorder>(client_, clock_, std::move(options));
  }
  std::vector<ApiRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  void answerNext(ApiResponse response) {
    std::lock_guard lock(mu_);
    answers_.push_back(std::move(response));
  }

  std::shared_ptr<NiceMock<MockKubeClient>> client_ = std::make_shared<NiceMock<MockKubeClient>>();
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::mutex mu_;
  std::vector<ApiRequest> requests_;  // GUARDED_BY(mu_)
  std::vector<ApiResponse> answers_;  // GUARDED_BY(mu_)
};

TEST_F(EventRecorderTest, WritesAnEventInTheBackground) {
  auto recorder = make();
  EXPECT_TRUE(recorder->recordPod("team-a", "train-1", "uid-1", EventType::kWarning,
                                  {"FailedScheduling", "Testing"},
                                  "queue team-a at 30/30 GPUs (limit)"));
  ASSERT_TRUE(recorder->waitIdle(kWait));
  auto sent = requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "POST");
  EXPECT_EQ(sent[0].path, "/api/v1/namespaces/team-a/events");
  nlohmann::json b = body(sent[0]);
  EXPECT_EQ(b["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(b["involvedObject"]["uid"], "uid-1");
  EXPECT_EQ(b["reason"], "FailedScheduling");
  EXPECT_EQ(b["type"], "Warning");
  EXPECT_EQ(b["count"], 1);
  EXPECT_EQ(b["reportingInstance"], "gpufair-0");
  EXPECT_EQ(b["firstTimestamp"], formatTime(clock_->now()));
  EXPECT_EQ(recorder->stats().created, 1u);
}

TEST_F(EventRecorderTest, TheSameObjectAndReasonIsWrittenOncePerIntervalThenAggregated) {
  auto recorder = make();  // dedupInterval 5 min
  for (int i = 0; i < 10; ++i) {
    recorder->recordPod("team-a", "train-1", "uid-1", EventType::kWarning,
                        {"FailedScheduling", "Testing"}, "no fit");
    clock_->advance(10s);
  }
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_EQ(requests().size(), 1u);
  EXPECT_EQ(recorder->stats().droppedDuplicate, 9u);

  // Another reason, or another pod, is another event.
  recorder->recordPod("team-a", "train-1", "uid-1", EventType::kNormal, {"Bound", "Testing"},
                      "on node-1");
  recorder->recordPod("team-a", "train-2", "uid-2", EventType::kWarning,
                      {"FailedScheduling", "Testing"}, "x");
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_EQ(requests().size(), 3u);

  // After the interval, the first Event's count is updated: 1 + 9 suppressed + this one.
  clock_->advance(5min);
  recorder->recordPod("team-a", "train-1", "uid-1", EventType::kWarning,
                      {"FailedScheduling", "Testing"}, "still no fit");
  ASSERT_TRUE(recorder->waitIdle(kWait));
  auto sent = requests();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[3].method, "PATCH");
  EXPECT_EQ(sent[3].path, "/api/v1/namespaces/team-a/events/ev-1");
  EXPECT_EQ(sent[3].contentType, "application/merge-patch+json");
  EXPECT_EQ(body(sent[3])["count"], 11);
  EXPECT_EQ(body(sent[3])["message"], "still no fit");
  EXPECT_EQ(body(sent[3])["lastTimestamp"], formatTime(clock_->now()));
  EXPECT_EQ(recorder->stats().updated, 1u);
}

TEST_F(EventRecorderTest, AnExpiredEventIsCreatedAgain) {
  auto recorder = make();
  recorder->recordPod("team-a", "train-1", "uid-1", EventType::kWarning,
                      {"FailedScheduling", "Testing"}, "a");
  ASSERT_TRUE(recorder->waitIdle(kWait));
  clock_->advance(6min);
  answerNext(statusReply(404, "NotFound", "events \"ev-1\" not found"));
  recorder->recordPod("team-a", "train-1", "uid-1", EventType::kWarning,
                      {"FailedScheduling", "Testing"}, "b");
  ASSERT_TRUE(recorder->waitIdle(kWait));
  auto sent = requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[1].method, "PATCH");
  EXPECT_EQ(sent[2].method, "POST");
  EXPECT_EQ(body(sent[2])["message"], "b");
  EXPECT_EQ(recorder->stats().created, 2u);
}

TEST_F(EventRecorderTest, AGlobalTokenBucketCapsTheRate) {
  EventRecorderOptions options;
  options.eventsPerSecond = 1;
  options.burst = 3;
  auto recorder = make(options);
  int queued = 0;
  for (int i = 0; i < 5; ++i) {
    std::string name = "pod-" + std::to_string(i);
    queued += recorder->recordPod("team-a", name, "uid-" + name, EventType::kWarning,
                                  {"R", "Testing"}, "m");
  }
  EXPECT_EQ(queued, 3);
  EXPECT_EQ(recorder->stats().droppedRateLimited, 2u);
  clock_->advance(2s);  // two tokens back
  for (int i = 5; i < 8; ++i) {
    std::string name = "pod-" + std::to_string(i);
    queued += recorder->recordPod("team-a", name, "uid-" + name, EventType::kWarning,
                                  {"R", "Testing"}, "m");
  }
  EXPECT_EQ(queued, 5);
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_EQ(requests().size(), 5u);
  EXPECT_EQ(recorder->stats().dropped(), 3u);
}

TEST_F(EventRecorderTest, AFullQueueDropsInsteadOfBlocking) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  EXPECT_CALL(*client_, send(_)).WillRepeatedly([&](const ApiRequest&) {
    if (first.exchange(false)) entered.set_value();
    released.wait();
    return reply(201, R"({"metadata":{"name":"ev"}})");
  });
  EventRecorderOptions options;
  options.queueCapacity = 1;
  auto recorder = make(options);
  EXPECT_TRUE(recorder->recordPod("ns", "a", "ua", EventType::kNormal, {"R", "Testing"}, "m"));
  ASSERT_EQ(entered.get_future().wait_for(kWait), std::future_status::ready);  // worker busy
  EXPECT_TRUE(recorder->recordPod("ns", "b", "ub", EventType::kNormal, {"R", "Testing"}, "m"));
  EXPECT_FALSE(recorder->recordPod("ns", "c", "uc", EventType::kNormal, {"R", "Testing"}, "m"));
  EXPECT_EQ(recorder->stats().droppedQueueFull, 1u);
  release.set_value();
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_EQ(recorder->stats().created, 2u);
}

TEST_F(EventRecorderTest, OnlyTheLeaderWrites) {
  std::atomic<bool> leader{false};
  EventRecorderOptions options;
  options.isLeader = [&] { return leader.load(); };
  auto recorder = make(options);
  EXPECT_FALSE(recorder->recordPod("ns", "a", "ua", EventType::kNormal, {"R", "Testing"}, "m"));
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_TRUE(requests().empty());
  EXPECT_EQ(recorder->stats().skippedNotLeader, 1u);
  leader = true;
  EXPECT_TRUE(recorder->recordPod("ns", "a", "ua", EventType::kNormal, {"R", "Testing"}, "m"));
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_EQ(requests().size(), 1u);
}

TEST_F(EventRecorderTest, FailuresAreCountedAndTheObjectVersionSeparatesEvents) {
  auto recorder = make();
  answerNext(statusReply(403, "Forbidden", "events is forbidden"));
  ObjectRef cm{"ConfigMap", "v1", "gpufair-system", "quotas", "uid-cm", "7"};
  EXPECT_TRUE(recorder->record(cm, EventType::kWarning, {"InvalidQuotaConfig", "Testing"}, "bad"));
  ASSERT_TRUE(recorder->waitIdle(kWait));
  EXPECT_EQ(recorder->stats().failed, 1u);
  cm.resourceVersion = "8";  // a new version of the ConfigMap is news at once
  EXPECT_TRUE(
      recorder->record(cm, EventType::kWarning, {"InvalidQuotaConfig", "Testing"}, "still bad"));
  ASSERT_TRUE(recorder->waitIdle(kWait));
  auto sent = requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(body(sent[1])["involvedObject"]["resourceVersion"], "8");
  EXPECT_EQ(recorder->stats().created, 1u);
}

TEST_F(EventRecorderTest, StopWritesWhatIsQueuedThenRefusesMore) {
  auto recorder = make();
  recorder->recordPod("ns", "a", "ua", EventType::kNormal, {"R", "Testing"}, "m");
  recorder->recordPod("ns", "b", "ub", EventType::kNormal, {"R", "Testing"}, "m");
  recorder->stop();
  EXPECT_EQ(requests().size(), 2u);
  EXPECT_FALSE(recorder->recordPod("ns", "c", "uc", EventType::kNormal, {"R", "Testing"}, "m"));
  EXPECT_EQ(recorder->stats().created, 2u);
}

}  // namespace
}  // namespace gpufair::k8s
