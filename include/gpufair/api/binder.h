// Binder: how /bind makes a placement real. The k8s module posts a Binding (and labels borrowed
// pods gpufair.io/over-quota=true); in file mode MemoryBinder records the binding and nothing else.
// ExtenderService calls bind() after Mirror::assume() succeeded; on failure it forgets the
// assumption. Thread-safety: implementations must be safe to call from several io threads at once.
// bind() runs on an io thread, so a slow implementation holds that thread for its duration.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"

namespace gpufair::api {

class Binder {
 public:
  virtual ~Binder() = default;
  // Binds `pod` (as the mirror assumed it: a fractional pod has its gpuIndex and the annotation
  // gpufair.io/gpu-index set) to `node`. overQuota: the pod was admitted as borrowed and must carry the label
  // gpufair.io/over-quota=true. A failure is Status::error with a reason for the scheduler.
  virtual Status bind(const policy::Pod& pod, std::string_view node, bool overQuota) = 0;
  // Whether a successful bind() is final at once: no watch event will confirm it, so the caller
  // confirms the assumption itself (and records the over-quota label in the mirror).
  virtual bool confirmsImmediately() const = 0;
};
using BinderPtr = std::unique_ptr<Binder>;

// File mode: binding acts on memory only. Keeps a log of the last kMaxLog bindings it made.
class MemoryBinder final : public Binder {
 public:
  struct Binding {
    std::string podKey;  // ns/name
    std::string uid;
    std::string node;
    bool overQuota = false;
  };

  Status bind(const policy::Pod& pod, std::string_view node, bool overQuota) override;
  bool confirmsImmediately() const override { return true; }
  std::vector<Binding> bindings() const;

  static constexpr std::size_t kMaxLog = 10000;

 private:
  mutable std::mutex mu_;
  std::deque<Binding> bindings_;  // GUARDED_BY(mu_)
};

}  // namespace gpufair::api
