// Mirror sinks: what the node and pod reflectors feed. Each decodes the API objects (codec) and
// applies them to the Mirror, which keeps kube-scheduler's accounting: a pod holds its GPUs on
// spec.nodeName whatever its phase (terminating included) until it is Succeeded, Failed or deleted;
// nodes being deleted or unschedulable take no new pods.
//
// An object that does not decode is logged with its name, counted and skipped; it never stops the
// stream. A deleted object is removed by name (nodes) or uid (pods) even if the rest of it does not
// decode.
// Thread-safety: one reflector thread calls a sink; the counters may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "gpufair/k8s/reflector.h"
#include "gpufair/k8s/requeuer.h"
#include "gpufair/state/mirror.h"

namespace gpufair::k8s {

// metadata.{namespace,name,uid} of an API object in JSON, as far as they can be read.
struct ObjectMeta {
  std::string ns;
  std::string name;
  std::string uid;
  std::string describe() const;  // "ns/name", "name" or "(unnamed object)"
};
ObjectMeta peekMeta(std::string_view json);

class NodeSink final : public ReflectorSink {
 public:
  explicit NodeSink(state::Mirror& mirror);

  void replace(const std::vector<std::string>& items) override;
  // A list is decoded page by page; only the decoded nodes are kept until endList().
  void beginList() override;
  void listPage(std::vector<std::string>& items) override;
  void endList() override;
  void added(std::string_view object) override;
  void modified(std::string_view object) override;
  void deleted(std::string_view object) override;
  // Decodes the reflector's parsed object (no second parse).
  void changed(Change change, std::string_view object, simdjson::dom::element parsed) override;

  std::uint64_t decodeErrors() const { return decodeErrors_.load(); }

 private:
  void upsert(Result<policy::Node> node, std::string_view object);

  state::Mirror& mirror_;
  std::vector<policy::Node> listed_;  // the list being received
  std::atomic<std::uint64_t> decodeErrors_{0};
};

struct PodSinkOptions {
  // Pods that request no GPUs neither hold nor want any: keep them out of the mirror (most pods of
  // a mixed cluster). A pod seen without GPUs is removed from the mirror if it was there.
  bool gpuPodsOnly = true;
  // Set: kept up to date with the GPU pods whose PodScheduled condition is False (the requeuer's).
  std::shared_ptr<SchedulingFailures> failures;
};

class PodSink final : public ReflectorSink {
 public:
  explicit PodSink(state::Mirror& mirror, PodSinkOptions options = {});

  void replace(const std::vector<std::string>& items) override;
  // A list is decoded page by page; only the decoded GPU pods are kept until endList().
  void beginList() override;
  void listPage(std::vector<std::string>& items) override;
  void endList() override;
  void added(std::string_view object) override;
  void modified(std::string_view object) override;
  void deleted(std::string_view object) override;
  // Decodes the reflector's parsed object (no second parse).
  void changed(Change change, std::string_view object, simdjson::dom::element parsed) override;

  std::uint64_t decodeErrors() const { return decodeErrors_.load(); }

 private:
  // `object`: the pod's text, for the error message; failed: PodScheduled is False.
  void upsert(Result<policy::Pod> pod, std::string_view object, bool failed);
  Result<policy::Pod> decode(std::string_view object, bool& failed) const;

  state::Mirror& mirror_;
  PodSinkOptions options_;
  std::vector<policy::Pod> listed_;  // the list being received
  std::size_t listedItems_ = 0;
  std::unordered_set<std::string> listedFailed_;  // of listed_, with PodScheduled False
  std::atomic<std::uint64_t> decodeErrors_{0};
};

}  // namespace gpufair::k8s
