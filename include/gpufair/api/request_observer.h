// RequestObserver: what the webhook service tells a metrics exporter about each request, and the
// bounded categories /filter rejections fall into. The api module defines the interface and the
// categories; an exporter (gpufair::metrics, wired by the app) implements it, so api depends on no
// metrics library.
// Thread-safety: observe() and filterRejected() are called on io threads, several at once;
// implementations must be thread-safe and quick (no I/O, no blocking). rejectionCategory is a pure
// function.
#pragma once

#include <string_view>

#include "gpufair/policy/filter.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::api {

class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  // One finished request. verb: "filter", "prioritize", "preempt", "bind", "healthz", "readyz",
  // "debug_snapshot", "debug_explain", or "unknown" (no such endpoint). result: "ok" (2xx),
  // "bad_request" (400), "not_found" (404), "method_not_allowed" (405), "unavailable" (503) or
  // "error" (any other status).
  virtual void observe(std::string_view verb, std::string_view result, double seconds) = 0;
  // /filter left the pod no node; category is one of kRejectionCategories.
  virtual void filterRejected(std::string_view category) = 0;
};

// Every value rejectionCategory returns: a fixed, small set, so that it can be a metric label.
inline constexpr std::string_view kRejectionCategories[] = {
    "quota_limit",        // the queue would exceed its limit
    "quota_borrow",       // beyond deserved, and not enough idle GPUs to borrow (or weight 0)
    "unknown_queue",      // the pod's queue does not exist
    "insufficient_gpus",  // not enough free (whole) GPUs on the node
    "gpu_model",          // the node's GPU model is not one the pod allows
    "cordoned",           // the node is unschedulable or being deleted
    "cpu_memory",         // not enough CPU or memory (when fit checks them)
    "unknown_node",       // the node is not in gpufair's view
    "reserved",           // room, but held for a reclaimer or a gang
    "gang",               // the pod's gang does not fit, is steered elsewhere, or its size is bad
    "other",
};

// Why /filter left the pod no node, as one category: the queue's admission decision if that
// refused, else the refusal on the node whose reason is reported first (an unresolvable one before
// a merely unschedulable one), classified from the snapshot's state, not from the reason's words.
std::string_view rejectionCategory(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                                   const policy::FilterResult& result);

// The result label of a response status, as RequestObserver::observe documents it.
std::string_view resultLabel(int httpStatus);

}  // namespace gpufair::api
