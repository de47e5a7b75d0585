// The Kubernetes API operations gpufair writes with, over a KubeClient: pod bindings, label
// patches, core/v1 Events, policy/v1 Evictions and coordination.k8s.io/v1 Leases (Kubernetes
// v1.26+).
//
// Errors are values. A failure carries the API server's own words: the "message" of the Status
// object it answered with when there is one, else the HTTP status or the transport error, e.g.
//   binding team-a/train-1 to node-3: HTTP 409: pod train-1 is already assigned to node "node-2"
// Object names are URL-path-escaped.
// Thread-safety: free functions; safe from any thread (KubeClient allows concurrent calls).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/status.h"
#include "gpufair/k8s/client.h"

namespace gpufair::k8s {

inline constexpr const char* kComponent = "gpufair";

// --- helpers ------------------------------------------------------------------------------------

// Percent-encodes everything outside RFC 3986's unreserved set, for one path segment.
std::string escapePathSegment(std::string_view segment);
// The same for a query value ("gpufair.io/quota-config=true" ->
// "gpufair.io%2Fquota-config%3Dtrue").
inline std::string escapeQueryValue(std::string_view value) {
  return escapePathSegment(value);
}

// What went wrong with a request, parsed from a Kubernetes Status body when there is one.
struct ApiError {
  int httpStatus = 0;               // 0: the request never got an answer
  std::string reason;               // Status.reason: "NotFound", "Conflict", "TooManyRequests", ...
  std::string message;              // Status.message, else a short description of the answer
  std::vector<std::string> causes;  // Status.details.causes[].message (e.g. the PDB that blocks)

  // "HTTP 404: pods \"x\" not found" or "transport: connection refused"; causes appended.
  std::string describe() const;
};
ApiError apiError(const ApiResponse& response);

// "2026-11-22T10:00:00Z" (metav1.Time) and "2026-11-22T10:00:00.123456Z" (metav1.MicroTime).
std::string formatTime(Timestamp time);
std::string formatMicroTime(Timestamp time);

// --- pods -------------------------------------------------------------------------------------

// POST /api/v1/namespaces/{ns}/pods/{name}/binding. A non-empty uid is a precondition: the binding
// fails if the pod of that name is another pod now. kube-apiserver merges `annotations` into the
// pod's annotations in the same write that sets spec.nodeName (BindingREST's
// setPodHostAndAnnotations): no separate PATCH, and no window where one is written without the
// other.
Status bindPod(KubeClient& client, std::string_view ns, std::string_view name, std::string_view uid,
               std::string_view node,
               std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000},
               const std::map<std::string, std::string>& annotations = {});

// JSON merge patch of metadata.labels: `set` adds or overwrites, `remove` deletes (null). A
// non-empty uid is a precondition (the API server refuses the patch if the pod is another one now).
Status patchPodLabels(KubeClient& client, std::string_view ns, std::string_view name,
                      const std::map<std::string, std::string>& set,
                      const std::vector<std::string>& remove, std::string_view uid = "",
                      std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});

// JSON merge patch of metadata.annotations (adds or overwrites `set`); uid as for patchPodLabels.
Status patchPodAnnotations(KubeClient& client, std::string_view ns, std::string_view name,
                           const std::map<std::string, std::string>& set, std::string_view uid = "",
                           std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});

// --- evictions --------------------------------------------------------------------------------

enum class EvictionOutcome {
  kEvicted,   // the API server accepted the eviction (the pod is terminating)
  kBlocked,   // 429: a PodDisruptionBudget (or the server's rate limit) refuses it now
  kNotFound,  // 404, or the name now belongs to a pod with another uid: nothing to evict
  kError,     // anything else: 403, 500 (e.g. several PDBs match), transport errors
};
const char* evictionOutcomeName(EvictionOutcome outcome);

struct EvictionResult {
  EvictionOutcome outcome = EvictionOutcome::kError;
  std::string message;  // empty when evicted
};

// POST /api/v1/namespaces/{ns}/pods/{name}/eviction with a policy/v1 Eviction; a non-empty uid is
// a delete precondition.
EvictionResult evictPod(KubeClient& client, std::string_view ns, std::string_view name,
                        std::string_view uid,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});

// --- events -----------------------------------------------------------------------------------

// The object an Event is about (core/v1 ObjectReference).
struct ObjectRef {
  std::string kind;        // "Pod", "ConfigMap", "Node"
  std::string apiVersion;  // "v1"
  std::string ns;          // empty for cluster-scoped objects (the Event then goes to "default")
  std::string name;
  std::string uid;
  std::string resourceVersion;  // optional: the version the event is about
};

