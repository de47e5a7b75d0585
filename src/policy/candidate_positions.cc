// CandidatePositions (candidate_positions.h): where each /filter candidate is in the snapshot,
// remembered from one request to the next.
#include "gpufair/policy/candidate_positions.h"

#include <algorithm>
#include <cstdint>

namespace gpufair::policy {

namespace {

// The names as one stretch of memory: each begins `gap` bytes after the end of the one before,
// the same gap throughout and at most kMaxGap (a parser's string buffer puts a length and a
// terminator between strings; two separate allocations are never that close, so the stretch is
// one object's memory). Empty when they are not laid out so.
std::string_view stretchOf(std::span<const std::string_view> names, std::size_t& gap) {
  constexpr std::uintptr_t kMaxGap = 8;
  if (names.size() < 2) return {};
  auto address = [](const char* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const std::uintptr_t firstEnd = address(names[0].data()) + names[0].size();
  if (address(names[1].data()) < firstEnd || address(names[1].data()) - firstEnd > kMaxGap) {
    return {};
  }
  const std::uintptr_t step = address(names[1].data()) - firstEnd;
  for (std::size_t i = 1; i < names.size(); ++i) {
    if (address(names[i].data()) != address(names[i - 1].data()) + names[i - 1].size() + step) {
      return {};
    }
  }
  gap = static_cast<std::size_t>(step);
  const std::string_view& last = names.back();
  return {names[0].data(),
          static_cast<std::size_t>(address(last.data()) + last.size() - address(names[0].data()))};
}

}  // namespace

std::span<const std::ptrdiff_t> CandidatePositions::resolve(
    const SnapshotPtr& snapshot, std::span<const std::string_view> candidates,
    const CandidateList& list) {
  const bool sameIndex = indexed_ != nullptr && snapshot->sharesNodeIndexWith(*indexed_);
  if (!sameIndex) {
    names_.clear();
    ends_.clear();
    previous_.clear();
    stretch_.clear();
  }
  indexed_ = snapshot;
  // The caller's word that these are the last call's names: its positions, nothing compared.
  const std::uint64_t lastId = listId_;
  listId_ = list.id;
  sameStretch_ = false;
  sameId_ =
      sameIndex && list.id != 0 && list.id == lastId && positions_.size() == candidates.size();
  fromId_ = !sameId_ && sameIndex && list.id != 0 && list.from != 0 && list.from == lastId &&
            list.head + list.tail <= candidates.size() &&
            list.head + list.tail <= positions_.size();
  if (sameId_) {
    lookedUp_ = 0;
    return positions_;
  }
  if (fromId_) {
    // Or that they begin and end as the last call's: only the names between are looked up. What
    // is remembered name by name is not this list's now: forgotten (a call without an id looks
    // every name up once).
    previous_.assign(positions_.begin(), positions_.end());
    positions_.resize(candidates.size());
    std::copy(previous_.end() - static_cast<std::ptrdiff_t>(list.tail), previous_.end(),
              positions_.end() - static_cast<std::ptrdiff_t>(list.tail));
    const std::size_t middleEnd = candidates.size() - list.tail;
    for (std::size_t i = list.head; i < middleEnd; ++i) {
      positions_[i] = snapshot->nodeIndex(candidates[i]);
    }
    lookedUp_ = middleEnd - list.head;
    names_.clear();
    ends_.clear();
    previous_.clear();
    stretch_.clear();
    return positions_;
  }
  positions_.resize(candidates.size());
  lookedUp_ = 0;
  auto previousName = [&](std::size_t j) {
    const std::size_t begin = j == 0 ? 0 : ends_[j - 1];
    return std::string_view(names_).substr(begin, ends_[j] - begin);
  };
  // The usual request: the very list of the last call. When both lie in memory as one stretch
  // with the same gap, the same name lengths and the same bytes throughout mean the same names:
  // one comparison of the stretch instead of one per name.
  std::size_t gap = 0;
  const std::string_view stretch = stretchOf(candidates, gap);
  sameStretch_ = false;
  if (!stretch.empty() && !stretch_.empty() && gap == gap_ && candidates.size() == ends_.size() &&
      stretch.size() == stretch_.size()) {
    bool sameLengths = true;
    for (std::size_t i = 0; i < candidates.size() && sameLengths; ++i) {
      sameLengths = candidates[i].size() == ends_[i] - (i == 0 ? 0 : ends_[i - 1]);
    }
    if (sameLengths && stretch == std::string_view(stretch_)) {
      sameStretch_ = true;
      return positions_;  // what the last call found, for the same names
    }
  }
  stretch_.assign(stretch);
  gap_ = gap;
  // Walk both lists: a name equal to the next one of the previous list, or to one a little later
  // in it (nodes dropped from the list between two requests), takes its position and the walk
  // goes on after it; any other name is looked up.
  constexpr std::size_t kLookAhead = 8;
  std::size_t j = 0;
  bool same = candidates.size() == ends_.size();  // so far, name i was the previous list's i
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string_view name = candidates[i];
    std::size_t k = j;
    while (k < ends_.size() && k <= j + kLookAhead && previousName(k) != name) ++k;
    if (k < ends_.size() && k <= j + kLookAhead) {
      positions_[i] = previous_[k];
      same = same && k == i;
      j = k + 1;
      continue;
    }
    positions_[i] = snapshot->nodeIndex(name);
    ++lookedUp_;
    same = false;
  }
  // The very list of the last call: what is remembered is already this list.
  if (same) return positions_;
  names_.clear();
  ends_.clear();
  for (std::string_view name : candidates) {
    names_.append(name);
    ends_.push_back(names_.size());
  }
  previous_.assign(positions_.begin(), positions_.end());
  return positions_;
}

}  // namespace gpufair::policy
