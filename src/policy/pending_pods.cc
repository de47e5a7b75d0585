#include "gpufair/policy/pending_pods.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace gpufair::policy {

PendingPods::PendingPods(std::span<const PodPtr> pods)
    : size_(pods.size()),
      byUid_(std::is_sorted(pods.begin(), pods.end(),
                            [](const PodPtr& a, const PodPtr& b) { return a->uid < b->uid; })) {
  chunks_.reserve((pods.size() + kChunk - 1) / kChunk);
  for (std::size_t begin = 0; begin < pods.size(); begin += kChunk) {
    const std::size_t end = std::min(pods.size(), begin + kChunk);
    chunks_.push_back(
        std::make_shared<const Chunk>(pods.begin() + static_cast<std::ptrdiff_t>(begin),
                                      pods.begin() + static_cast<std::ptrdiff_t>(end)));
  }
}

const PodPtr& PendingPods::operator[](std::size_t i) const {
  for (const ChunkPtr& c : chunks_) {
    if (i < c->size()) return (*c)[i];
    i -= c->size();
  }
  return chunks_.back()->back();  // i >= size(): out of range, as for a vector
}

PendingPods::Position PendingPods::positionOf(std::size_t i) const {
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    if (i < chunks_[c]->size()) return {c, i};
    i -= chunks_[c]->size();
  }
  return {chunks_.size(), 0};
}

const Pod* PendingPods::before(Position at) const {
  if (at.chunk < chunks_.size() && at.offset > 0) return (*chunks_[at.chunk])[at.offset - 1].get();
  return at.chunk > 0 ? chunks_[at.chunk - 1]->back().get() : nullptr;
}

const Pod* PendingPods::after(Position at) const {
  if (at.chunk >= chunks_.size()) return nullptr;
  if (at.offset + 1 < chunks_[at.chunk]->size()) return (*chunks_[at.chunk])[at.offset + 1].get();
  return at.chunk + 1 < chunks_.size() ? chunks_[at.chunk + 1]->front().get() : nullptr;
}

void PendingPods::keepOrder(const Pod* before, const Pod& pod, const Pod* after) {
  if ((before != nullptr && pod.uid < before->uid) || (after != nullptr && after->uid < pod.uid)) {
    byUid_ = false;
  }
}

void PendingPods::insert(Position at, PodPtr pod) {
  if (byUid_) keepOrder(before(at), *pod, this->at(at));
  if (chunks_.empty()) {
    chunks_.push_back(std::make_shared<const Chunk>(Chunk{std::move(pod)}));
    size_ = 1;
    return;
  }
  if (at.chunk == chunks_.size()) at = {chunks_.size() - 1, chunks_.back()->size()};
  Chunk next;
  const Chunk& was = *chunks_[at.chunk];
  next.reserve(was.size() + 1);
  next.insert(next.end(), was.begin(), was.begin() + static_cast<std::ptrdiff_t>(at.offset));
  next.push_back(std::move(pod));
  next.insert(next.end(), was.begin() + static_cast<std::ptrdiff_t>(at.offset), was.end());
  ++size_;
  const auto where = chunks_.begin() + static_cast<std::ptrdiff_t>(at.chunk);
  if (next.size() <= 2 * kChunk) {
    *where = std::make_shared<const Chunk>(std::move(next));
    return;
  }
  const auto half = next.begin() + static_cast<std::ptrdiff_t>(next.size() / 2);
  auto second = std::make_shared<const Chunk>(std::make_move_iterator(half),
                                              std::make_move_iterator(next.end()));
  next.erase(half, next.end());
  *where = std::make_shared<const Chunk>(std::move(next));
  chunks_.insert(where + 1, std::move(second));
}

void PendingPods::replace(Position at, PodPtr pod) {
  if (byUid_) keepOrder(before(at), *pod, after(at));
  auto next = std::make_shared<Chunk>(*chunks_[at.chunk]);
  (*next)[at.offset] = std::move(pod);
  chunks_[at.chunk] = std::move(next);
}

