// The four extender verbs of ExtenderService.
#include <charconv>

#include <spdlog/spdlog.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/wire.h"
#include "gpufair/common/labels.h"
#include "gpufair/policy/candidate_positions.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/preemption.h"

#include "request_document.h"

namespace gpufair::api {
namespace {

Response badFilterRequest(std::string_view message) {
  spdlog::info("filter: bad request: {}", message);
  Response response;
  response.status = 400;
  encodeFilterError(message, response.body);
  return response;
}

bool sameNode(const policy::Node& a, const policy::Node& b) {
  return a.allocatable == b.allocatable && a.unschedulable == b.unschedulable &&
         a.deleting == b.deleting && a.labels == b.labels;
}

// Nodes mode: the scheduler's node objects are news too. Only changed nodes are written, so an
// unchanged cluster does not rebuild node states on every request.
void upsertChangedNodes(state::Mirror& mirror, const ExtenderArgs& args) {
  if (!args.nodesMode || args.nodes.empty()) return;
  const policy::SnapshotPtr before = mirror.snapshot();
  for (const auto& node : args.nodes) {
    const policy::NodeState* known = before->findNode(node.name);
    if (known == nullptr || !sameNode(known->node(), node)) mirror.upsertNode(node);
  }
}

// The first member of a gang that is neither complete nor holding reservations: reserve a node for
// every member still to place, atomically in the mirror, before filtering. A gang that does not fit
// is refused by policy::filter with the plan's reason.
policy::SnapshotPtr reserveGangIfFirst(state::Mirror& mirror, const policy::Pod& pod,
                                       policy::SnapshotPtr snapshot) {
  if (!pod.inGang() || !pod.gangError.empty() || pod.gpus <= 0) return snapshot;
  const policy::GangState* gang = snapshot->findGang(pod.gangKey());
  if (gang != nullptr && (gang->reserved > 0 || gang->complete())) return snapshot;
  auto reserved = mirror.reserveGang(pod);
  if (!reserved) {
    spdlog::debug("gang {} of {} not reserved: {}", pod.gangName(), pod.key(), reserved.error());
    return mirror.snapshot();  // another gang may have just taken the room: filter on that
  }
  if (!reserved->planned) return snapshot;
  std::string nodes;
  for (const auto& r : reserved->reservations) {
    nodes += (nodes.empty() ? "" : ", ") + r.node + " " + formatGpus(r.gpus);
  }
  spdlog::info("gang {} (queue {}): reserved {} for {} pods", pod.gangName(), pod.queue, nodes,
               pod.gangSize);
  return mirror.snapshot();
}

// Each io thread resolves a /filter's NodeNames against the list it saw last: kube-scheduler sends
// nearly the same names pod after pod (policy::CandidatePositions: the same answers as looking
// every name up).
thread_local policy::CandidatePositions threadPositions;
// And reads the NodeNames array against the one it read last (detail::NodeNamesMemo): only the
// names that differ are read, the rest of the body is parsed without them.
thread_local detail::NodeNamesMemo threadNames;
// /prioritize's own (in all mode it is sent the feasible names /filter answered, nearly the same
// list pod after pod: a memo shared with /filter would see the two lists alternate).
thread_local policy::CandidatePositions threadPrioritizePositions;
thread_local detail::NodeNamesMemo threadPrioritizeNames;

// The memo's names lent to args.candidates for one request when the body was parsed without them
// (RequestDocument::namesTaken; a copy was N views per request), given back when this goes (before
// the document does).
class LentNames {
 public:
  LentNames(const detail::RequestDocument& document, detail::NodeNamesMemo& memo,
            ExtenderArgs& args)
      : memo_(memo) {
    if (!document.namesTaken()) return;
    memo.lend(args.candidates);
    names_ = &args.candidates;
    args.candidatesKnown = {memo.version(), memo.changedFrom(), memo.sameHead(), memo.sameTail()};
  }
  ~LentNames() {
    if (names_ != nullptr) memo_.giveBack(*names_);
  }
  LentNames(const LentNames&) = delete;
  LentNames& operator=(const LentNames&) = delete;

 private:
  detail::NodeNamesMemo& memo_;
  std::vector<std::string_view>* names_ = nullptr;
};

std::string_view firstReason(const policy::FilterResult& result) {
  if (!result.admission.status.isOk()) return result.admission.status.reason();
  if (!result.unresolvable.empty()) return result.unresolvable.front().reason;
  if (!result.failed.empty()) return result.failed.front().reason;
  return "no candidate nodes";
}

}  // namespace

Result<FilterMode> FilterMode::parse(std::string_view text) {
  if (text == "all") return FilterMode{0};
  if (text == "best") return FilterMode{1};
  if (text.starts_with("top-")) {
    std::size_t n = 0;
    const std::string_view digits = text.substr(4);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && n >= 1) return FilterMode{n};
  }
  return Result<FilterMode>::failure("filter mode must be all, best or top-N with N >= 1, not \"" +
                                     std::string(text) + "\"");
}

