// ExtenderService: kube-scheduler's extender webhooks and gpufair's health and debug endpoints, as
// a RequestHandler independent of the transport.
//   POST /filter         ExtenderArgs -> ExtenderFilterResult (in the request's mode)
//   POST /prioritize     ExtenderArgs -> HostPriorityList (scores 0..10)
//   POST /preempt        ExtenderPreemptionArgs -> ExtenderPreemptionResult: the proposed
//                        victims quota lets go (policy/preemption.h), as NodeNameToMetaVictims
//   POST /bind           ExtenderBindingArgs -> ExtenderBindingResult (assume, bind, confirm);
//                        through handleAsync() answered once the Binder's bindAsync() is done,
//                        so the Binding's round trip holds no io thread
//   GET  /healthz        {"status":"ok"}
//   GET  /readyz         200 {"status":"ready"} or 503 {"status":"not ready","reason":...},
//                        plus "checks" (HealthDetail) when health details are set
//   GET  /debug/snapshot the current ClusterSnapshot as JSON (see debug_snapshot.h)
//   GET  /debug/explain?pod=NS/NAME  why a pod waits or where it would go (see explain.h; 404 for
//                        a pod gpufair does not know)
// No decision on a partial view: until the decision gate (setDecisionGate) says ok, e.g. before
// the first complete lists of nodes, pods and quota ConfigMaps or while a relist is under way,
// /filter fails every node with "gpufair is starting: <why>" (FailedNodes: kube-scheduler keeps
// the pod and retries it), /prioritize scores every node 0, /preempt proposes no victim and /bind
// refuses. Without a gate (file mode) decisions are always allowed.
// Bad input is a 400 with {"Error": "..."} (in the verb's result shape for /filter), unknown paths
// 404, wrong methods 405. Decisions are logged at debug level, rejections at info.
// Thread-safety: handle() may run on several threads at once; each thread reuses its own parser
// and buffers. The mirror, scorer and binder must outlive the service.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/api/http.h"
#include "gpufair/api/request_observer.h"
#include "gpufair/api/wire.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/state/mirror.h"
#include "gpufair/state/ports.h"

namespace gpufair::api {

// Readiness: ok means ready; otherwise the reason is reported by /readyz with a 503.
using ReadinessCheck = std::function<Status()>;

// Conditions /readyz reports beside readiness without deciding it, e.g. a rejected quota change
// (the last good config stays in force, so gpufair stays ready) or which replica leads.
struct HealthDetail {
  std::string name;  // "quota-config", "leader-election", ...
  bool ok = true;
  std::string message;
};
using HealthDetails = std::function<std::vector<HealthDetail>()>;

// What /filter answers among the nodes that pass (serve --filter-mode): "all" of them, as
// kube-scheduler expects by default (it then runs its own score plugins and /prioritize), or only
// the best `keep` by gpufair's scorer ("best" = 1, "top-N"). With one node kube-scheduler skips
// scoring and the /prioritize call altogether; the price is that its own soft preferences
// (preferred affinity, topology spreading) no longer weigh in. Hard constraints are unchanged: the
// nodes answered passed kube-scheduler's filters and gpufair's; nodes that fail them are answered
// as FailedNodes with the reason, while feasible nodes left out are simply not returned (with a
// node feasible, kube-scheduler reads no reasons, and the answer stays small however many nodes
// fit). Reserved nodes (gangs, reclaim holds) score highest, so they win.
struct FilterMode {
  std::size_t keep = 0;  // 0: all
  // "all", "best" or "top-N" (N >= 1); the error says what is accepted.
  static Result<FilterMode> parse(std::string_view text);
  std::string name() const;
};

// serve's default --filter-mode, and simulate's for its service path (chosen with
// bench/load_driver: bench/RESULTS.md).
inline constexpr const char* kDefaultFilterMode = "best";

class ExtenderService final : public RequestHandler {
 public:
  // readiness may be empty: always ready.
  ExtenderService(state::Mirror& mirror, const policy::Scorer& scorer, state::Binder& binder,
                  ReadinessCheck readiness = {});

