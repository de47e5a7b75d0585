// SessionHub: the open sessions of one ExtenderServer (see http_session.h).
#include "http_session.h"

namespace gpufair::api::detail {

void SessionHub::add(const std::shared_ptr<HttpSession>& session) {
  std::lock_guard lock(mu_);
  sessions_.emplace(session.get(), session);
}

void SessionHub::remove(HttpSession* session) {
  std::lock_guard lock(mu_);
  sessions_.erase(session);
  if (sessions_.empty()) emptied_.notify_all();
}

std::vector<std::shared_ptr<HttpSession>> SessionHub::lockAll() {
  std::vector<std::shared_ptr<HttpSession>> open;
  std::lock_guard lock(mu_);
  open.reserve(sessions_.size());
  for (auto& [raw, weak] : sessions_) {
    if (auto session = weak.lock()) open.push_back(std::move(session));
  }
  return open;
}

// Neither calls into a session under mu_: the reference taken from a weak_ptr may turn out to be
// the last one (the session's io thread finished with it meanwhile), and the destructor it runs
// calls remove(), which takes mu_ again.
std::size_t SessionHub::stopAll() {
  auto open = lockAll();
  for (auto& session : open) session->stop();
  return open.size();
}

void SessionHub::closeAll() {
  for (auto& session : lockAll()) session->closeSocket();
}

bool SessionHub::waitEmpty(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return emptied_.wait_for(lock, timeout, [this] { return sessions_.empty(); });
}

std::size_t SessionHub::open() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace gpufair::api::detail
