// The fake API server refuses what kube-apiserver v1.26 refuses, rule by rule, over HTTP; and every
// Event, Binding, Eviction, Lease and patch gpufair writes passes those rules.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/api.h"
#include "gpufair/k8s/events.h"

#include "k8s/fake_apiserver.h"
#include "k8s/fake_client.h"
#include "k8s/fake_validation.h"
#include "testing/builders.h"

namespace gpufair::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class FakeValidationTest : public ::testing::Test {
 protected:
  FakeValidationTest() {
    fake_.start();
    client_ = fake::clientOf(fake_);
    fake_.create("/api/v1/namespaces/team-a/pods", fake::makePod("team-a", "train-1"));
  }
  ApiResponse send(const std::string& method, const std::string& path, const json& body,
                   const std::string& type = "application/json") {
    ApiRequest request;
    request.method = method;
    request.path = path;
    request.body = body.dump();
    request.contentType = type;
    return client_->send(request);
  }
  // A core/v1 Event as gpufair writes it; each case removes or spoils one field.
  static json event() {
    return {{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata", {{"generateName", "train-1."}, {"namespace", "team-a"}}},
            {"involvedObject",
             {{"kind", "Pod"}, {"apiVersion", "v1"}, {"namespace", "team-a"}, {"name", "train-1"}}},
            {"reason", "GpufairUnschedulable"},
            {"action", "Scheduling"},
            {"message", "queue team-a at 30/30 GPUs (limit)"},
            {"type", "Warning"},
            {"eventTime", "2027-01-15T08:00:00.000000Z"},
            {"reportingComponent", "gpufair"},
            {"reportingInstance", "gpufair-0"}};
  }
  std::string uid() {
    return fake_.get("/api/v1/namespaces/team-a/pods/train-1").value()["metadata"]["uid"];
  }

  fake::FakeApiServer fake_;
  KubeClientPtr client_;
};

TEST_F(FakeValidationTest, EventsWithEventTimeNeedActionReasonAndReportingFields) {
  struct Case {
    std::string name;
    std::function<void(json&)> spoil;
    std::string error;  // empty: accepted
  };
  const std::vector<Case> cases = {
      {"complete", [](json&) {}, ""},
      {"no action", [](json& e) { e.erase("action"); }, "action: Required value"},
      {"no reason", [](json& e) { e.erase("reason"); }, "reason: Required value"},
      {"no reporting controller", [](json& e) { e.erase("reportingComponent"); },
       "reportingController: Required value"},
      {"bad reporting controller", [](json& e) { e["reportingComponent"] = "-gpufair"; },
       "reportingController: Invalid value"},
      {"no reporting instance", [](json& e) { e.erase("reportingInstance"); },
       "reportingInstance: Required value"},
      {"long action", [](json& e) { e["action"] = std::string(129, 'a'); },
       "action: Invalid value: \"\": can have at most 128 characters"},
      {"long reason", [](json& e) { e["reason"] = std::string(129, 'r'); },
       "reason: Invalid value"},
      {"long instance", [](json& e) { e["reportingInstance"] = std::string(129, 'i'); },
       "reportingInstance: Invalid value"},
      {"long message", [](json& e) { e["message"] = std::string(1025, 'm'); },
       "message: Invalid value: \"\": can have at most 1024 characters"},
      {"message at the limit", [](json& e) { e["message"] = std::string(1024, 'm'); }, ""},
      {"cluster-scoped object outside default",
       [](json& e) { e["involvedObject"].erase("namespace"); },
       "involvedObject.namespace: Invalid value: \"\": does not match event.namespace"},
      {"legacy event without eventTime and no action",
       [](json& e) {
         e.erase("eventTime");
         e.erase("action");
       },
       ""},
      {"legacy event in another namespace",
       [](json& e) {
         e.erase("eventTime");
         e["involvedObject"]["namespace"] = "team-b";
       },
       "involvedObject.namespace: Invalid value: \"team-b\": does not match event.namespace"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json body = event();
    c.spoil(body);
    ApiResponse response = send("POST", "/api/v1/namespaces/team-a/events", body);
    if (c.error.empty()) {
      EXPECT_EQ(response.status, 201) << response.body;
      continue;
    }
    EXPECT_EQ(response.status, 422);
    ApiError error = apiError(response);
    EXPECT_EQ(error.reason, "Invalid");
    EXPECT_THAT(error.message, HasSubstr("Event \"train-1.\" is invalid: "));
    EXPECT_THAT(error.describe(), HasSubstr(c.error));
  }
}

TEST_F(FakeValidationTest, BodiesNeedAMediaTypeTheServerDecodes) {
  const std::string events = "/api/v1/namespaces/team-a/events";
  for (const std::string type : {"", "text/plain", "application/merge-patch+json"}) {
    ApiResponse response = send("POST", events, event(), type);
    EXPECT_EQ(response.status, 415) << "'" << type << "'";
    EXPECT_THAT(response.body, HasSubstr("UnsupportedMediaType"));
  }
  EXPECT_EQ(send("POST", events, event(), "application/json; charset=utf-8").status, 201);
  EXPECT_EQ(send("PUT", "/api/v1/namespaces/team-a/pods/train-1", fake::makePod("team-a", "x"),
                 "text/plain")
                .status,
            415);
}

TEST_F(FakeValidationTest, AnHttp11RequestWithoutHostIsRefusedAndGpufairSendsOne) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  asio::ip::tcp::socket socket(ioc);
  asio::ip::tcp::resolver resolver(ioc);
  asio::connect(socket, resolver.resolve("127.0.0.1", std::to_string(fake_.port())));
  const std::string raw =
      "GET /api/v1/namespaces/team-a/pods HTTP/1.1\r\nConnection: close\r\n\r\n";
  asio::write(socket, asio::buffer(raw));
  std::string answer;
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(answer), ec);
  EXPECT_THAT(answer, HasSubstr("400"));
  EXPECT_THAT(answer, HasSubstr("missing required Host header"));
  // gpufair's client always names the host: the same list through it is answered.
  ApiRequest list;
  list.method = "GET";
  list.path = "/api/v1/namespaces/team-a/pods";
  EXPECT_EQ(client_->send(list).status, 200);
}

