// What the tests of KubeBinder::bindOn share: io threads running an io_context as the webhook
// server's do, and a bind's outcome with the thread it came on.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/common/status.h"
#include "gpufair/k8s/binder.h"
#include "gpufair/state/ports.h"

namespace gpufair::k8s::testsupport {

struct Outcome {
  Status status;
  std::thread::id thread;
};

inline std::pair<state::BindDone, std::future<Outcome>> outcome() {
  auto promise = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> future = promise->get_future();
  return {[promise](Status status) {
            promise->set_value({std::move(status), std::this_thread::get_id()});
          },
          std::move(future)};
}

// bindAsync of `count` pods started at once, pod i being pod(i) bound to node(i) (not over quota);
// their outcomes in that order.
template <typename PodOf, typename NodeOf>
std::vector<std::future<Outcome>> bindAll(KubeBinder& binder, int count, PodOf pod, NodeOf node) {
  std::vector<std::future<Outcome>> results;
  for (int i = 0; i < count; ++i) {
    auto [done, result] = outcome();
    binder.bindAsync(pod(i), node(i), false, std::move(done));
    results.push_back(std::move(result));
  }
  return results;
}

// After KubeBinder::stop() with the io threads stopped first (as the server's stop() does): every
// outcome was there when stop() returned, a failure saying so.
inline void expectAllFailedByStop(std::vector<std::future<Outcome>>& results) {
  for (auto& result : results) {
    ASSERT_EQ(result.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    const Outcome got = result.get();
    EXPECT_EQ(got.status.code(), Code::kError);
    EXPECT_THAT(got.status.reason(), ::testing::HasSubstr("stopping"));
  }
}

// An io_context run by `threads` threads until stop() (as the webhook server's).
class IoThreads {
 public:
  explicit IoThreads(int threads)
      : context_(threads), guard_(boost::asio::make_work_guard(context_)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { context_.run(); });
    for (const auto& thread : threads_) ids_.insert(thread.get_id());
  }
  ~IoThreads() { stop(); }
  void stop() {
    guard_.reset();
    context_.stop();
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  boost::asio::io_context& context() { return context_; }
  bool runs(std::thread::id id) const { return ids_.count(id) != 0; }

 private:
  boost::asio::io_context context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
  std::set<std::thread::id> ids_;
};

}  // namespace gpufair::k8s::testsupport
