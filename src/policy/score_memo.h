// Scoring once per node shape. The fgd family's score of a node (fragmentationDelta, and what fgd,
// fgdplus and fgdm add to it) reads only a few facts about the node: its GPU model, the use of each
// GPU, its allocatable and used GPUs, and the CPU and memory the fragmentation measure sees. Nodes
// that agree on all of them score alike, and in a large cluster most candidates fall into a few
// such shapes (idle, full, k of 8 GPUs used), so scoreDistinct computes one score per shape and
// copies it to the nodes of that shape: the same values, bit for bit, as scoring each node.
// Thread-safety: pure functions; scoreDistinct keeps its table on the stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpufair/policy/snapshot.h"

namespace gpufair::policy::detail {

// A hash of what the fgd scorers read of `node` (see above), and whether two nodes agree on all of
// it. Defined beside the fragmentation measure (fragmentation.cc), which decides what it reads.
// readsCpuFree: the scorer also reads the node's free CPU (fgdm's CPU-stranding ties) whether or
// not the measure does, so nodes that differ in it are told apart.
std::uint64_t scoreInputsHash(const NodeState& node, const FitOptions& options,
                              bool readsCpuFree = false);
bool sameScoreInputs(const NodeState& a, const NodeState& b, const FitOptions& options,
                     bool readsCpuFree = false);

// out[i] = scoreOne(*nodes[i]) for every i, calling scoreOne once per distinct node shape.
// scoreOne must read of a node only what sameScoreInputs(..., readsCpuFree) compares.
template <class ScoreOne>
void scoreDistinct(std::span<const NodeState* const> nodes, const FitOptions& options,
                   std::span<double> out, ScoreOne&& scoreOne, bool readsCpuFree = false) {
  constexpr std::size_t kFewNodes = 4;
  if (nodes.size() <= kFewNodes) {
    for (std::size_t i = 0; i < nodes.size(); ++i) out[i] = scoreOne(*nodes[i]);
    return;
  }
  // Open addressing: the hash and the index + 1 of the shape's first node (0: empty slot).
  struct Slot {
    std::uint64_t hash = 0;
    std::size_t first1 = 0;
  };
  std::vector<Slot> slots(64);
  std::size_t shapes = 0;
  auto place = [&](std::vector<Slot>& table, Slot slot) {
    const std::size_t mask = table.size() - 1;
    std::size_t at = slot.hash & mask;
    while (table[at].first1 != 0) at = (at + 1) & mask;
    table[at] = slot;
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeState& node = *nodes[i];
    const std::uint64_t hash = scoreInputsHash(node, options, readsCpuFree);
    const std::size_t mask = slots.size() - 1;
    std::size_t at = hash & mask;
    std::size_t same = 0;
    for (; slots[at].first1 != 0; at = (at + 1) & mask) {
      const Slot& slot = slots[at];
      if (slot.hash == hash &&
          sameScoreInputs(*nodes[slot.first1 - 1], node, options, readsCpuFree)) {
        same = slot.first1;
        break;
      }
    }
    if (same != 0) {
      out[i] = out[same - 1];
      continue;
    }
    out[i] = scoreOne(node);
    slots[at] = {hash, i + 1};
    if (++shapes * 2 > slots.size()) {
      std::vector<Slot> bigger(slots.size() * 2);
      for (const Slot& slot : slots) {
        if (slot.first1 != 0) place(bigger, slot);
      }
      slots = std::move(bigger);
    }
  }
}

}  // namespace gpufair::policy::detail
