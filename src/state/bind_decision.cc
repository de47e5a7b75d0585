#include "bind_decision.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "gpufair/common/labels.h"
#include "gpufair/policy/admission.h"
#include "gpufair/policy/gang.h"
#include "gpufair/state/reservation_book.h"

namespace gpufair::state::detail {
namespace {

using Answer = Result<AssumeOutcome>;

// The gang rule at bind: a member binds only into room reserved for its gang. Empty: the pod may
// go on; a plan to reserve first; or the refusal.
std::variant<std::monostate, ReserveFirst, std::string> gangCheck(
    const policy::ClusterSnapshot& snapshot, const policy::Pod& pod, const GangView& gang,
    std::string_view node, bool mayPlan) {
  if (!pod.inGang() || pod.gpus <= 0) return {};
  if (!pod.gangError.empty()) return pod.gangError;
  if (std::max(gang.count.size, pod.gangSize) <= gang.count.placed) {
    return {};  // complete: an ordinary pod
  }
  GangDecision decided = decideGang(snapshot, pod, gang, mayPlan);
  if (!decided.error.empty()) return std::move(decided.error);
  if (decided.planned) return ReserveFirst{std::move(decided.plan)};
  for (const auto& r : decided.held) {
    if (r.node == node && r.gpus >= ReservationBook::share(pod)) return {};
  }
  std::string nodes;
  for (const auto& r : decided.held) nodes += (nodes.empty() ? "" : ", ") + r.node;
  return "gang " + pod.gang + " has room reserved on " + (nodes.empty() ? "no node" : nodes) +
         ", not on node " + std::string(node);
}

int chooseGpu(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
              const policy::NodeState& target, const policy::Scorer* scorer) {
  if (!pod.isFractional()) return -1;
  int gpu = scorer != nullptr ? scorer->chooseGpu(snapshot, pod, target) : -1;
  if (gpu < 0 || gpu >= target.gpuCount() || target.gpuFree(gpu) < pod.gpuShare) {
    gpu = target.bestFitGpu(pod.gpuShare);
  }
  return gpu;
}

// Fit, admission and the GPU on `node`, for a pod that passed the gang rule.
BindDecision placeOn(const policy::ClusterSnapshot& snap, const policy::Pod& pod,
                     std::string_view node, const policy::Scorer* scorer) {
  const policy::NodeState* target = snap.findNode(node);
  if (target == nullptr) {
    return Answer::failure("node " + std::string(node) + " is not known to gpufair");
  }
  if (Status fit = policy::fitsNode(*target, pod, snap.fitOptions()); !fit.isOk()) {
    return Answer::failure("pod " + pod.key() + " no longer fits on node " + std::string(node) +
                           ": " + fit.reason());
  }
  const policy::Admission admission = policy::admit(snap, pod);
  // A gang's quota was charged for all its members when its GPUs were reserved.
  const bool reservedHere = pod.inGang() && target->reservedFor(pod) > 0;
  if (!admission.status.isOk() && !reservedHere) {
    return Answer::failure("pod " + pod.key() + " is not admitted: " + admission.status.reason());
  }
  const int gpuIndex = chooseGpu(snap, pod, *target, scorer);
  auto placed = std::make_shared<policy::Pod>(pod);
  placed->nodeName = std::string(node);
  placed->gpuIndex = gpuIndex;
  if (gpuIndex >= 0) placed->annotations[kGpuIndexAnnotation] = std::to_string(gpuIndex);
  placed->overQuota = admission.overQuota;
  if (admission.overQuota) placed->labels[kOverQuotaLabel] = "true";
  return Place{std::move(placed),
               AssumeOutcome{std::string(node), admission.overQuota, admission.queue, gpuIndex}};
}

}  // namespace

GangDecision decideGang(const policy::ClusterSnapshot& snapshot, const policy::Pod& pod,
                        const GangView& gang, bool mayPlan) {
  GangDecision out;
  if (!pod.gangError.empty()) {
    out.error = pod.gangError;
    return out;
  }
  out.held = gang.held;
  if (!out.held.empty() || !mayPlan) return out;  // the gang holds room already
  policy::GangPlanOptions options;
  options.unplacedWithoutGpus = gang.unplacedWithoutGpus;
  const policy::GangPlan plan = policy::planGang(snapshot, pod, options);
  if (!plan.status.isOk()) {
    out.error = plan.status.reason();
    return out;
  }
  out.planned = true;
  out.plan = plan.reservations();
  return out;
}

BindDecision decideBind(const BindInputs& in, std::string_view uid, std::string_view node,
                        const policy::Scorer* scorer, bool mayPlan) {
  if (in.pod == nullptr) {
    return Answer::failure("pod with uid " + std::string(uid) + " was never offered to gpufair");
  }
  const policy::Pod& pod = *in.pod;
  if (!pod.nodeName.empty()) {
    if (pod.nodeName == node) {
      return Answer(AssumeOutcome{pod.nodeName, pod.overQuota, pod.queue, pod.gpuIndex});
    }
    return Answer::failure("pod " + pod.key() + " is already bound to node " + pod.nodeName);
  }
  if (pod.isFinished()) return Answer::failure("pod " + pod.key() + " has already finished");
  auto gang = gangCheck(*in.snapshot, pod, in.gang, node, mayPlan);
  if (auto* plan = std::get_if<ReserveFirst>(&gang)) return std::move(*plan);
  if (auto* refusal = std::get_if<std::string>(&gang)) {
    return Answer::failure("pod " + pod.key() + " cannot bind to node " + std::string(node) + ": " +
                           *refusal);
  }
  return placeOn(*in.snapshot, pod, node, scorer);
}

}  // namespace gpufair::state::detail