void PendingPods::erase(Position at) {
  const Chunk& was = *chunks_[at.chunk];
  --size_;
  const auto where = chunks_.begin() + static_cast<std::ptrdiff_t>(at.chunk);
  if (was.size() == 1) {
    chunks_.erase(where);
    return;
  }
  Chunk next;
  next.reserve(was.size() - 1);
  next.insert(next.end(), was.begin(), was.begin() + static_cast<std::ptrdiff_t>(at.offset));
  next.insert(next.end(), was.begin() + static_cast<std::ptrdiff_t>(at.offset) + 1, was.end());
  // A chunk left small joins a neighbour that has room, so chunks stay O(size / kChunk).
  if (next.size() < kChunk / 4) {
    if (at.chunk + 1 < chunks_.size() &&
        chunks_[at.chunk + 1]->size() + next.size() <= 2 * kChunk) {
      const Chunk& after = *chunks_[at.chunk + 1];
      next.insert(next.end(), after.begin(), after.end());
      *where = std::make_shared<const Chunk>(std::move(next));
      chunks_.erase(where + 1);
      return;
    }
    if (at.chunk > 0 && chunks_[at.chunk - 1]->size() + next.size() <= 2 * kChunk) {
      Chunk joined(*chunks_[at.chunk - 1]);
      joined.insert(joined.end(), next.begin(), next.end());
      *(where - 1) = std::make_shared<const Chunk>(std::move(joined));
      chunks_.erase(where);
      return;
    }
  }
  *where = std::make_shared<const Chunk>(std::move(next));
}

namespace {

// The lengths of the longest common prefix and, after it, the longest common suffix of two
// sequences, element by element (pointers: no pod is read).
template <class Seq>
std::pair<std::size_t, std::size_t> commonEnds(const Seq& b, const Seq& a) {
  std::size_t prefix = 0;
  while (prefix < b.size() && prefix < a.size() && b[prefix] == a[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < b.size() - prefix && suffix < a.size() - prefix &&
         b[b.size() - 1 - suffix] == a[a.size() - 1 - suffix]) {
    ++suffix;
  }
  return {prefix, suffix};
}

// Drops the first `head` and the last `tail` elements.
void trim(std::vector<const Pod*>& pods, std::size_t head, std::size_t tail) {
  pods.erase(pods.end() - static_cast<std::ptrdiff_t>(tail), pods.end());
  pods.erase(pods.begin(), pods.begin() + static_cast<std::ptrdiff_t>(head));
}

}  // namespace

PendingChange pendingChange(const PendingPods& before, const PendingPods& after) {
  const auto b = before.chunks();
  const auto a = after.chunks();
  const auto [prefix, suffix] = commonEnds(b, a);
  PendingChange change;
  // Sized once: pushed one by one, each list grew through ~8 allocations for a changed chunk.
  std::size_t removed = 0;
  std::size_t added = 0;
  for (std::size_t i = prefix; i < b.size() - suffix; ++i) removed += b[i]->size();
  for (std::size_t i = prefix; i < a.size() - suffix; ++i) added += a[i]->size();
  change.removed.reserve(removed);
  change.added.reserve(added);
  for (std::size_t i = prefix; i < b.size() - suffix; ++i) {
    for (const PodPtr& p : *b[i]) change.removed.push_back(p.get());
  }
  for (std::size_t i = prefix; i < a.size() - suffix; ++i) {
    for (const PodPtr& p : *a[i]) change.added.push_back(p.get());
  }
  // Within the chunks that differ, the same pods before and after the change cancel out.
  const auto [head, tail] = commonEnds(change.removed, change.added);
  trim(change.removed, head, tail);
  trim(change.added, head, tail);
  return change;
}

}  // namespace gpufair::policy
