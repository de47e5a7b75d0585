// /bind through the Binder's bindAsync(): while the Binding waits on the API server, the io thread
// serves other requests; the /bind answer comes once the Binding's outcome is known, and the
// mirror confirms or forgets the assumption by it.
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/server.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using nlohmann::json;
using testsupport::Cluster;
using testsupport::filterArgs;
using testsupport::HttpClient;
using testsupport::HttpReply;
using testsupport::parseJson;
using testsupport::podJson;
using namespace std::chrono_literals;

// A Binder whose bindAsync() holds each bind until the test releases it: an API server as slow as
// the test wants, deterministically.
class HeldBinder final : public state::Binder {
 public:
  Status bind(const policy::Pod&, std::string_view, bool) override {
    return Status::error("bind() is not the webhook's path");
  }
  void bindAsync(const policy::Pod& pod, std::string_view node, bool,
                 state::BindDone done) override {
    std::lock_guard lock(mu_);
    held_.push_back({pod.key(), std::string(node), std::move(done)});
    arrived_.notify_all();
  }
  bool confirmsImmediately() const override { return false; }

  // Waits until `count` binds are held; false when they do not come (a failsafe, not a timing).
  bool waitHeld(std::size_t count) {
    std::unique_lock lock(mu_);
    return arrived_.wait_for(lock, 10s, [&] { return held_.size() >= count; });
  }
  // Completes the oldest held bind with `outcome`, on this thread; returns its pod's key.
  std::string release(Status outcome) {
    Held next;
    {
      std::lock_guard lock(mu_);
      if (held_.empty()) return "";
      next = std::move(held_.front());
      held_.pop_front();
    }
    next.done(std::move(outcome));
    return next.pod;
  }

 private:
  struct Held {
    std::string pod;
    std::string node;
    state::BindDone done;
  };
  std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<Held> held_;
};

// Hears of every request the service ends.
class RecordingObserver final : public RequestObserver {
 public:
  void observe(std::string_view verb, std::string_view result, double) override {
    std::lock_guard lock(mu_);
    seen.push_back(std::string(verb) + " " + std::string(result));
  }
  void filterRejected(std::string_view) override {}
  std::vector<std::string> observed() {
    std::lock_guard lock(mu_);
    return seen;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> seen;
};

json bindArgs(const std::string& name, const std::string& uid, const std::string& node) {
  return {{"PodName", name}, {"PodNamespace", "team-a"}, {"PodUID", uid}, {"Node", node}};
}

ServerOptions oneIoThread() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.threads = 1;  // a /bind holding it would hold every connection
  return options;
}

class BindAsyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service.setRequestObserver(&observer);
    ASSERT_TRUE(server.start().isOk());
  }
  // kube-scheduler's binding goroutine: /bind on a connection of its own, answered later.
  std::future<HttpReply> bindInBackground(const std::string& name, const std::string& uid) {
    return std::async(std::launch::async, [this, name, uid] {
      HttpClient binding(server.port());
      return binding.post("/bind", bindArgs(name, uid, "gpu-node-1"));
    });
  }

  Cluster cluster;
  HeldBinder binder;
  RecordingObserver observer;
  ExtenderService service{cluster.mirror, *cluster.scorer, binder};
  ExtenderServer server{service, oneIoThread()};
};

TEST_F(BindAsyncTest, ASlowBindingDoesNotDelayAFilterOnTheSameServer) {
  HttpClient scheduler(server.port());  // the scheduling loop's connection
  ASSERT_EQ(
      scheduler
          .post("/filter", filterArgs(podJson("team-a", "train-1", "uid-1", 2), {"gpu-node-1"}))
          .status,
      200);
  std::future<HttpReply> bound = bindInBackground("train-1", "uid-1");
  ASSERT_TRUE(binder.waitHeld(1));
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-1"));  // assumed before the Binding

  // The only io thread is free: the next pod's /filter is answered while the Binding waits.
  const HttpReply filtered = scheduler.post(
      "/filter", filterArgs(podJson("team-a", "train-2", "uid-2", 2), {"gpu-node-1"}));
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  EXPECT_EQ(parseJson(filtered.body).at("NodeNames"), json::array({"gpu-node-1"}));
  EXPECT_EQ(scheduler.request("GET", "/healthz").status, 200);
  EXPECT_EQ(bound.wait_for(0s), std::future_status::timeout);  // no answer before the outcome
  EXPECT_EQ(observer.observed(),
            (std::vector<std::string>{"filter ok", "filter ok", "healthz ok"}));

  EXPECT_EQ(binder.release(Status::ok()), "team-a/train-1");
  const HttpReply reply = bound.get();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(parseJson(reply.body), json({{"Error", ""}}));
  EXPECT_TRUE(reply.keepAlive);
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-1"));  // until the watch confirms it
  EXPECT_EQ(observer.observed().back(), "bind ok");
}

TEST_F(BindAsyncTest, AFailedBindingIsAnsweredWithItsErrorAndTheAssumptionForgotten) {
  HttpClient scheduler(server.port());
  ASSERT_EQ(
      scheduler
          .post("/filter", filterArgs(podJson("team-a", "train-1", "uid-1", 8), {"gpu-node-1"}))
          .status,
      200);
  std::future<HttpReply> bound = bindInBackground("train-1", "uid-1");
  ASSERT_TRUE(binder.waitHeld(1));
  EXPECT_TRUE(cluster.mirror.isAssumed("uid-1"));
  EXPECT_EQ(binder.release(Status::error("pods \"train-1\" is forbidden: timeout")),
            "team-a/train-1");
  const HttpReply reply = bound.get();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(parseJson(reply.body), json({{"Error", "pods \"train-1\" is forbidden: timeout"}}));
  EXPECT_FALSE(cluster.mirror.isAssumed("uid-1"));
  const policy::PodPtr pod = cluster.mirror.findPod("uid-1");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->nodeName, "");
  EXPECT_EQ(cluster.mirror.snapshot()->findNode("gpu-node-1")->used(), 0);  // its 8 GPUs free
}

TEST_F(BindAsyncTest, ARefusedBindIsAnsweredAtOnceWithoutTheBinder) {
  HttpClient scheduler(server.port());
  const HttpReply never = scheduler.post("/bind", bindArgs("stranger", "uid-x", "gpu-node-1"));
  ASSERT_EQ(never.status, 200);
  EXPECT_EQ(parseJson(never.body).at("Error"),
            "pod team-a/stranger (uid uid-x) was never offered to gpufair's filter; cannot bind");
  const HttpReply bad = scheduler.request("POST", "/bind", "{not json");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(binder.release(Status::ok()), "");  // nothing reached the binder
  EXPECT_EQ(observer.observed(), (std::vector<std::string>{"bind ok", "bind bad_request"}));
}

}  // namespace
}  // namespace gpufair::api
