#include "gpufair/k8s/api.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api_support.h"
#include "k8s/mock_client.h"

namespace gpufair::k8s {
namespace {

using ::testing::_;
using testing::body;
using ::testing::DoAll;
using ::testing::HasSubstr;
using testing::MockKubeClient;
using testing::reply;
using ::testing::Return;
using ::testing::SaveArg;
using testing::statusReply;
using ::testing::StrictMock;
using testing::transportFailure;

const Timestamp kT0{std::chrono::seconds{1'800'000'000}};  // 2027-01-15T08:00:00Z

class ApiTest : public ::testing::Test {
 protected:
  // Expects one request, answers `response`, and keeps the request for inspection.
  void answer(ApiResponse response) {
    EXPECT_CALL(client_, send(_)).WillOnce(DoAll(SaveArg<0>(&request_), Return(response)));
  }
  StrictMock<MockKubeClient> client_;
  ApiRequest request_;
};

TEST(ApiHelpers, EscapesPathSegments) {
  EXPECT_EQ(escapePathSegment("train-1.a_b~c"), "train-1.a_b~c");
  EXPECT_EQ(escapePathSegment("a/b c?d%"), "a%2Fb%20c%3Fd%25");
  EXPECT_EQ(escapeQueryValue("gpufair.io/quota-config=true"), "gpufair.io%2Fquota-config%3Dtrue");
}

// The Binding's body, written directly for plain names, is what the JSON tree's dump wrote (and
// still writes for names that need escaping): with and without a uid, quotes, backslashes,
// control characters and invalid UTF-8 in any field.
TEST(ApiHelpers, BindingBodyIsWhatTheJsonDumpWrote) {
  auto dumped = [](std::string_view ns, std::string_view name, std::string_view uid,
                   std::string_view node) {
    nlohmann::json metadata = {{"name", name}, {"namespace", ns}};
    if (!uid.empty()) metadata["uid"] = uid;
    return detail::dumpJson({{"apiVersion", "v1"},
                             {"kind", "Binding"},
                             {"metadata", std::move(metadata)},
                             {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}});
  };
  const std::vector<std::string> texts = {"ml",        "train-1",     "a\"b",    "a\\b",
                                          "tab\there", "caf\xc3\xa9", "bad\xff", ""};
  for (const auto& text : texts) {
    SCOPED_TRACE(text);
    EXPECT_EQ(detail::bindingBody(text, "p", "uid-1", "node-1"),
              dumped(text, "p", "uid-1", "node-1"));
    EXPECT_EQ(detail::bindingBody("ml", text, "", "node-1"), dumped("ml", text, "", "node-1"));
    EXPECT_EQ(detail::bindingBody("ml", "p", text, "node-1"), dumped("ml", "p", text, "node-1"));
    EXPECT_EQ(detail::bindingBody("ml", "p", "uid-1", text), dumped("ml", "p", "uid-1", text));
  }
  EXPECT_EQ(detail::bindingBody("ml", "p", "u", "n"),
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","namespace":"ml",)"
            R"("uid":"u"},"target":{"apiVersion":"v1","kind":"Node","name":"n"}})");
}

// With annotations (kube-apiserver merges them into the pod as it binds): the same text as the
// JSON tree's dump, keys in its order, for plain and escaped keys and values.
TEST(ApiHelpers, BindingBodyWithAnnotationsIsWhatTheJsonDumpWrote) {
  using Annotations = std::map<std::string, std::string>;
  const std::vector<Annotations> cases = {
      {{"gpufair.io/gpu-index", "3"}},
      {{"z", "1"}, {"a.example/b", "2"}, {"gpufair.io/gpu-index", "0"}},
      {{"gpufair.io/gpu-index", "a\"b"}},
      {{"k\\", "v"}},
      {{"caf\xc3\xa9", "bad\xff"}},
  };
  for (const auto& annotations : cases) {
    for (const char* uid : {"uid-1", ""}) {
      nlohmann::json metadata = {{"name", "p"}, {"namespace", "ml"}, {"annotations", annotations}};
      if (*uid != 0) metadata["uid"] = uid;
      const std::string dumped =
          detail::dumpJson({{"apiVersion", "v1"},
                            {"kind", "Binding"},
                            {"metadata", std::move(metadata)},
                            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n-1"}}}});
      EXPECT_EQ(detail::bindingBody("ml", "p", uid, "n-1", annotations), dumped);
    }
  }
  EXPECT_EQ(detail::bindingBody("ml", "p", "", "n", {{"gpufair.io/gpu-index", "2"}}),
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"annotations":)"
            R"({"gpufair.io/gpu-index":"2"},"name":"p","namespace":"ml"},)"
            R"("target":{"apiVersion":"v1","kind":"Node","name":"n"}})");
}

TEST(ApiHelpers, FormatsTimesAsKubernetesDoes) {
  EXPECT_EQ(formatTime(kT0), "2027-01-15T08:00:00Z");
  EXPECT_EQ(formatMicroTime(kT0 + std::chrono::microseconds{1234}), "2027-01-15T08:00:00.001234Z");
  EXPECT_EQ(formatTime(kT0 + std::chrono::milliseconds{999}), "2027-01-15T08:00:00Z");
}

TEST(ApiHelpers, ApiErrorReadsStatusBodies) {
  nlohmann::json status = {
      {"kind", "Status"},
      {"code", 429},
      {"reason", "TooManyRequests"},
      {"message", "Cannot evict pod as it would violate the pod's disruption budget."},
      {"details",
       {{"causes",
         {{{"reason", "DisruptionBudget"},
           {"message", "The disruption budget db needs 2 healthy pods and has 2 currently"}}}}}}};
  ApiError error = apiError(reply(429, status.dump()));
  EXPECT_EQ(error.httpStatus, 429);
  EXPECT_EQ(error.reason, "TooManyRequests");
  EXPECT_EQ(error.describe(),
            "HTTP 429: Cannot evict pod as it would violate the pod's disruption budget.; The "
            "disruption budget db needs 2 healthy pods and has 2 currently");
  EXPECT_EQ(apiError(reply(502, "bad gateway")).describe(), "HTTP 502: bad gateway");
  EXPECT_EQ(apiError(reply(500, "")).describe(), "HTTP 500: empty answer");
  EXPECT_EQ(apiError(transportFailure("connection refused")).describe(), "connection refused");
}

TEST_F(ApiTest, BindPostsABindingWithUidPrecondition) {
  answer(reply(201, R"({"kind":"Status","status":"Success"})"));
  Status status = bindPod(client_, "team-a", "train-1", "uid-1", "node-3");
  ASSERT_TRUE(status.isOk()) << status.reason();
  EXPECT_EQ(request_.method, "POST");
  EXPECT_EQ(request_.path, "/api/v1/namespaces/team-a/pods/train-1/binding");
  EXPECT_EQ(request_.contentType, "application/json");
  nlohmann::json b = body(request_);
  EXPECT_EQ(b["apiVersion"], "v1");
  EXPECT_EQ(b["kind"], "Binding");
  EXPECT_EQ(b["metadata"]["name"], "train-1");
  EXPECT_EQ(b["metadata"]["namespace"], "team-a");
  EXPECT_EQ(b["metadata"]["uid"], "uid-1");
  EXPECT_EQ(b["target"],
            (nlohmann::json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node-3"}}));
}

TEST_F(ApiTest, BindEscapesNamesInThePath) {
  answer(reply(201));
  ASSERT_TRUE(bindPod(client_, "team a", "x/y", "", "node-3").isOk());
  EXPECT_EQ(request_.path, "/api/v1/namespaces/team%20a/pods/x%2Fy/binding");
  EXPECT_FALSE(body(request_)["metadata"].contains("uid"));
}

TEST_F(ApiTest, BindErrorsCarryTheApiServersMessage) {
  struct Case {
    const char* name;
    ApiResponse response;
    const char* expected;
  };
  const Case cases[] = {
      {"conflict",
       statusReply(409, "Conflict", "pod train-1 is already assigned to node \"node-2\""),
       "binding team-a/train-1 to node-3: HTTP 409: pod train-1 is already assigned to node "
       "\"node-2\""},
      {"not found", statusReply(404, "NotFound", "pods \"train-1\" not found"),
       "binding team-a/train-1 to node-3: HTTP 404: pods \"train-1\" not found"},
      {"server error", reply(500, "oops"), "binding team-a/train-1 to node-3: HTTP 500: oops"},
      {"transport", transportFailure("connection refused"),
       "binding team-a/train-1 to node-3: connection refused"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    answer(c.response);
    Status status = bindPod(client_, "team-a", "train-1", "uid-1", "node-3");
    EXPECT_EQ(status.code(), Code::kError);
    EXPECT_EQ(status.reason(), c.expected);
  }
}

TEST_F(ApiTest, PatchLabelsIsAMergePatchWithNullForRemoval) {
  answer(reply(200));
  ASSERT_TRUE(patchPodLabels(client_, "team-a", "train-1", {{"gpufair.io/over-quota", "true"}},
                             {"old"}, "uid-1")
                  .isOk());
  EXPECT_EQ(request_.method, "PATCH");
  EXPECT_EQ(request_.path, "/api/v1/namespaces/team-a/pods/train-1");
  EXPECT_EQ(request_.contentType, "application/merge-patch+json");
  nlohmann::json b = body(request_);
  EXPECT_EQ(b["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  EXPECT_TRUE(b["metadata"]["labels"]["old"].is_null());
  EXPECT_TRUE(b["metadata"]["labels"].contains("old"));
  EXPECT_EQ(b["metadata"]["uid"], "uid-1");

  answer(statusReply(403, "Forbidden", "pods \"train-1\" is forbidden: User cannot patch"));
  Status denied = patchPodLabels(client_, "team-a", "train-1", {}, {"x"});
  EXPECT_EQ(denied.reason(),
            "labelling team-a/train-1: HTTP 403: pods \"train-1\" is forbidden: User cannot patch");
  EXPECT_FALSE(body(request_)["metadata"].contains("uid"));
}

TEST_F(ApiTest, EvictionPostsAPolicyV1Eviction) {
  answer(reply(201, R"({"kind":"Status","status":"Success"})"));
  EvictionResult result = evictPod(client_, "team-b", "job-7", "uid-7");
  EXPECT_EQ(result.outcome, EvictionOutcome::kEvicted);
  EXPECT_EQ(request_.method, "POST");
  EXPECT_EQ(request_.path, "/api/v1/namespaces/team-b/pods/job-7/eviction");
  nlohmann::json b = body(request_);
  EXPECT_EQ(b["apiVersion"], "policy/v1");
  EXPECT_EQ(b["kind"], "Eviction");
  EXPECT_EQ(b["metadata"]["name"], "job-7");
  EXPECT_EQ(b["metadata"]["namespace"], "team-b");
  EXPECT_EQ(b["deleteOptions"]["preconditions"]["uid"], "uid-7");
}

TEST_F(ApiTest, EvictionOutcomesAreTyped) {
  struct Case {
    const char* name;
    ApiResponse response;
    EvictionOutcome outcome;
    const char* message;
  };
  const Case cases[] = {
      {"pdb",
       statusReply(429, "TooManyRequests",
                   "Cannot evict pod as it would violate the pod's disruption budget."),
       EvictionOutcome::kBlocked, "disruption budget"},
      {"gone", statusReply(404, "NotFound", "pods \"job-7\" not found"), EvictionOutcome::kNotFound,
       "not found"},
      {"uid changed",
       statusReply(409, "Conflict",
                   "Precondition failed: UID in precondition: uid-7, UID in object meta: uid-8"),
       EvictionOutcome::kNotFound, "Precondition failed"},
      {"several pdbs",
       statusReply(500, "InternalError", "This pod has more than one PodDisruptionBudget"),
       EvictionOutcome::kError, "more than one"},
      {"transport", transportFailure("TLS handshake failed"), EvictionOutcome::kError, "TLS"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    answer(c.response);
    EvictionResult result = evictPod(client_, "team-b", "job-7", "uid-7");
    EXPECT_EQ(result.outcome, c.outcome) << evictionOutcomeName(result.outcome);
    EXPECT_THAT(result.message, HasSubstr(c.message));
    EXPECT_THAT(result.message, HasSubstr("evicting team-b/job-7"));
  }
}

TEST_F(ApiTest, CreateEventWritesACoreV1Event) {
  answer(reply(201, R"({"metadata":{"name":"train-1.17a2b3c4d5","namespace":"team-a"}})"));
  EventSpec event;
  event.object = {"Pod", "v1", "team-a", "train-1", "uid-1", ""};
  event.type = EventType::kWarning;
  event.reason = "QuotaExceeded";
  event.action = "Scheduling";
  event.message = "queue team-a at 30/30 GPUs (limit)";
  event.reportingInstance = "gpufair-0";
  event.count = 3;
  event.firstTimestamp = kT0;
  event.lastTimestamp = kT0 + std::chrono::seconds{60};
  auto name = createEvent(client_, event);
  ASSERT_TRUE(name.ok()) << name.error();
  EXPECT_EQ(*name, "train-1.17a2b3c4d5");
  EXPECT_EQ(request_.method, "POST");
  EXPECT_EQ(request_.path, "/api/v1/namespaces/team-a/events");
  nlohmann::json b = body(request_);
  EXPECT_EQ(b["apiVersion"], "v1");
  EXPECT_EQ(b["kind"], "Event");
  EXPECT_EQ(b["metadata"]["generateName"], "train-1.");
  EXPECT_EQ(b["metadata"]["namespace"], "team-a");
  EXPECT_EQ(b["involvedObject"], (nlohmann::json{{"kind", "Pod"},
                                                 {"apiVersion", "v1"},
                                                 {"namespace", "team-a"},
                                                 {"name", "train-1"},
                                                 {"uid", "uid-1"}}));
  EXPECT_EQ(b["reason"], "QuotaExceeded");
  EXPECT_EQ(b["action"], "Scheduling");
  EXPECT_EQ(b["message"], "queue team-a at 30/30 GPUs (limit)");
  EXPECT_EQ(b["type"], "Warning");
  EXPECT_EQ(b["source"]["component"], "gpufair");
  EXPECT_EQ(b["reportingComponent"], "gpufair");
  EXPECT_EQ(b["reportingInstance"], "gpufair-0");
  EXPECT_EQ(b["count"], 3);
  EXPECT_EQ(b["firstTimestamp"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(b["lastTimestamp"], "2027-01-15T08:01:00Z");
  EXPECT_EQ(b["eventTime"], "2027-01-15T08:00:00.000000Z");
}

TEST_F(ApiTest, EventsForClusterScopedObjectsGoToDefaultAndLongNotesAreCut) {
  answer(statusReply(403, "Forbidden", "events is forbidden"));
  EventSpec event;
  event.object = {"Node", "v1", "", "node-1", "uid-n", ""};
  event.reason = "Fragmented";
  event.action = "Scoring";
  event.message = std::string(1023, 'x') + "\xC3\xA9 and more";  // \xC3\xA9: one character
  auto name = createEvent(client_, event);
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.error(),
            "creating event Fragmented for Node node-1: HTTP 403: events is forbidden");
  EXPECT_EQ(request_.path, "/api/v1/namespaces/default/events");
  nlohmann::json b = body(request_);
  EXPECT_FALSE(b["involvedObject"].contains("namespace"));
  EXPECT_EQ(b["type"], "Normal");
  EXPECT_EQ(b["message"], std::string(1023, 'x'));
  EXPECT_EQ(b["reportingInstance"], "gpufair");
}

TEST_F(ApiTest, InvalidUtf8InAMessageIsReplacedNotThrown) {
  answer(reply(201));
  EventSpec event;
  event.object = {"Pod", "v1", "team-a", "train-1", "uid-1", ""};
  event.reason = "Odd";
  event.action = "Testing";
  event.message = "bad \xFF byte";
  ASSERT_TRUE(createEvent(client_, event).ok());
  EXPECT_EQ(body(request_)["message"], "bad \xEF\xBF\xBD byte");
}

TEST_F(ApiTest, AnEventWithoutActionOrReasonIsRefusedBeforeItIsSent) {
  EXPECT_CALL(client_, send(_)).Times(0);  // nothing may be sent
  for (auto [reason, action] : {std::pair{"Odd", ""}, std::pair{"", "Testing"}}) {
    EventSpec event;
    event.object = {"Pod", "v1", "team-a", "train-1", "uid-1", ""};
    event.reason = reason;
    event.action = action;
    auto name = createEvent(client_, event);
    ASSERT_FALSE(name.ok());
    EXPECT_THAT(name.error(), HasSubstr("without reason and action"));
  }
}

TEST_F(ApiTest, UpdateEventPatchesCountAndTimestamp) {
  answer(reply(200));
  ASSERT_TRUE(updateEvent(client_, "team-a", "train-1.abc", 7, kT0, "again").isOk());
  EXPECT_EQ(request_.method, "PATCH");
  EXPECT_EQ(request_.path, "/api/v1/namespaces/team-a/events/train-1.abc");
  EXPECT_EQ(request_.contentType, "application/merge-patch+json");
  EXPECT_EQ(body(request_),
            (nlohmann::json{
                {"count", 7}, {"lastTimestamp", "2027-01-15T08:00:00Z"}, {"message", "again"}}));
  answer(statusReply(404, "NotFound", "events \"train-1.abc\" not found"));
  bool notFound = false;
  EXPECT_FALSE(updateEvent(client_, "team-a", "train-1.abc", 8, kT0, "x", &notFound).isOk());
  EXPECT_TRUE(notFound);
}

constexpr const char* kLeaseJson = R"({
  "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
  "metadata": {"name": "gpufair", "namespace": "gpufair-system", "resourceVersion": "42",
               "labels": {"app": "gpufair"}},
  "spec": {"holderIdentity": "host-a_1", "leaseDurationSeconds": 15,
           "acquireTime": "2027-01-15T08:00:00.000000Z", "renewTime": "2027-01-15T08:00:10.500000Z",
           "leaseTransitions": 3}})";

TEST_F(ApiTest, GetLeaseDecodesTheSpec) {
  answer(reply(200, kLeaseJson));
  LeaseResult got = getLease(client_, "gpufair-system", "gpufair");
  ASSERT_EQ(got.kind, LeaseResult::Kind::kOk) << got.message;
  EXPECT_EQ(request_.method, "GET");
  EXPECT_EQ(request_.path, "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases/gpufair");
  EXPECT_EQ(got.lease.resourceVersion, "42");
  EXPECT_EQ(got.lease.holderIdentity, "host-a_1");
  EXPECT_EQ(got.lease.leaseDurationSeconds, 15);
  EXPECT_EQ(got.lease.leaseTransitions, 3);
  EXPECT_EQ(got.lease.acquireTime, kT0);
  EXPECT_EQ(got.lease.renewTime, kT0 + std::chrono::milliseconds{10'500});

  answer(statusReply(404, "NotFound", "leases.coordination.k8s.io \"gpufair\" not found"));
  EXPECT_EQ(getLease(client_, "gpufair-system", "gpufair").kind, LeaseResult::Kind::kNotFound);
  answer(transportFailure("timeout"));
  LeaseResult failed = getLease(client_, "gpufair-system", "gpufair");
  EXPECT_EQ(failed.kind, LeaseResult::Kind::kError);
  EXPECT_EQ(failed.message, "reading lease gpufair-system/gpufair: timeout");
  answer(reply(200, R"({"metadata":{"name":"gpufair"},"spec":{"renewTime":"yesterday"}})"));
  EXPECT_EQ(getLease(client_, "gpufair-system", "gpufair").kind, LeaseResult::Kind::kError);
}

TEST_F(ApiTest, CreateAndUpdateLease) {
  Lease lease;
  lease.ns = "gpufair-system";
  lease.name = "gpufair";
  lease.resourceVersion = "ignored-on-create";
  lease.holderIdentity = "host-b_2";
  lease.leaseDurationSeconds = 15;
  lease.acquireTime = kT0;
  lease.renewTime = kT0;
  answer(reply(201, kLeaseJson));
  EXPECT_EQ(createLease(client_, lease).kind, LeaseResult::Kind::kOk);
  EXPECT_EQ(request_.method, "POST");
  EXPECT_EQ(request_.path, "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases");
  nlohmann::json created = body(request_);
  EXPECT_EQ(created["kind"], "Lease");
  EXPECT_EQ(created["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_FALSE(created["metadata"].contains("resourceVersion"));
  EXPECT_EQ(created["spec"]["holderIdentity"], "host-b_2");
  EXPECT_EQ(created["spec"]["renewTime"], "2027-01-15T08:00:00.000000Z");

  answer(
      statusReply(409, "AlreadyExists", "leases.coordination.k8s.io \"gpufair\" already exists"));
  EXPECT_EQ(createLease(client_, lease).kind, LeaseResult::Kind::kConflict);

  // An update keeps what it does not own (labels) and sends the resourceVersion it read.
  Lease read = decodeLease(kLeaseJson).value();
  read.holderIdentity = "host-b_2";
  read.leaseTransitions = 4;
  answer(reply(200, kLeaseJson));
  EXPECT_EQ(updateLease(client_, read).kind, LeaseResult::Kind::kOk);
  EXPECT_EQ(request_.method, "PUT");
  EXPECT_EQ(request_.path, "/apis/coordination.k8s.io/v1/namespaces/gpufair-system/leases/gpufair");
  nlohmann::json updated = body(request_);
  EXPECT_EQ(updated["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(updated["metadata"]["labels"]["app"], "gpufair");
  EXPECT_EQ(updated["spec"]["holderIdentity"], "host-b_2");
  EXPECT_EQ(updated["spec"]["leaseTransitions"], 4);
  EXPECT_EQ(updated["spec"]["renewTime"], "2027-01-15T08:00:10.500000Z");

  answer(statusReply(409, "Conflict", "the object has been modified"));
  LeaseResult conflict = updateLease(client_, read);
  EXPECT_EQ(conflict.kind, LeaseResult::Kind::kConflict);
  EXPECT_THAT(conflict.message, HasSubstr("the object has been modified"));
}

}  // namespace
}  // namespace gpufair::k8s
