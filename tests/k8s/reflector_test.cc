// Reflector against FakeApiServer through the real client: list, watch, resume, relist on 410.
#include "gpufair/k8s/reflector.h"

#include <map>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/fake_apiserver.h"
#include "k8s/fake_wait.h"

// Designated initializers leave the other members at their defaults (GCC 12 warns, -Wextra).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpufair::k8s {
namespace {

using fake::FakeApiServer;
using fake::FakeApiServerOptions;
using fake::makePod;
using fake::waitUntil;
using ::testing::HasSubstr;
using Millis = std::chrono::milliseconds;

// Feeds a map "ns/name" -> resourceVersion, as a cache would.
class MapSink final : public ReflectorSink {
 public:
  void replace(const std::vector<std::string>& items) override {
    std::lock_guard lock(mu_);
    objects_.clear();
    for (const auto& item : items) put(item);
    ++replaces_;
  }
  void added(std::string_view object) override { apply(object, "ADDED"); }
  void modified(std::string_view object) override { apply(object, "MODIFIED"); }
  void deleted(std::string_view object) override { apply(object, "DELETED"); }

  std::map<std::string, std::string> objects() const {
    std::lock_guard lock(mu_);
    return objects_;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return objects_.size();
  }
  int replaces() const {
    std::lock_guard lock(mu_);
    return replaces_;
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  static std::string keyOf(const nlohmann::json& o) {
    return o["metadata"].value("namespace", "") + "/" + o["metadata"].value("name", "");
  }
  void put(std::string_view text) {
    auto o = nlohmann::json::parse(text);
    objects_[keyOf(o)] = o["metadata"]["resourceVersion"];
  }
  void apply(std::string_view text, const char* type) {
    std::lock_guard lock(mu_);
    auto o = nlohmann::json::parse(text);
    events_.push_back(std::string(type) + " " + keyOf(o));
    if (std::string_view(type) == "DELETED") {
      objects_.erase(keyOf(o));
    } else {
      objects_[keyOf(o)] = o["metadata"]["resourceVersion"];
    }
  }

  mutable std::mutex mu_;
  std::map<std::string, std::string> objects_;
  std::vector<std::string> events_;
  int replaces_ = 0;
};

class ReflectorTest : public ::testing::Test {
 protected:
  ~ReflectorTest() override { stopReflector(); }

  void startServer(FakeApiServerOptions options = {}) {
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    server_->start();
    auto client = makeKubeClient({.server = server_->url()});
    ASSERT_TRUE(client) << client.error();
    client_ = client.value();
  }

  void addPods(int count, const std::string& ns = "ml") {
    for (int i = 0; i < count; ++i) {
      server_->create("/api/v1/namespaces/" + ns + "/pods",
                      makePod(ns, "pod-" + std::to_string(i)));
    }
  }

  void startReflector(ReflectorOptions options = {}) {
    if (options.name.empty()) options.name = "pods";
    if (options.listPath.empty()) options.listPath = "/api/v1/pods";
    options.backoffInitial = Millis(20);
    options.backoffMax = Millis(200);
    reflector_ =
        std::make_unique<Reflector>(client_, options, sink_, std::make_shared<SystemClock>());
    thread_ = std::thread([this] { reflector_->run(); });
    ASSERT_TRUE(waitUntil([&] { return reflector_->synced(); })) << "never synced";
  }

  void stopReflector() {
    if (!reflector_) return;
    reflector_->stop();
    if (thread_.joinable()) thread_.join();
  }

  // What the server holds, in the sink's shape.
  std::map<std::string, std::string> truth(const std::string& collection = "/api/v1/pods") {
    std::map<std::string, std::string> out;
    for (const auto& o : server_->list(collection)) {
      out[o["metadata"].value("namespace", "") + "/" + o["metadata"].value("name", "")] =
          o["metadata"]["resourceVersion"];
    }
    return out;
  }

  bool converged(const std::string& collection = "/api/v1/pods") {
    return waitUntil([&] { return sink_.objects() == truth(collection); });
  }

  std::vector<fake::LoggedRequest> watches() const {
    std::vector<fake::LoggedRequest> out;
    for (const auto& r : server_->requests("GET", "/api/v1/pods")) {
      if (r.target.find("watch=1") != std::string::npos) out.push_back(r);
    }
    return out;
  }

