// The terminal views of a running service: `gpufair top` (from GET /debug/snapshot, with the
// pending pods' reasons from GET /debug/explain) and `gpufair explain` (GET /debug/explain).
// Rendering is a pure function of the documents, so it is tested without a server.
// Thread-safety: free functions.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace gpufair::app {

struct TopOptions {
  int barWidth = 20;    // cells of a node's bar (one per GPU when a node has at most this many)
  int maxPending = 20;  // pending pods listed
  std::string title;    // first line, e.g. the URL and the time
};

// One row per node (a bar of used / free GPUs, fractions shown), one per queue (allocated vs
// deserved vs fair share, limit, borrowed, pending; a queue tree indented under its top-level
// queues, children after their parent), then the pending pods with their reason
// (`reasons`: pod key -> one sentence; pods without one show "-").
std::string renderTop(const nlohmann::json& snapshot,
                      const std::map<std::string, std::string>& reasons, const TopOptions& options);

// The /debug/explain document as text: the pod, the queue's decision, the summary, and one line
// per node (at most maxNodes; the rest counted).
std::string renderExplain(const nlohmann::json& explain, int maxNodes);

// A GPU amount as /debug/snapshot has it (2 or 0.5) as text ("2", "0.5").
std::string gpuText(const nlohmann::json& amount);

}  // namespace gpufair::app
