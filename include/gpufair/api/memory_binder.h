// MemoryBinder: /bind in file mode (`serve --cluster`, tests): binding acts on memory only. It
// implements the state::Binder port; in a cluster k8s::KubeBinder does.
// Thread-safety: thread-safe (bind() runs on several io threads at once).
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/common/status.h"
#include "gpufair/policy/model.h"
#include "gpufair/state/ports.h"

namespace gpufair::api {

// Keeps a log of the last kMaxLog bindings it made.
class MemoryBinder final : public state::Binder {
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