  std::unique_ptr<FakeApiServer> server_;
  KubeClientPtr client_;
  MapSink sink_;
  std::unique_ptr<Reflector> reflector_;
  std::thread thread_;
};

TEST_F(ReflectorTest, PaginatedInitialList) {
  startServer();
  addPods(1200);
  startReflector({.pageSize = 500});
  EXPECT_EQ(sink_.size(), 1200u);
  EXPECT_EQ(sink_.objects(), truth());
  EXPECT_EQ(sink_.replaces(), 1);
  auto lists = server_->requests("GET", "/api/v1/pods");
  std::erase_if(lists, [](const auto& r) { return r.target.find("watch=1") != std::string::npos; });
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[0].target, "/api/v1/pods?limit=500");
  EXPECT_THAT(lists[1].target, HasSubstr("continue="));
  EXPECT_EQ(reflector_->stats().lists, 1u);
  EXPECT_EQ(reflector_->stats().resourceVersion, std::to_string(server_->resourceVersion()));
}

TEST_F(ReflectorTest, WatchesFromTheListResourceVersion) {
  startServer();
  addPods(3);
  startReflector();
  ASSERT_TRUE(waitUntil([&] { return !watches().empty(); }));
  auto target = watches().front().target;
  EXPECT_THAT(target, HasSubstr("resourceVersion=" + std::to_string(server_->resourceVersion())));
  EXPECT_THAT(target, HasSubstr("allowWatchBookmarks=true"));
  EXPECT_THAT(target, HasSubstr("timeoutSeconds=300"));
}

TEST_F(ReflectorTest, LiveEvents) {
  startServer();
  addPods(2);
  startReflector();
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "new"));
  server_->mutate("/api/v1/namespaces/ml/pods/pod-0",
                  [](nlohmann::json& pod) { pod["spec"]["nodeName"] = "gpu-1"; });
  server_->remove("/api/v1/namespaces/ml/pods/pod-1");
  ASSERT_TRUE(converged());
  EXPECT_THAT(sink_.events(),
              ::testing::ElementsAre("ADDED ml/new", "MODIFIED ml/pod-0", "DELETED ml/pod-1"));
  EXPECT_EQ(reflector_->stats().events, 3u);
  EXPECT_EQ(reflector_->stats().resourceVersion, std::to_string(server_->resourceVersion()));
}

TEST_F(ReflectorTest, ResumesAfterADropWithoutRelisting) {
  startServer();
  addPods(5);
  startReflector();
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "before-drop"));
  ASSERT_TRUE(converged());
  auto rvBeforeDrop = std::to_string(server_->resourceVersion());
  server_->dropWatches();
  ASSERT_TRUE(waitUntil([&] { return watches().size() >= 2; }));
  EXPECT_THAT(watches()[1].target, HasSubstr("resourceVersion=" + rvBeforeDrop));
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "after-drop"));
  ASSERT_TRUE(converged());
  EXPECT_EQ(reflector_->stats().lists, 1u);
  EXPECT_EQ(sink_.replaces(), 1);
  EXPECT_GE(reflector_->stats().watchRestarts, 1u);
}

TEST_F(ReflectorTest, RelistsAfterCompactionAndSeesDeletions) {
  startServer();
  addPods(20);
  startReflector({.pageSize = 7});
  server_->stop();  // the stream breaks; the reflector backs off and retries
  for (int i = 0; i < 10; ++i)
    server_->remove("/api/v1/namespaces/ml/pods/pod-" + std::to_string(i));
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "while-away"));
  server_->compact();  // the events above are gone: resuming must answer 410
  server_->start();
  ASSERT_TRUE(converged());
  EXPECT_EQ(sink_.size(), 11u);
  EXPECT_EQ(sink_.objects().count("ml/pod-3"), 0u);
  EXPECT_EQ(reflector_->stats().lists, 2u);
  EXPECT_EQ(reflector_->stats().gone, 1u);
  EXPECT_EQ(sink_.replaces(), 2);
}

TEST_F(ReflectorTest, HttpGoneAlsoRelists) {
  startServer({.goneAsHttpStatus = true});
  addPods(4);
  startReflector();
  server_->stop();
  server_->remove("/api/v1/namespaces/ml/pods/pod-2");
  server_->compact();
  server_->start();
  ASSERT_TRUE(converged());
  EXPECT_EQ(reflector_->stats().gone, 1u);
  EXPECT_EQ(reflector_->stats().lists, 2u);
}

