// AsyncKeepAlive's deadlines on a kept-alive connection: one wait on the connection's timer serves
// its exchanges one after another (no cancel per exchange), so a wait armed for an earlier
// exchange must neither close the connection under a later one nor leave a later one with an
// earlier deadline unwatched, and a deadline that passes while the connection sits idle in the pool
// must leave it open. Against a server that answers each request as scripted.
#include "keepalive_async.h"

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/io_threads.h"

namespace gpufair::k8s::detail {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kNever{-1};

// Answers the requests it reads, on whatever connection they come, after the delays in `script`,
// in order (kNever: no answer; it waits for the client to close that connection).
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::chrono::milliseconds> script) {
    thread_ = std::thread([this, script = std::move(script)] {
      std::size_t next = 0;
      while (next < script.size()) {
        asio::ip::tcp::socket socket(ioc_);
        boost::system::error_code ec;
        acceptor_.accept(socket, ec);
        if (ec) return;
        std::string in;
        while (next < script.size()) {
          const std::size_t end =
              asio::read_until(socket, asio::dynamic_buffer(in), "\r\n\r\n", ec);
          if (ec) break;  // the client closed this connection
          in.erase(0, end);
          const std::chrono::milliseconds delay = script[next++];
          if (delay == kNever) {
            char byte = 0;
            socket.read_some(asio::buffer(&byte, 1), ec);  // until the client closes it
            break;
          }
          std::this_thread::sleep_for(delay);
          asio::write(socket,
                      asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")),
                      ec);
        }
      }
    });
  }
  ~ScriptedServer() { thread_.join(); }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_{ioc_, {asio::ip::make_address("127.0.0.1"), 0}};
  std::thread thread_;
};

struct Answer {
  ApiResponse response;
  std::chrono::milliseconds took;
};

Answer call(AsyncKeepAlive& channel, std::chrono::milliseconds timeout) {
  ApiRequest request;
  request.path = "/api/v1/namespaces/ml/pods/p-0";
  request.timeout = timeout;
  auto promise = std::make_shared<std::promise<ApiResponse>>();
  auto answer = promise->get_future();
  const auto start = std::chrono::steady_clock::now();
  channel.send(request, "", [promise](ApiResponse response) { promise->set_value(response); });
  ApiResponse response = answer.get();
  return {std::move(response), std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - start)};
}

TEST(AsyncKeepAliveDeadline, OneWaitServesTheExchangesOfAConnection) {
  // A at once; B after 250 ms; E at once; C never; D (on a new connection) at once.
  ScriptedServer server({0ms, 250ms, 0ms, kNever, 0ms});
  testsupport::IoThreads io(1);
  auto channel = std::make_shared<AsyncKeepAlive>(io.context(), server.url(), nullptr, false);

  // A's deadline (200 ms) passes while B (began at once, 1 s) is under way: B is answered.
  const Answer a = call(*channel, 200ms);
  EXPECT_EQ(a.response.status, 200) << a.response.describe();
  const Answer b = call(*channel, 1'000ms);
  EXPECT_EQ(b.response.status, 200) << b.response.describe();
  EXPECT_GE(b.took, 200ms);
  // B's deadline passes while its connection is idle in the pool: E finds it open.
  std::this_thread::sleep_for(1'000ms - b.took + 100ms);
  const Answer e = call(*channel, 2'000ms);
  EXPECT_EQ(e.response.status, 200) << e.response.describe();
  EXPECT_EQ(channel->connectionsOpened(), 1u);
  // C's deadline (100 ms) is earlier than the wait E left pending (2 s): C ends at its own.
  const Answer c = call(*channel, 100ms);
  EXPECT_EQ(c.response.status, 0);
  EXPECT_THAT(c.response.transportError, HasSubstr("no answer within 100 ms"));
  EXPECT_LT(c.took, 1'000ms);
  // C's connection was closed under it: D goes on a new one.
  const Answer d = call(*channel, 1'000ms);
  EXPECT_EQ(d.response.status, 200) << d.response.describe();
  EXPECT_EQ(channel->connectionsOpened(), 2u);
  channel->close();
  io.stop();
}

}  // namespace
}  // namespace gpufair::k8s::detail
