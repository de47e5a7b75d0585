// KeepAliveTransport::stream's batch window (ApiRequest::batchWindow): while lines keep coming,
// the reader waits for the window before its next read, so that lines arriving meanwhile are read
// and handed over together; without a window each is handed over as it arrives. Over TLS, where
// each event comes as a record of its own and a read returns one record, what waits is read at once
// after the window, not one record per window. And the fake API server's watch writes the events
// it has at one wake-up in one chunk, as kube-apiserver flushes its watch once no further event is
// queued.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include "k8s/fake_apiserver.h"
#include "k8s/watch_wire.h"
#include "keepalive_transport.h"

namespace gpufair::k8s {
namespace {

namespace asio = boost::asio;
using detail::KeepAliveTransport;
using testsupport::httpChunk;

// Lines handed over so far, for the server to wait on.
class Delivered {
 public:
  void add(std::string_view line) {
    std::lock_guard lock(mu_);
    lines_.emplace_back(line);
    lastAt_ = std::chrono::steady_clock::now();
    changed_.notify_all();
  }
  void headersRead() {
    std::lock_guard lock(mu_);
    headersRead_ = true;
    changed_.notify_all();
  }
  void waitForHeaders() {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return headersRead_; });
  }
  // Waits (at most `limit`) until `count` lines were handed over; how many were.
  std::size_t waitFor(std::size_t count, std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, limit, [&] { return lines_.size() >= count; });
    return lines_.size();
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // When the last line was handed over.
  std::chrono::steady_clock::time_point lastAt() {
    std::lock_guard lock(mu_);
    return lastAt_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  bool headersRead_ = false;
  std::chrono::steady_clock::time_point lastAt_;
};

// Reads a watch through `transport` with this batch window, every line into `delivered`, until
// the body ends.
ApiResponse watchInto(KeepAliveTransport& transport, std::chrono::microseconds window,
                      Delivered& delivered) {
  ApiRequest request;
  request.path = "/api/v1/pods?watch=1";
  request.batchWindow = window;
  request.onResponse = [&](int) { delivered.headersRead(); };
  std::atomic<bool> cancel{false};
  return transport.stream(
      request, "",
      [&](std::string_view line) {
        delivered.add(line);
        return true;
      },
      cancel);
}

// A watch of five lines, each written on its own: 1 once the headers were read, 2 once 1 was
// handed over (two reads close together: the stream is busy), 3 once 2 was; then, after the reader
// has had `pause` to hand 3 over, 4 and 5. Returns how many lines had been handed over when 4 was
// written.
std::size_t watchOfFive(std::chrono::microseconds window, std::chrono::milliseconds pause,
                        Delivered& delivered) {
  asio::io_context ioc;
  asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  std::size_t beforeFour = 0;
  std::thread server([&] {
    asio::ip::tcp::socket socket(ioc);
    acceptor.accept(socket);
    std::string request;
    boost::system::error_code ec;
    asio::read_until(socket, asio::dynamic_buffer(request), "\r\n\r\n", ec);
    asio::write(socket, asio::buffer(testsupport::kWatchAnswerHead), ec);
    delivered.waitForHeaders();  // line 1 in a read of its own, not with the headers
    for (int i = 1; i <= 3; ++i) {
      asio::write(socket, asio::buffer(httpChunk("{\"n\":" + std::to_string(i) + "}\n")), ec);
      if (i < 3) delivered.waitFor(i, std::chrono::seconds(10));
    }
    beforeFour = delivered.waitFor(3, pause);
    asio::write(socket, asio::buffer(httpChunk("{\"n\":4}\n")), ec);
    asio::write(socket, asio::buffer(httpChunk("{\"n\":5}\n") + "0\r\n\r\n"), ec);
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  });
  KeepAliveTransport transport(
      "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()), nullptr, false);
  const ApiResponse response = watchInto(transport, window, delivered);
  server.join();
  EXPECT_TRUE(response.ok()) << response.describe();
  return beforeFour;
}

const std::vector<std::string> kFive = {R"({"n":1})", R"({"n":2})", R"({"n":3})", R"({"n":4})",
                                        R"({"n":5})"};

// With a window (3 s, far longer than the server's 300 ms pause) line 3 arrives while the reader
// waits for the window, and is handed over only with 4 and 5; without one, each line is handed
// over as it arrives.
TEST(WatchBatchWindow, LinesThatKeepComingWaitForTheWindowAndComeTogether) {
  struct Case {
    const char* name;
    std::chrono::microseconds window;
    std::chrono::milliseconds pause;
    std::size_t beforeFour;
  };
  const Case cases[] = {{"3 s window", std::chrono::seconds(3), std::chrono::milliseconds(300), 2},
                        {"no window", std::chrono::microseconds(0), std::chrono::seconds(10), 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Delivered delivered;
    EXPECT_EQ(watchOfFive(c.window, c.pause, delivered), c.beforeFour);
    EXPECT_EQ(delivered.lines(), kFive);
  }
}

// A TLS watch: lines 1 and 2 start the batching; then `burst` more lines, each written (and so
// encrypted) as a record of its own while the reader waits for its window. Returns how long after
// the burst was written the last line was handed over.
std::chrono::milliseconds burstOverTls(std::chrono::microseconds window, int burst,
                                       Delivered& delivered) {
  namespace ssl = asio::ssl;
  asio::io_context ioc;
  asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  const std::unique_ptr<ssl::context> serverContext = testsupport::testServerTlsContext();
  std::chrono::steady_clock::time_point burstWritten;
  std::thread server([&] {
    ssl::stream<asio::ip::tcp::socket> tls(ioc, *serverContext);
    boost::system::error_code ec;
    testsupport::acceptTlsRequest(acceptor, tls, ec);
    asio::write(tls, asio::buffer(testsupport::kWatchAnswerHead), ec);
    delivered.waitForHeaders();
    for (int i = 1; i <= 2; ++i) {
      asio::write(tls, asio::buffer(httpChunk("{\"n\":" + std::to_string(i) + "}\n")), ec);
      delivered.waitFor(i, std::chrono::seconds(10));
    }
    for (int i = 3; i < 3 + burst; ++i) {
      asio::write(tls, asio::buffer(httpChunk("{\"n\":" + std::to_string(i) + "}\n")), ec);
    }
    burstWritten = std::chrono::steady_clock::now();
    delivered.waitFor(2 + burst, std::chrono::seconds(60));
    asio::write(tls, asio::buffer(std::string("0\r\n\r\n")), ec);
    tls.shutdown(ec);
  });
  const auto transport = testsupport::testTlsTransport(acceptor.local_endpoint().port());
  const ApiResponse response = watchInto(*transport, window, delivered);
  server.join();
  EXPECT_TRUE(response.ok()) << response.describe();
  return std::chrono::duration_cast<std::chrono::milliseconds>(delivered.lastAt() - burstWritten);
}

// 30 events of a burst come within about one window (500 ms) of being written, all of them: a
// reader that took one record per window needed 15 s. The bound leaves room for a slow machine.
TEST(WatchBatchWindow, TlsRecordsThatWaitAreReadAtOnceAfterTheWindow) {
  Delivered delivered;
  const auto late = burstOverTls(std::chrono::milliseconds(500), 30, delivered);
  const auto lines = delivered.lines();
  ASSERT_EQ(lines.size(), 32u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i], "{\"n\":" + std::to_string(i + 1) + "}");
  }
  EXPECT_LT(late, std::chrono::milliseconds(4'000));
}

// Events already there when a watch starts (it resumes from an older resourceVersion) leave in one
// chunk: one write, not one per event.
TEST(FakeWatchWrites, TheEventsThereAtOneWakeUpLeaveInOneChunk) {
  fake::FakeApiServer api;
  api.start();
  api.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "first"));
  const std::uint64_t from = api.resourceVersion();
  for (int i = 0; i < 3; ++i) {
    api.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-" + std::to_string(i)));
  }
  asio::io_context ioc;
  asio::ip::tcp::socket socket(ioc);
  asio::ip::tcp::resolver resolver(ioc);
  asio::connect(socket, resolver.resolve("127.0.0.1", std::to_string(api.port())));
  const std::string get =
      "GET /api/v1/namespaces/ml/pods?watch=1&resourceVersion=" + std::to_string(from) +
      " HTTP/1.1\r\nHost: fake\r\n\r\n";
  asio::write(socket, asio::buffer(get));
  std::string in;
  const std::size_t headerEnd = asio::read_until(socket, asio::dynamic_buffer(in), "\r\n\r\n");
  ASSERT_NE(in.find("200 OK"), std::string::npos) << in;
  in.erase(0, headerEnd);
  const std::size_t sizeEnd = asio::read_until(socket, asio::dynamic_buffer(in), "\r\n");
  const std::size_t size = std::stoul(in.substr(0, sizeEnd - 2), nullptr, 16);
  in.erase(0, sizeEnd);
  if (in.size() < size) {
    asio::read(socket, asio::dynamic_buffer(in), asio::transfer_exactly(size - in.size()));
  }
  const std::string first = in.substr(0, size);
  std::size_t events = 0;
  for (std::size_t at = first.find("\"type\":\"ADDED\""); at != std::string::npos;
       at = first.find("\"type\":\"ADDED\"", at + 1)) {
    ++events;
  }
  EXPECT_EQ(events, 3u) << first;
  EXPECT_EQ(first.back(), '\n');
}

}  // namespace
}  // namespace gpufair::k8s