TEST_F(ReflectorTest, ErrorEventWhileWatchingRelists) {
  startServer();
  addPods(4);
  startReflector();
  ASSERT_TRUE(waitUntil([&] { return server_->activeWatches() == 1; }));
  server_->expireWatches();  // {"type":"ERROR","object":{"kind":"Status","code":410,...}}
  ASSERT_TRUE(waitUntil([&] { return reflector_->stats().lists == 2; }));
  EXPECT_EQ(reflector_->stats().gone, 1u);
  server_->remove("/api/v1/namespaces/ml/pods/pod-1");
  ASSERT_TRUE(converged());
  EXPECT_EQ(sink_.size(), 3u);
}

TEST_F(ReflectorTest, NotConsistentFromA410UntilTheRelistCompletes) {
  startServer();
  addPods(4);
  startReflector();
  ASSERT_TRUE(waitUntil([&] { return server_->activeWatches() == 1 && reflector_->consistent(); }));
  // The relist fails for a while: the sink keeps the last list, which misses what changes now.
  server_->addFault({"GET", "/api/v1/pods", "", 500, 1'000'000});
  server_->expireWatches();
  ASSERT_TRUE(waitUntil([&] { return reflector_->stats().gone == 1; }));
  server_->remove("/api/v1/namespaces/ml/pods/pod-1");
  EXPECT_TRUE(reflector_->synced() && !reflector_->consistent());
  EXPECT_EQ(sink_.size(), 4u);
  server_->clearFaults();
  ASSERT_TRUE(waitUntil([&] { return reflector_->consistent(); }));
  EXPECT_EQ(sink_.size(), 3u) << "consistent only once the new list reached the sink";
}

TEST_F(ReflectorTest, BookmarksAdvanceTheResourceVersion) {
  startServer();
  addPods(2);
  startReflector();
  ASSERT_TRUE(waitUntil([&] { return server_->activeWatches() == 1; }));
  for (int i = 0; i < 5; ++i)
    server_->create("/api/v1/nodes", fake::makeNode("n" + std::to_string(i)));
  server_->sendBookmarks();
  auto latest = std::to_string(server_->resourceVersion());
  ASSERT_TRUE(waitUntil([&] { return reflector_->stats().resourceVersion == latest; }));
  EXPECT_EQ(reflector_->stats().events, 0u);
  EXPECT_TRUE(sink_.events().empty());
  server_->dropWatches();  // resumes from the bookmark's resourceVersion
  ASSERT_TRUE(waitUntil([&] { return watches().size() >= 2; }));
  EXPECT_THAT(watches()[1].target, HasSubstr("resourceVersion=" + latest));
}

TEST_F(ReflectorTest, BacksOffWhileTheServerIsDownThenRecovers) {
  startServer();
  addPods(3);
  startReflector();
  ASSERT_TRUE(waitUntil([&] { return server_->activeWatches() == 1; }));
  // The server counts the watch before the reflector has read the answer's headers; wait until the
  // reflector streams too (lastHealthy() then follows the clock), or a late "200 OK" would move
  // lastHealthy past healthyBefore below.
  ASSERT_TRUE(waitUntil([&] {
    auto before = reflector_->lastHealthy();
    std::this_thread::sleep_for(Millis(2));
    return reflector_->lastHealthy() > before;
  }));
  server_->stop();
  auto healthyBefore = reflector_->lastHealthy();
  std::this_thread::sleep_for(Millis(600));  // several retries at 20..200 ms
  EXPECT_LE(reflector_->lastHealthy(), healthyBefore + std::chrono::milliseconds(1));
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "during-outage"));
  server_->start();
  ASSERT_TRUE(converged());
  EXPECT_EQ(reflector_->stats().lists, 1u);  // history still covers the outage: no relist
  EXPECT_GE(reflector_->stats().watchRestarts, 1u);
  ASSERT_TRUE(waitUntil([&] { return server_->activeWatches() == 1; }));
  EXPECT_GT(reflector_->lastHealthy(), healthyBefore);
}

