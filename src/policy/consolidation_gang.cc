// Consolidation for a waiting gang (consolidation.h: planGangConsolidation): every member still to
// place gets a plan of its own on the state the earlier members' plans leave, or the gang gets
// none.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gpufair/policy/gang.h"

#include "consolidation_planner.h"

namespace gpufair::policy {
namespace {

// The members still to place: the gang's pending pods, then pods shaped like `member` for those
// not offered yet; largest request first (the hardest to make room for), then by uid.
std::vector<Pod> membersToPlace(const ClusterSnapshot& snapshot, const Pod& member, int count) {
  std::vector<Pod> out;
  const std::string key = member.gangKey();
  for (const PodPtr& p : snapshot.pending()) {
    if (static_cast<int>(out.size()) >= count) break;
    if (p->gangKey() == key && p->nodeName.empty() && p->gpus > 0) out.push_back(*p);
  }
  for (int k = static_cast<int>(out.size()); k < count; ++k) {
    Pod shaped = member;
    shaped.uid = member.uid + "#" + std::to_string(k);
    shaped.name = member.name + "#" + std::to_string(k);
    out.push_back(std::move(shaped));
  }
  std::stable_sort(out.begin(), out.end(), [](const Pod& a, const Pod& b) {
    if (a.gpus != b.gpus) return a.gpus > b.gpus;
    return a.uid < b.uid;
  });
  return out;
}

}  // namespace

std::size_t GangConsolidationOutcome::moves() const {
  std::size_t n = 0;
  for (const ConsolidationPlan& p : plans) n += p.moves.size();
  return n;
}

GangConsolidationOutcome planGangConsolidation(const ClusterSnapshot& snapshot, const Pod& member,
                                               const ConsolidationOptions& options) {
  using Kind = ConsolidationOutcome::Kind;
  GangConsolidationOutcome out;
  out.gang = member.gangKey();
  if (!member.inGang() || !member.gangError.empty()) {
    out.kind = Kind::kNotEligible;
    out.reason = member.gangError.empty() ? "is not a gang member" : member.gangError;
    return out;
  }
  const GangPlan gang = planGang(snapshot, member);
  if (!gang.admission.status.isOk()) {
    out.kind = Kind::kNotEligible;
    out.reason = "its queue does not admit the gang: " + gang.admission.status.reason();
    return out;
  }
  if (gang.status.isOk()) {
    out.kind = Kind::kNotNeeded;
    out.reason = "the gang fits now";
    return out;
  }
  ConsolidationOptions opts = options;
  int budget = options.maxMoves;
  bool anyMoves = false;
  for (const Pod& m : membersToPlace(snapshot, member, gang.size - gang.placed)) {
    opts.maxMoves = budget;
    consolidation_detail::Planner planner(snapshot, m, opts, /*gangMember=*/true);
    ConsolidationOutcome one = planner.run();
    if (!one.plan || (one.kind != Kind::kPlanned && one.kind != Kind::kNotNeeded)) {
      // The first member's word stands for the gang; later ones fail on what the earlier took.
      out.kind = out.plans.empty() && !one.fragmented() && one.kind != Kind::kNotNeeded
                     ? one.kind
                     : Kind::kNoPlan;
      out.reason = "member " + m.key() + ": " + one.reason;
      out.plans.clear();
      return out;
    }
    ConsolidationPlan& plan = *one.plan;
    budget -= static_cast<int>(plan.moves.size());
    anyMoves = anyMoves || !plan.moves.empty();
    opts.excludedNodes.insert(plan.node);
    for (const ConsolidationMove& mv : plan.moves) {
      opts.releasing.push_back(mv.pod);
      opts.excludedNodes.insert(mv.to);
    }
    out.plans.push_back(std::move(plan));
  }
  out.kind = anyMoves ? Kind::kPlanned : Kind::kNotNeeded;
  out.reason = anyMoves
                   ? "consolidation: " + std::to_string(out.moves()) + " moves make room for " +
                         std::to_string(out.plans.size()) + " members of " + member.gangName()
                   : "every member fits as things are";
  return out;
}

}  // namespace gpufair::policy