TEST_F(FakeValidationTest, SeveralErrorsAreListedTogetherAsTheRealServerDoes) {
  json body = event();
  body.erase("action");
  body.erase("reason");
  ApiResponse response = send("POST", "/api/v1/namespaces/team-a/events", body);
  ASSERT_EQ(response.status, 422);
  EXPECT_THAT(apiError(response).message,
              HasSubstr("is invalid: [action: Required value, reason: Required value]"));
  EXPECT_EQ(json::parse(response.body)["details"]["causes"].size(), 2u);
}

TEST_F(FakeValidationTest, EventUpdatesKeepTheRules) {
  ApiResponse created = send("POST", "/api/v1/namespaces/team-a/events", event());
  ASSERT_EQ(created.status, 201);
  const std::string name = json::parse(created.body)["metadata"]["name"];
  const std::string path = "/api/v1/namespaces/team-a/events/" + name;
  EXPECT_EQ(send("PATCH", path, {{"count", 2}}, "application/merge-patch+json").status, 200);
  ApiResponse spoiled = send("PATCH", path, {{"action", nullptr}}, "application/merge-patch+json");
  EXPECT_EQ(spoiled.status, 422);
  EXPECT_THAT(apiError(spoiled).describe(), HasSubstr("action: Required value"));
  ApiResponse renamed = send("PATCH", path, {{"metadata", {{"namespace", "team-b"}}}},
                             "application/merge-patch+json");
  EXPECT_EQ(renamed.status, 422);
}

TEST_F(FakeValidationTest, LabelsAndAnnotationsFollowTheKeyAndValueSyntax) {
  const std::string path = "/api/v1/namespaces/team-a/pods/train-1";
  const auto patch = [&](json labels) {
    return send("PATCH", path, {{"metadata", std::move(labels)}}, "application/merge-patch+json");
  };
  EXPECT_EQ(patch({{"labels", {{"gpufair.io/over-quota", "true"}}}}).status, 200);
  EXPECT_EQ(patch({{"annotations", {{"gpufair.io/gpu-index", "1"}}}}).status, 200);
  EXPECT_EQ(patch({{"labels", {{"gpufair.io/bad key", "x"}}}}).status, 422);
  EXPECT_EQ(patch({{"labels", {{"ok", std::string(64, 'v')}}}}).status, 422);
  EXPECT_EQ(patch({{"labels", {{"ok", "-starts-with-dash"}}}}).status, 422);
  EXPECT_EQ(patch({{"labels", {{"ok", 3}}}}).status, 422);
  EXPECT_EQ(patch({{"annotations", {{"big", std::string(256 * 1024, 'x')}}}}).status, 422);
  EXPECT_EQ(patch({{"uid", "another"}}).status, 422);
  ApiResponse spec =
      send("PATCH", path, {{"spec", {{"nodeName", "node-9"}}}}, "application/merge-patch+json");
  EXPECT_EQ(spec.status, 422);
  EXPECT_THAT(apiError(spec).describe(), HasSubstr("spec: Forbidden: pod updates may not change"));
}