TEST_F(ReflectorTest, ListFailuresAreRetried) {
  startServer();
  addPods(3);
  server_->addFault(
      {.pathPrefix = "/api/v1/pods", .queryContains = "limit=", .status = 500, .count = 2});
  server_->addFault({.pathPrefix = "/api/v1/pods", .queryContains = "watch=", .status = 429});
  startReflector();
  EXPECT_EQ(sink_.objects(), truth());
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "x"));
  ASSERT_TRUE(converged());
  int failures = 0;
  for (const auto& r : server_->requests()) failures += r.status >= 429 ? 1 : 0;
  EXPECT_EQ(failures, 3);
  EXPECT_EQ(reflector_->stats().lists, 1u);
}

TEST_F(ReflectorTest, ExpiredContinueTokenRestartsTheList) {
  startServer();
  addPods(30);
  server_->addFault({.pathPrefix = "/api/v1/pods", .queryContains = "continue=", .status = 410});
  startReflector({.pageSize = 10});
  EXPECT_EQ(sink_.objects(), truth());
  EXPECT_EQ(sink_.replaces(), 1);
  auto lists = server_->requests("GET", "/api/v1/pods");
  std::erase_if(lists, [](const auto& r) { return r.target.find("watch=1") != std::string::npos; });
  EXPECT_EQ(lists.size(), 5u);  // page 1, expired page 2, then pages 1..3
}

TEST_F(ReflectorTest, SelectorsFilterListAndWatch) {
  startServer();
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "a", "", {{"app", "train"}}));
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "b", "", {{"app", "serve"}}));
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "c", "gpu-1", {{"app", "train"}}));
  startReflector({.listPath = "/api/v1/namespaces/ml/pods",
                  .labelSelector = "app=train",
                  .fieldSelector = "spec.nodeName="});
  EXPECT_EQ(sink_.size(), 1u);
  EXPECT_EQ(sink_.objects().count("ml/a"), 1u);
  server_->mutate("/api/v1/namespaces/ml/pods/a",
                  [](nlohmann::json& pod) { pod["spec"]["nodeName"] = "gpu-2"; });
  ASSERT_TRUE(waitUntil([&] { return sink_.size() == 0; }));
  EXPECT_EQ(sink_.events().back(), "DELETED ml/a");
  auto lists = server_->requests("GET", "/api/v1/namespaces/ml/pods");
  ASSERT_FALSE(lists.empty());
  EXPECT_THAT(lists[0].target, HasSubstr("labelSelector=app%3Dtrain"));
  EXPECT_THAT(lists[0].target, HasSubstr("fieldSelector=spec.nodeName%3D"));
}

TEST_F(ReflectorTest, WatchTimeoutRewatchesWithoutRelist) {
  startServer();
  addPods(2);
  startReflector({.watchTimeout = std::chrono::seconds(1)});
  ASSERT_TRUE(waitUntil([&] { return watches().size() >= 2; }, std::chrono::seconds(5)));
  EXPECT_EQ(reflector_->stats().lists, 1u);
  server_->create("/api/v1/namespaces/ml/pods", makePod("ml", "later"));
  ASSERT_TRUE(converged());
}

TEST_F(ReflectorTest, StopIsPromptWhileWatching) {
  startServer();
  addPods(1);
  startReflector();
  ASSERT_TRUE(waitUntil([&] { return server_->activeWatches() == 1; }));
  auto started = std::chrono::steady_clock::now();
  stopReflector();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  EXPECT_TRUE(waitUntil([&] { return server_->activeWatches() == 0; }));
}

TEST_F(ReflectorTest, StopIsPromptDuringBackoff) {
  startServer();
  addPods(1);
  ReflectorOptions options;
  options.name = "pods";
  options.listPath = "/api/v1/pods";
  options.backoffInitial = std::chrono::seconds(20);
  options.backoffMax = std::chrono::seconds(60);
  server_->addFault({.pathPrefix = "/api/v1/pods", .status = 503});
  Reflector reflector(client_, options, sink_, std::make_shared<SystemClock>());
  std::thread runner([&] { reflector.run(); });
  ASSERT_TRUE(waitUntil([&] { return !server_->requests().empty(); }));
  auto started = std::chrono::steady_clock::now();
  reflector.stop();
  runner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  EXPECT_FALSE(reflector.synced());
}

}  // namespace
}  // namespace gpufair::k8s
