// PendingPods: the unbound pods that want GPUs, in the pod cache's key order, kept in chunks that
// versions of the list share. The pod cache changes the list by a pod or two per bind, while each
// published snapshot keeps the version it was built with: a change copies the one chunk it touches
// and the list of chunk pointers (O(chunk + pods / chunk) reference counts), not a reference to
// every pending pod, and two versions can be compared chunk by chunk (ClusterSnapshot's pending
// sums). Pure: no I/O, clock or logging.
// Thread-safety: a const PendingPods may be read from any number of threads; chunks are
// immutable once shared, so versions never see each other's changes.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gpufair/policy/model.h"

namespace gpufair::policy {

using PodPtr = std::shared_ptr<const Pod>;

class PendingPods {
 public:
  using Chunk = std::vector<PodPtr>;
  using ChunkPtr = std::shared_ptr<const Chunk>;
  // A place in the list: chunk and offset in it; chunk == chunks().size() is the end.
  struct Position {
    std::size_t chunk = 0;
    std::size_t offset = 0;
  };
  // A chunk grows to twice this before it splits; it is merged into a neighbour when a removal
  // leaves it with less than a quarter of it.
  static constexpr std::size_t kChunk = 64;

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = PodPtr;
    using difference_type = std::ptrdiff_t;
    using pointer = const PodPtr*;
    using reference = const PodPtr&;
    Iterator() = default;
    Iterator(std::span<const ChunkPtr> chunks, std::size_t chunk, std::size_t offset)
        : chunks_(chunks), chunk_(chunk), offset_(offset) {}
    reference operator*() const { return (*chunks_[chunk_])[offset_]; }
    pointer operator->() const { return &**this; }
    Iterator& operator++() {
      if (++offset_ == chunks_[chunk_]->size()) {
        ++chunk_;
        offset_ = 0;
      }
      return *this;
    }
    Iterator operator++(int) {
      Iterator was = *this;
      ++*this;
      return was;
    }
    bool operator==(const Iterator& other) const {
      return chunk_ == other.chunk_ && offset_ == other.offset_;
    }

   private:
    std::span<const ChunkPtr> chunks_;
    std::size_t chunk_ = 0;
    std::size_t offset_ = 0;
  };

  PendingPods() = default;
  // The pods in the order given.
  explicit PendingPods(std::span<const PodPtr> pods);

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Iterator begin() const { return {chunks_, 0, 0}; }
  Iterator end() const { return {chunks_, chunks_.size(), 0}; }
  // The i-th pod: O(chunks). For tests and diagnostics; iterate otherwise.
  const PodPtr& operator[](std::size_t i) const;
  // The chunks, none empty; two versions share a chunk pointer where that part did not change.
  std::span<const ChunkPtr> chunks() const { return chunks_; }

  // The first position whose pod is not `before` a key (before(pod) is true for a prefix of the
  // list, as for std::lower_bound): O(log size).
  template <class Before>
  Position lowerBound(Before before) const {
    std::size_t lo = 0;
    std::size_t hi = chunks_.size();
    while (lo < hi) {  // the first chunk whose last pod is not before the key
      const std::size_t mid = lo + (hi - lo) / 2;
      if (before(*chunks_[mid]->back())) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == chunks_.size()) return {lo, 0};
    const Chunk& c = *chunks_[lo];
    std::size_t first = 0;
    std::size_t last = c.size();
    while (first < last) {
      const std::size_t mid = first + (last - first) / 2;
      if (before(*c[mid])) {
        first = mid + 1;
      } else {
        last = mid;
      }
    }
    return {lo, first};
  }
  // Where the i-th pod is (the end for i >= size()): O(chunks).
  Position positionOf(std::size_t i) const;
  // Whether the pods are in uid order (ascending, equal uids side by side), as the pod cache keeps
  // them: known from construction and kept by each edit (an edit out of order clears it for good).
  bool sortedByUid() const { return byUid_; }
  // Whether a pod with this uid satisfies match(pod): O(log size) while sortedByUid, a walk
  // otherwise.
  template <class Match>
  bool anyWithUid(std::string_view uid, Match match) const {
    if (!byUid_) {
      for (const PodPtr& p : *this) {
        if (p->uid == uid && match(*p)) return true;
      }
      return false;
    }
    const Position from = lowerBound([&](const Pod& p) { return std::string_view(p.uid) < uid; });
    for (Iterator it(chunks_, from.chunk, from.offset); it != end() && (*it)->uid == uid; ++it) {
      if (match(**it)) return true;
    }
    return false;
  }
  // The pod at `at`; null at the end.
  const Pod* at(Position at) const {
    return at.chunk < chunks_.size() ? (*chunks_[at.chunk])[at.offset].get() : nullptr;
  }

  // Changes (copy the touched chunk, never change a shared one).
  void insert(Position at, PodPtr pod);
  void replace(Position at, PodPtr pod);
  void erase(Position at);

 private:
  // The pod just before `at` (null at the start) and just after it (null at the end).
  const Pod* before(Position at) const;
  const Pod* after(Position at) const;
  // Clears byUid_ unless before <= pod <= after by uid.
  void keepOrder(const Pod* before, const Pod& pod, const Pod* after);

  std::vector<ChunkPtr> chunks_;
  std::size_t size_ = 0;
  bool byUid_ = true;
};

// Where two versions of a pending list differ: what is left of each after their longest common
// prefix and suffix of the same pod objects, found by comparing chunk pointers first and then pod
// pointers (no pod is read), so one pod added or removed costs O(chunks + chunk). Sums over
// `after` are those over `before` less `removed`'s plus `added`'s.
struct PendingChange {
  std::vector<const Pod*> removed;
  std::vector<const Pod*> added;
};
PendingChange pendingChange(const PendingPods& before, const PendingPods& after);

}  // namespace gpufair::policy