TEST_F(FakeValidationTest, BindingsMustNameThePodAndANode) {
  const std::string path = "/api/v1/namespaces/team-a/pods/train-1/binding";
  const auto binding = [](const std::string& name, const std::string& node,
                          const std::string& kind = "Node") {
    return json{{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata", {{"name", name}, {"namespace", "team-a"}}},
                {"target", {{"kind", kind}, {"name", node}}}};
  };
  EXPECT_EQ(send("POST", path, binding("other", "node-1")).status, 400);
  EXPECT_EQ(send("POST", path, binding("train-1", "")).status, 500);
  EXPECT_EQ(send("POST", path, binding("train-1", "node-1", "Pod")).status, 500);
  json wrongUid = binding("train-1", "node-1");
  wrongUid["metadata"]["uid"] = "not-the-pod";
  ApiResponse conflict = send("POST", path, wrongUid);
  EXPECT_EQ(conflict.status, 409);
  EXPECT_THAT(apiError(conflict).message, HasSubstr("Precondition failed: UID in precondition"));
  json right = binding("train-1", "node-1");
  right["metadata"]["uid"] = uid();
  EXPECT_EQ(send("POST", path, right).status, 201);
}

// kube-apiserver's BindingREST merges the Binding's annotations into the pod's in the write that
// sets spec.nodeName (setPodHostAndAnnotations): kept ones stay, a refused Binding writes none.
TEST_F(FakeValidationTest, ABindingsAnnotationsAreMergedIntoThePodInTheSameWrite) {
  const std::string podPath = "/api/v1/namespaces/team-a/pods/train-1";
  ASSERT_EQ(send("PATCH", podPath, {{"metadata", {{"annotations", {{"kept", "yes"}}}}}},
                 "application/merge-patch+json")
                .status,
            200);
  const auto binding = [](const std::string& uid, const std::string& node, const std::string& gpu) {
    return json{{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata",
                 {{"name", "train-1"},
                  {"namespace", "team-a"},
                  {"uid", uid},
                  {"annotations", {{"gpufair.io/gpu-index", gpu}}}}},
                {"target", {{"kind", "Node"}, {"name", node}}}};
  };
  EXPECT_EQ(send("POST", podPath + "/binding", binding("not-the-pod", "node-1", "3")).status, 409);
  json refused = fake_.get(podPath).value();
  EXPECT_FALSE(refused["metadata"]["annotations"].contains("gpufair.io/gpu-index"));
  EXPECT_FALSE(refused["spec"].contains("nodeName"));

  EXPECT_EQ(send("POST", podPath + "/binding", binding(uid(), "node-1", "2")).status, 201);
  json bound = fake_.get(podPath).value();
  EXPECT_EQ(bound["spec"]["nodeName"], "node-1");
  EXPECT_EQ(bound["metadata"]["annotations"],
            (json{{"kept", "yes"}, {"gpufair.io/gpu-index", "2"}}));

  EXPECT_EQ(send("POST", podPath + "/binding", binding(uid(), "node-2", "5")).status, 409);
  EXPECT_EQ(fake_.get(podPath).value()["metadata"]["annotations"]["gpufair.io/gpu-index"], "2");
}

TEST_F(FakeValidationTest, EvictionsMustBePolicyEvictionsOfThatPod) {
  const std::string path = "/api/v1/namespaces/team-a/pods/train-1/eviction";
  const auto eviction = [](const std::string& name, const std::string& version = "policy/v1") {
    return json{{"apiVersion", version},
                {"kind", "Eviction"},
                {"metadata", {{"name", name}, {"namespace", "team-a"}}}};
  };
  EXPECT_EQ(send("POST", path, eviction("other")).status, 400);
  EXPECT_EQ(send("POST", path, eviction("train-1", "v1")).status, 400);
  json stale = eviction("train-1");
  stale["deleteOptions"] = {{"preconditions", {{"uid", "gone"}}}};
  EXPECT_EQ(send("POST", path, stale).status, 409);
  EXPECT_EQ(
      send("POST", "/api/v1/namespaces/team-a/pods/nobody/eviction", eviction("nobody")).status,
      404);
  EXPECT_EQ(send("POST", path, eviction("train-1")).status, 201);
}

TEST_F(FakeValidationTest, LeasesNeedAPositiveDurationAndAValidName) {
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases";
  const auto lease = [](const std::string& name, int duration) {
    return json{{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", name}}},
                {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", duration}}}};
  };
  ApiResponse zero = send("POST", leases, lease("gpufair", 0));
  EXPECT_EQ(zero.status, 422);
  EXPECT_THAT(apiError(zero).message,
              HasSubstr("Lease.coordination.k8s.io \"gpufair\" is invalid"));
  EXPECT_EQ(send("POST", leases, lease("Not_A_Name", 15)).status, 422);
  EXPECT_EQ(send("POST", leases, lease("gpufair", 15)).status, 201);
}

// Every Event gpufair writes, through its real recorder, is accepted by the validating server.
TEST_F(FakeValidationTest, EveryEventGpufairWritesIsAccepted) {
  auto clock = std::make_shared<gpufair::testing::ManualClock>();
  EventRecorderOptions options;
  options.reportingInstance = "gpufair-7d9c-xk2p";
  EventRecorder recorder(client_, clock, options);
  const std::vector<EventReason> reasons = {
      events::kUnschedulable,  events::kBorrowed,       events::kReclaimed,    events::kReclaiming,
      events::kReclaimBlocked, events::kReclaimWaiting, events::kReclaimDryRun};
  for (const auto& why : reasons) {
    EXPECT_TRUE(recorder.recordPod("team-a", "train-1", uid(), EventType::kNormal, why,
                                   std::string(2000, 'x')));
  }
  ObjectRef configMap{"ConfigMap", "v1", "gpufair-system", "gpufair-queues", "uid-cm", "7"};
  EXPECT_TRUE(recorder.record(configMap, EventType::kWarning, events::kInvalidQuotaConfig, "bad"));
  ObjectRef node{"Node", "v1", "", "node-1", "uid-n", ""};
  EXPECT_TRUE(recorder.record(node, EventType::kNormal, {"Fragmented", "Scoring"}, "m"));
  ASSERT_TRUE(recorder.waitIdle(std::chrono::milliseconds{10'000}));
  EventRecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(stats.created, reasons.size() + 2);
  EXPECT_EQ(fake_.list("/api/v1/namespaces/team-a/events").size(), reasons.size());
  EXPECT_EQ(fake_.list("/api/v1/namespaces/default/events").size(), 1u);

  // A repeat after the dedup interval updates the same Event (count 2), also accepted.
  clock->advance(std::chrono::minutes{6});
  EXPECT_TRUE(recorder.recordPod("team-a", "train-1", uid(), EventType::kNormal,
                                 events::kUnschedulable, "again"));
  ASSERT_TRUE(recorder.waitIdle(std::chrono::milliseconds{10'000}));
  EXPECT_EQ(recorder.stats().updated, 1u);
  EXPECT_EQ(recorder.stats().failed, 0u);
}

TEST(FakeValidationRules, NamesAndLabels) {
  EXPECT_TRUE(fake::isDns1123Subdomain("gpufair-system"));
  EXPECT_TRUE(fake::isDns1123Subdomain("a.b-c.d"));
  EXPECT_FALSE(fake::isDns1123Subdomain("Team-A"));
  EXPECT_FALSE(fake::isDns1123Subdomain("-a"));
  EXPECT_FALSE(fake::isDns1123Subdomain(std::string(254, 'a')));
  EXPECT_TRUE(fake::isQualifiedName("gpufair.io/over-quota"));
  EXPECT_TRUE(fake::isQualifiedName("app"));
  EXPECT_FALSE(fake::isQualifiedName("gpufair.io/"));
  EXPECT_FALSE(fake::isQualifiedName("Bad_Prefix/x"));
  EXPECT_FALSE(fake::isQualifiedName(std::string(64, 'n')));
  EXPECT_TRUE(fake::isLabelValue(""));
  EXPECT_TRUE(fake::isLabelValue("true"));
  EXPECT_FALSE(fake::isLabelValue("a b"));
}

}  // namespace
}  // namespace gpufair::k8s