enum class EventType { kNormal, kWarning };

// Why an Event is written: `reason`, what happened (UpperCamelCase, at most 128 characters), and
// `action`, what gpufair did or failed to do about the object (at most 128). The API server
// requires both on an Event with eventTime (core/v1 validation: "action: Required value").
struct EventReason {
  std::string reason;
  std::string action;
};

// The Events gpufair writes, in one place (kubectl describe shows reason and action).
namespace events {
inline const EventReason kUnschedulable{"GpufairUnschedulable", "Scheduling"};
inline const EventReason kBorrowed{"GpufairBorrowed", "Binding"};
inline const EventReason kReclaimed{"Reclaimed", "Evicting"};
inline const EventReason kReclaiming{"Reclaiming", "Reclaiming"};
inline const EventReason kReclaimBlocked{"ReclaimBlocked", "Evicting"};
inline const EventReason kReclaimWaiting{"ReclaimWaiting", "Reclaiming"};
inline const EventReason kReclaimDryRun{"ReclaimDryRun", "Reclaiming"};
inline const EventReason kMovedForConsolidation{"MovedForConsolidation", "Evicting"};
inline const EventReason kConsolidating{"Consolidating", "Consolidating"};
inline const EventReason kConsolidationBlocked{"ConsolidationBlocked", "Evicting"};
inline const EventReason kConsolidationWaiting{"ConsolidationWaiting", "Consolidating"};
inline const EventReason kConsolidationDryRun{"ConsolidationDryRun", "Consolidating"};
inline const EventReason kConsolidationGaveUp{"ConsolidationGaveUp", "Consolidating"};
inline const EventReason kInvalidQuotaConfig{"InvalidQuotaConfig", "LoadingQuotaConfig"};
}  // namespace events

struct EventSpec {
  ObjectRef object;
  EventType type = EventType::kNormal;
  std::string reason;             // UpperCamelCase, at most 128 characters
  std::string message;            // truncated to 1024 bytes as the API server requires
  std::string action;             // required, at most 128 characters, e.g. "Binding"
  std::string reportingInstance;  // required by the API server with eventTime: e.g. the hostname
  int count = 1;
  Timestamp firstTimestamp{};
  Timestamp lastTimestamp{};
};

// Where an Event for `object` lives: its namespace, or "default" for cluster-scoped objects.
std::string eventNamespace(const ObjectRef& object);

// POST /api/v1/namespaces/{ns}/events (metadata.generateName "{object name}."). Returns the name
// the API server gave the Event, for later count updates. An Event without reason or action is an
// error here, before anything is sent: the API server would refuse it.
Result<std::string> createEvent(KubeClient& client, const EventSpec& event);
// PATCH (merge) of an existing Event: count, lastTimestamp, message. A 404 (Events expire, by
// default after an hour) is an error the caller answers by creating a new Event.
Status updateEvent(KubeClient& client, std::string_view ns, std::string_view name, int count,
                   Timestamp lastTimestamp, std::string_view message, bool* notFound = nullptr);

// --- leases -----------------------------------------------------------------------------------

struct Lease {
  std::string ns;
  std::string name;
  std::string resourceVersion;  // empty for a Lease not yet created
  std::string holderIdentity;   // empty: nobody holds it
  int leaseDurationSeconds = 0;
  std::optional<Timestamp> acquireTime;
  std::optional<Timestamp> renewTime;
  int leaseTransitions = 0;
  std::string raw;  // the object as last read; updates keep its other fields (labels, ...)

  // The same holder record: what a candidate compares to notice that the lease changed.
  bool sameRecord(const Lease& other) const;
};

struct LeaseResult {
  enum class Kind { kOk, kNotFound, kConflict, kError };
  Kind kind = Kind::kError;
  Lease lease;          // kOk: the lease as the API server has it now
  std::string message;  // otherwise
};

LeaseResult getLease(KubeClient& client, std::string_view ns, std::string_view name,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});
// POST; kConflict when it exists already (409 AlreadyExists).
LeaseResult createLease(KubeClient& client, const Lease& lease,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});
// PUT with lease.resourceVersion (optimistic concurrency): kConflict when someone wrote first.
LeaseResult updateLease(KubeClient& client, const Lease& lease,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});
// Decodes a coordination.k8s.io/v1 Lease from JSON.
Result<Lease> decodeLease(std::string_view json);

}  // namespace gpufair::k8s