std::string FilterMode::name() const {
  if (keep == 0) return "all";
  if (keep == 1) return "best";
  return "top-" + std::to_string(keep);
}

Response ExtenderService::filter(std::string_view body) {
  detail::RequestDocument document(body, threadNames);
  if (!document.status().isOk()) return badFilterRequest(document.status().reason());
  ExtenderArgs& args = document.extenderArgs();
  if (auto status = decodeExtenderArgs(document.root(), args); !status.isOk()) {
    return badFilterRequest(status.reason());
  }
  const LentNames lent(document, threadNames, args);
  const policy::FilterResult result = filterArgs(args);
  std::string_view error;
  if (result.admission.status.code() == Code::kError) error = result.admission.status.reason();
  Response response;
  encodeFilterResult(args, result, error, response.body);
  return response;
}

namespace {

// Whether a fractional pod's GPU share is held from the scheduling cycle on (holdShare below): a
// fractional pod outside a gang, with the uid /bind names it by.
bool sharesHeldAtFilter(const policy::Pod& pod) {
  return pod.isFractional() && !pod.inGang() && !pod.uid.empty();
}

}  // namespace

// A fractional pod asks for gpufair.io/gpu-milli, which the shipped scheduler config marks
// ignoredByScheduler: kube-scheduler counts nothing for it while its bind is in flight (its
// binding cycle runs after the next pods' scheduling cycles), so every /filter until the /bind
// arrived was answered the same GPU share and all but one of those binds were refused ("no longer
// fits"; 14% of 3,000 half-GPU pods with 3 ms API writes, bench/RESULTS.md), each refused pod
// going back to kube-scheduler's backoff. So the share is held, as /bind's assumption holds it
// (GPU chosen then), on the node kube-scheduler will bind to: the one node /filter answers (best
// mode, or any mode when one node fits; kube-scheduler then skips scoring), else the node
// /prioritize scores best (kube-scheduler adds its own plugins' scores, so /bind may name another
// node: it then moves the hold there). /bind to the held node finds it held and binds; a new
// /filter for the pod (kube-scheduler trying again) drops it first; assumeTtl ends it otherwise.
void ExtenderService::dropHeldShare(const policy::Pod& pod) {
  if (sharesHeldAtFilter(pod)) mirror_.forget(pod.uid);  // only an assumed pod is reset
}

void ExtenderService::holdShare(const policy::Pod& pod, std::string_view node) {
  if (!sharesHeldAtFilter(pod)) return;
  auto held = mirror_.assume(pod.uid, node);
  if (!held) {  // /bind decides again on the state it then finds
    spdlog::debug("{}: share on {} not held: {}", pod.key(), node, held.error());
  }
}

bool ExtenderService::heldElsewhere(const policy::Pod& pod, std::string_view key,
                                    std::string_view node) const {
  return sharesHeldAtFilter(pod) && !pod.nodeName.empty() && pod.nodeName != node &&
         mirror_.isAssumed(key);
}

policy::FilterResult ExtenderService::filterArgs(ExtenderArgs& args) {
  upsertChangedNodes(mirror_, args);
  dropHeldShare(args.pod);
  mirror_.notePending(args.pod);
  if (Status allowed = decisionsAllowed(); !allowed.isOk()) {
    spdlog::info("filter {}: every node refused: {}", args.pod.key(), allowed.reason());
    policy::FilterResult refused;
    for (std::string_view node : args.candidates)
      refused.failed.push_back({node, allowed.reason()});
    return refused;
  }
  policy::SnapshotPtr snapshot = mirror_.snapshot();
  args.pod.queue = policy::resolveQueue(snapshot->quotaConfig(), args.pod.ns, args.pod.labels);
  snapshot = reserveGangIfFirst(mirror_, args.pod, std::move(snapshot));
  const std::span<const std::ptrdiff_t> positions =
      threadPositions.resolve(snapshot, args.candidates, args.candidatesKnown);
  // All mode keeps every feasible node; best and top-N keep the filterMode_.keep best by the
  // scorer, found in one pass from the positions. The nodes left out are not FailedNodes: a node
  // is feasible, so kube-scheduler never reads reasons (they only explain a pod that fits
  // nowhere), and one reason per node made the answer grow with the cluster (bench/RESULTS.md).
  policy::FilterResult result = policy::filterRanked(*snapshot, args.pod, args.candidates,
                                                     positions, scorer_, filterMode_.keep);

  if (spdlog::should_log(spdlog::level::debug)) {  // key() and formatGpus() allocate
    spdlog::debug(
        "filter {} ({} GPUs, queue {}): {} of {} nodes feasible, {} failed, {} unresolvable",
        args.pod.key(), formatGpus(args.pod.gpus), args.pod.queue, result.feasible.size(),
        args.candidates.size(), result.failed.size(), result.unresolvable.size());
  }
  if (result.feasible.empty() && !args.candidates.empty()) {
    const std::string reason(firstReason(result));
    spdlog::info("filter rejected {} ({} GPUs, queue {}) on all {} nodes: {}", args.pod.key(),
                 formatGpus(args.pod.gpus), args.pod.queue, args.candidates.size(), reason);
    if (observer_ != nullptr) observer_->rejected(args.pod, reason);
    if (requestObserver_ != nullptr) {
      requestObserver_->filterRejected(rejectionCategory(*snapshot, args.pod, result));
    }
  }
  if (result.feasible.size() == 1) holdShare(args.pod, result.feasible.front());
  return result;
}