  Response handle(const Request& request) override;
  // POST /bind through the Binder's bindAsync() (the answer comes when the Binding is done, maybe
  // on the binder's thread); everything else as handle(), answered at once.
  void handleAsync(const Request& request, Reply reply) override;
  // Optional; must outlive the service. Set before serving.
  void setObserver(state::DecisionObserver* observer) { observer_ = observer; }
  // Default all. Set before serving.
  void setFilterMode(FilterMode mode) { filterMode_ = mode; }
  // Optional: decisions wait until it says ok (see above). Set before serving.
  void setDecisionGate(ReadinessCheck gate) { gate_ = std::move(gate); }
  // Optional: /readyz then also lists {"checks":[{"name","ok","message"}]}. Set before serving.
  void setHealthDetails(HealthDetails details) { details_ = std::move(details); }
  // Optional; must outlive the service. Set before serving. Hears of every request handle() ends.
  void setRequestObserver(RequestObserver* observer) { requestObserver_ = observer; }

  Response filter(std::string_view body);
  Response prioritize(std::string_view body);
  Response preempt(std::string_view body);
  Response bind(std::string_view body);
  // The verbs' typed cores: what filter(), prioritize() and bind() do once the body is decoded,
  // for in-process callers (`gpufair simulate --path service`) that drive the service as
  // kube-scheduler would without the JSON round trip. Same decisions, logs and observers as the
  // HTTP verbs. filterArgs' and prioritizeArgs' results view into args.candidates.
  policy::FilterResult filterArgs(ExtenderArgs& args);
  std::vector<policy::NodeScore> prioritizeArgs(ExtenderArgs& args);
  // "" when the pod was bound, else why not (ExtenderBindingResult.Error).
  std::string bindArgs(const BindingArgs& args);
  // bindArgs() through the Binder's bindAsync(): the checks and the mirror's assumption on the
  // calling thread, then `done` with the result once the Binding is done (on any thread).
  void bindArgsAsync(const BindingArgs& args, std::function<void(std::string)> done);
  Response healthz() const;
  Response readyz() const;
  Response debugSnapshot() const;
  Response debugExplain(std::string_view target) const;

 private:
  // Routes the request; sets *verb (when given) to the route's metric label.
  Response dispatch(const Request& request, std::string_view* verb);
  // Ok, or why no decision can be made now ("gpufair is starting: ...").
  Status decisionsAllowed() const;
  // Tells the request observer (when set) of one answered request, timed from `start`.
  void observeRequest(std::string_view verb, int status,
                      std::chrono::steady_clock::time_point start) const;
  // /bind in two halves around the Binder: the checks and the assumption (an error for the
  // scheduler, or "" with `prepared` set), then confirm or forget by the Binding's outcome.
  struct PreparedBind;
  std::string prepareBind(const BindingArgs& args, PreparedBind& prepared);
  std::string finishBind(const PreparedBind& prepared, const Status& bound);
  // A fractional pod's share held from its scheduling cycle on (see extender_verbs.cc).
  void dropHeldShare(const policy::Pod& pod);
  void holdShare(const policy::Pod& pod, std::string_view node);
  // Whether `pod` (the mirror's, under `key`) has its share held on a node other than `node`
  // (then /bind moves it there).
  bool heldElsewhere(const policy::Pod& pod, std::string_view key, std::string_view node) const;

  state::Mirror& mirror_;
  const policy::Scorer& scorer_;
  state::Binder& binder_;
  ReadinessCheck readiness_;
  ReadinessCheck gate_;
  FilterMode filterMode_;
  state::DecisionObserver* observer_ = nullptr;
  HealthDetails details_;

  RequestObserver* requestObserver_ = nullptr;
};

}  // namespace gpufair::api
