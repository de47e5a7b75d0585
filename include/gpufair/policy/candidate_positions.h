// /filter's fast path over a large candidate list: where each candidate name is in the snapshot,
// remembered from one request to the next, and filter and ranking that use those positions
// instead of looking every name up (twice). The answers are those of filter and rankCandidates
// (filter.h). Pure: no I/O, clock or logging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/policy/filter.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/policy/snapshot.h"

namespace gpufair::policy {

// What a caller knows of a candidate list without reading it (api's NodeNamesMemo knows it of each
// NodeNames array it reads against the one before).
struct CandidateList {
  // 0: nothing. Otherwise the list's id: two lists given the same id have the same names.
  std::uint64_t id = 0;
  // 0, or the id of an earlier list whose first `head` names are this list's first `head`, and
  // whose last `tail` names are this list's last `tail` (head + tail at most either list's size).
  std::uint64_t from = 0;
  std::size_t head = 0;
  std::size_t tail = 0;
};

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
  // `list`: what the caller knows of the names (CandidateList). While the snapshot shares its node
  // index with the last call's: a list with the last call's id takes its positions without
  // reading a name; a list `from` the last call's id takes its head and tail positions from it
  // and looks up only the names between.
  std::span<const std::ptrdiff_t> resolve(const SnapshotPtr& snapshot,
                                          std::span<const std::string_view> candidates,
                                          const CandidateList& list = {});
  // How many names the last resolve looked up in the index (the rest matched the list before).
  std::size_t lookedUp() const { return lookedUp_; }
  // Whether the last resolve knew the list for the previous one by comparing the memory the
  // names lie in at once (see resolve), without comparing name by name.
  bool sameStretch() const { return sameStretch_; }
  // Whether the last resolve knew the list by its id (CandidateList::id), or its head and tail
  // from the list before (CandidateList::from).
  bool sameId() const { return sameId_; }
  bool fromId() const { return fromId_; }

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
  std::uint64_t listId_ = 0;  // the last call's CandidateList::id
  bool sameId_ = false;
  bool fromId_ = false;
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
// order (kept in the candidates' order); keep == 0 keeps them all and is filter()'s answer. With
// keep > 0 and some candidate fitting, failed and unresolvable are empty: kube-scheduler reads
// reasons only when no node is left (FitError), and a reason for each node that does not fit made
// the work and the answer grow with the cluster (a fractional pod, whose gpu-milli kube-scheduler
// ignores, is sent every node); with none fitting, every candidate has its reason, as filter()'s.
// In one pass from the positions to the pick for a pod not in a gang: no feasible names list
// matched back to positions.
FilterResult filterRanked(const ClusterSnapshot& snapshot, const Pod& pod,
                          std::span<const std::string_view> candidates,
                          std::span<const std::ptrdiff_t> positions, const Scorer& scorer,
                          std::size_t keep);

// prioritize (filter.h) with the candidates' positions known: the same scores, with fit checked
// and the scorer asked once per node shape where the scorer allows (all mode's /prioritize scores
// every feasible node: looking each name up, checking its fit and scoring it was most of its cost).
std::vector<NodeScore> prioritize(const ClusterSnapshot& snapshot, const Pod& pod,
                                  std::span<const std::string_view> candidates,
                                  std::span<const std::ptrdiff_t> positions, const Scorer& scorer);

}  // namespace gpufair::policy