Response ExtenderService::prioritize(std::string_view body) {
  detail::RequestDocument document(body, threadPrioritizeNames);
  if (!document.status().isOk())
    return detail::badRequest("prioritize", document.status().reason());
  ExtenderArgs& args = document.extenderArgs();
  if (auto status = decodeExtenderArgs(document.root(), args); !status.isOk()) {
    return detail::badRequest("prioritize", status.reason());
  }
  const LentNames lent(document, threadPrioritizeNames, args);
  Response response;
  encodeHostPriorityList(prioritizeArgs(args), response.body);
  return response;
}

std::vector<policy::NodeScore> ExtenderService::prioritizeArgs(ExtenderArgs& args) {
  upsertChangedNodes(mirror_, args);
  dropHeldShare(args.pod);
  mirror_.notePending(args.pod);
  if (!decisionsAllowed().isOk()) {
    std::vector<policy::NodeScore> zeros;
    for (std::string_view node : args.candidates) zeros.push_back({node, 0});
    return zeros;
  }
  const policy::SnapshotPtr snapshot = mirror_.snapshot();
  args.pod.queue = policy::resolveQueue(snapshot->quotaConfig(), args.pod.ns, args.pod.labels);
  const std::span<const std::ptrdiff_t> positions =
      threadPrioritizePositions.resolve(snapshot, args.candidates, args.candidatesKnown);
  auto scores = policy::prioritize(*snapshot, args.pod, args.candidates, positions, scorer_);
  const policy::NodeScore* best = nullptr;  // the first of the highest
  for (const auto& score : scores) {
    if (best == nullptr || score.score > best->score) best = &score;
  }
  if (best != nullptr) holdShare(args.pod, best->node);
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("prioritize {} ({} GPUs) with {} over {} nodes: best {} ({})", args.pod.key(),
                  formatGpus(args.pod.gpus), scorer_.name(), scores.size(), best ? best->node : "-",
                  best ? best->score : 0);
  }
  return scores;
}

Response ExtenderService::preempt(std::string_view body) {
  detail::RequestDocument document(body);
  if (!document.status().isOk()) return detail::badRequest("preempt", document.status().reason());
  PreemptionArgs args;
  if (auto status = decodePreemptionArgs(document.root(), args); !status.isOk()) {
    return detail::badRequest("preempt", status.reason());
  }
  if (Status allowed = decisionsAllowed(); !allowed.isOk()) {
    spdlog::info("preempt {}: no victims: {}", args.pod.key(), allowed.reason());
    Response response;
    encodePreemptionResult({}, response.body);
    return response;
  }
  mirror_.notePending(args.pod);  // the preemptor is pending demand, as at /filter
  const policy::SnapshotPtr snapshot = mirror_.snapshot();
  args.pod.queue = policy::resolveQueue(snapshot->quotaConfig(), args.pod.ns, args.pod.labels);
  std::vector<policy::NodeVictims> proposed;
  proposed.reserve(args.victims.size());
  for (auto& [node, victims] : args.victims) {
    proposed.push_back({std::move(node), std::move(victims.podUids), victims.numPdbViolations});
  }
  policy::PreemptionPlan plan = policy::planPreemption(*snapshot, args.pod, proposed);

  // kube-scheduler proposes up to ~100 candidate nodes: one info line, each node at debug.
  for (const auto& dropped : plan.dropped) {
    spdlog::debug("preempt {}: node {} dropped: {}", args.pod.key(), dropped.node, dropped.reason);
  }
  if (!plan.dropped.empty()) {
    spdlog::info("preempt {} (queue {}{}): {} of {} proposed nodes dropped, e.g. {}: {}",
                 args.pod.key(), args.pod.queue, plan.preemptorBorrowing ? ", borrowing" : "",
                 plan.dropped.size(), proposed.size(), plan.dropped.front().node,
                 plan.dropped.front().reason);
  }
  std::vector<std::pair<std::string, MetaVictims>> kept;
  kept.reserve(plan.nodes.size());
  for (auto& node : plan.nodes) {
    kept.emplace_back(std::move(node.node),
                      MetaVictims{std::move(node.podUids), node.numPdbViolations});
  }
  Response response;
  encodePreemptionResult(kept, response.body);
  return response;
}

}  // namespace gpufair::api
