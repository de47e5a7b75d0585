// /filter's fast path over a large candidate list: where each candidate name is in the snapshot,
// remembered from one request to the next, and filter and ranking that use those positions
// instead of looking every name up (twice). The answers are those of filter and rankCandidates
// (filter.h). Pure: no I/O, clock or logging.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/filter.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

// Where each candidate name is in a snapshot's nodes(), remembered from one request to the next.
// kube-scheduler sends nearly the same NodeNames pod after pod (its feasible nodes, in its own
// order), and comparing a name with the one at the same place in the previous list costs much less
// than a lookup in the snapshot's name index. Names that differ (nodes dropped, added or moved)
// are looked up. The positions are the index's answers: reused only while the snapshot shares its
// node index with the one they were found in (same node names), looked up afresh otherwise.
// Not thread-safe: one instance per thread (or per caller).
class CandidatePositions {
 public:
  // positions[i] is snapshot->nodeIndex(candidates[i]) (-1: no such node); valid until the next
  // call. Keeps `snapshot` (and so its node index) until the next call.
  std::span<const std::ptrdiff_t> resolve(const SnapshotPtr& snapshot,
                                          std::span<const std::string_view> candidates);
  // How many names the last resolve looked up in the index (the rest matched the list before).
  std::size_t lookedUp() const { return lookedUp_; }
  // Whether the last resolve knew the list for the previous one by comparing the memory the
  // names lie in at once (see resolve), without comparing name by name.
  bool sameStretch() const { return sameStretch_; }

 private:
  SnapshotPtr indexed_;                   // the positions are into this snapshot's node index
  std::string names_;                     // the previous list's names, back to back
  std::vector<std::size_t> ends_;         // where each of them ends in names_
  std::vector<std::ptrdiff_t> previous_;  // and its position
  std::vector<std::ptrdiff_t> positions_;
  std::size_t lookedUp_ = 0;
  // When the previous list's names lay in one buffer a fixed gap_ bytes apart (a parsed request
  // body's strings do): those bytes, from the first name's start to the last name's end.
  std::string stretch_;
  std::size_t gap_ = 0;
  bool sameStretch_ = false;
};

// filter and filterPod (filter.h) with the candidates' positions in snapshot.nodes() already known
// (CandidatePositions::resolve); the same answers.
FilterResult filter(const ClusterSnapshot& snapshot, const Pod& pod,
                    std::span<const std::string_view> candidates,
                    std::span<const std::ptrdiff_t> positions);
FilterResult filterPod(const ClusterSnapshot& snapshot, const Pod& pod,
                       std::span<const std::string_view> candidates,
                       std::span<const std::ptrdiff_t> positions);

// rankCandidates(snapshot, pod, feasible, scorer, limit) for `feasible`, the answer of
// filter(snapshot, pod, candidates, positions) (views of the candidates' names, in their order):
// the same order, found from the positions without looking the names up and checking fit again.
// Falls back to rankCandidates where the answer came from the gang rules, or for names that are
// not views of `candidates`.
std::vector<std::size_t> rankFeasible(const ClusterSnapshot& snapshot, const Pod& pod,
                                      std::span<const std::string_view> candidates,
                                      std::span<const std::ptrdiff_t> positions,
                                      std::span<const std::string_view> feasible,
                                      const Scorer& scorer,
                                      std::size_t limit = static_cast<std::size_t>(-1));

// What /filter answers in best and top-N modes: filter(snapshot, pod, candidates, positions) with
// its feasible names narrowed, when more than `keep` fit, to the first `keep` of rankFeasible's
// order (kept in the candidates' order); keep == 0 keeps them all. The same answer (feasible,
// failed, unresolvable, admission), in one pass from the positions to the pick for a pod not in a
// gang: no feasible names list matched back to positions.
FilterResult filterRanked(const ClusterSnapshot& snapshot, const Pod& pod,
                          std::span<const std::string_view> candidates,
                          std::span<const std::ptrdiff_t> positions, const Scorer& scorer,
                          std::size_t keep);

}  // namespace gpufair::policy
