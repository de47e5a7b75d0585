#include "gpufair/api/memory_binder.h"

namespace gpufair::api {

Status MemoryBinder::bind(const policy::Pod& pod, std::string_view node, bool overQuota) {
  std::lock_guard lock(mu_);
  bindings_.push_back({pod.key(), pod.uid, std::string(node), overQuota});
  if (bindings_.size() > kMaxLog) bindings_.pop_front();
  return Status::ok();
}

std::vector<MemoryBinder::Binding> MemoryBinder::bindings() const {
  std::lock_guard lock(mu_);
  return {bindings_.begin(), bindings_.end()};
}

}  // namespace gpufair::api
