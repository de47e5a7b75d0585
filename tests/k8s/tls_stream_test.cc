// KeepAliveTransport::stream over TLS reads the watch's body with synchronous non-blocking reads
// (keepalive_stream.cc, readTls): whatever way the server's bytes are cut up on the wire, a TLS
// record split across TCP segments, a pause in the middle of one, several records in one segment,
// an event larger than a record, the lines come out whole and in order, and the stream's end is
// seen. Bytes from the server reach the client through a relay that trickles them.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/fake_apiserver.h"
#include "k8s/watch_wire.h"
#include "keepalive_transport.h"

namespace gpufair::k8s {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using ::testing::HasSubstr;
using testsupport::httpChunk;

// A TLS server answering one watch with `writes`, each written (and so encrypted) on its own, then
// closing with a TLS close_notify when `closeNotify`, else by closing the socket.
class TlsWatchServer {
 public:
  TlsWatchServer(std::vector<std::string> writes, bool closeNotify) {
    thread_ = std::thread([this, writes = std::move(writes), closeNotify] {
      ssl::stream<asio::ip::tcp::socket> tls(ioc_, *context_);
      boost::system::error_code ec;
      testsupport::acceptTlsRequest(acceptor_, tls, ec);
      for (const auto& data : writes) asio::write(tls, asio::buffer(data), ec);
      if (closeNotify) tls.shutdown(ec);
      tls.next_layer().close(ec);
    });
  }
  ~TlsWatchServer() { thread_.join(); }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_{ioc_, {asio::ip::make_address("127.0.0.1"), 0}};
  std::unique_ptr<ssl::context> context_ = testsupport::testServerTlsContext();
  std::thread thread_;
};

// Relays one connection to `target`: the client's bytes as they come, the server's cut into
// pieces of 1, 2, ... 29 bytes (then 1 again), a pause of 200 µs after each, for the first
// `trickled` bytes; the rest as they come.
class TricklingRelay {
 public:
  TricklingRelay(std::uint16_t target, std::size_t trickled) {
    thread_ = std::thread([this, target, trickled] {
      asio::ip::tcp::socket client(ioc_);
      acceptor_.accept(client);
      asio::ip::tcp::socket server(ioc_);
      boost::system::error_code ec;
      server.connect({asio::ip::make_address("127.0.0.1"), target}, ec);
      std::thread up([&] { copy(client, server, 0); });
      copy(server, client, trickled);
      up.join();
    });
  }
  ~TricklingRelay() { thread_.join(); }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  static void copy(asio::ip::tcp::socket& from, asio::ip::tcp::socket& to, std::size_t trickled) {
    std::vector<char> data(64 * 1024);
    std::size_t sent = 0;
    std::size_t piece = 1;
    boost::system::error_code ec;
    for (;;) {
      const std::size_t n = from.read_some(asio::buffer(data), ec);
      if (ec) break;
      for (std::size_t at = 0; at < n;) {
        std::size_t take = n - at;
        if (sent < trickled) {
          take = std::min(take, piece);
          piece = piece % 29 + 1;
        }
        asio::write(to, asio::buffer(data.data() + at, take), ec);
        if (ec) return;
        at += take;
        sent += take;
        if (sent <= trickled) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    to.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  }

  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_{ioc_, {asio::ip::make_address("127.0.0.1"), 0}};
  std::thread thread_;
};

ApiResponse watchThrough(std::uint16_t port, std::vector<std::string>& lines) {
  const auto transport = testsupport::testTlsTransport(port);
  ApiRequest request;
  request.path = "/api/v1/pods?watch=1";
  request.batchWindow = std::chrono::microseconds(2'000);
  std::atomic<bool> cancel{false};
  return transport->stream(
      request, "",
      [&](std::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      cancel);
}

TEST(TlsWatchRead, RecordsCutAnyWayOnTheWireGiveTheSameLines) {
  const std::string big(40'000, 'x');  // larger than a TLS record (16 kB): several records
  std::vector<std::string> writes = {testsupport::kWatchAnswerHead};
  std::vector<std::string> expected;
  for (int i = 0; i < 40; ++i) {  // one record each
    const std::string line = "{\"n\":" + std::to_string(i) + "}";
    writes.push_back(httpChunk(line + "\n"));
    expected.push_back(line);
  }
  writes.push_back(httpChunk("{\"split\":") + httpChunk("true}\n"));  // a line across two chunks
  expected.emplace_back("{\"split\":true}");
  writes.push_back(httpChunk(big + "\n"));
  expected.push_back(big);
  writes.emplace_back("0\r\n\r\n");
  for (const bool closeNotify : {true, false}) {
    SCOPED_TRACE(closeNotify ? "closed with close_notify" : "closed without close_notify");
    TlsWatchServer server(writes, closeNotify);
    TricklingRelay relay(server.port(), 8'000);  // the handshake and the first events trickle
    std::vector<std::string> lines;
    const ApiResponse response = watchThrough(relay.port(), lines);
    // The body ended with its last chunk: how the connection closed after it does not matter.
    EXPECT_TRUE(response.ok()) << response.describe();
    EXPECT_EQ(lines, expected);
  }
}

// A body cut short: the lines before the cut, then a transport error, whether the server said
// close_notify (a clean TLS end in the middle of a chunked body) or not (truncated).
TEST(TlsWatchRead, ABodyCutShortIsAnErrorAfterItsLines) {
  const std::vector<std::string> writes = {testsupport::kWatchAnswerHead, httpChunk("{\"a\":1}\n"),
                                           "8\r\n{\"b\""};
  for (const bool closeNotify : {true, false}) {
    SCOPED_TRACE(closeNotify ? "closed with close_notify" : "closed without close_notify");
    TlsWatchServer server(writes, closeNotify);
    TricklingRelay relay(server.port(), 1'000'000);
    std::vector<std::string> lines;
    const ApiResponse response = watchThrough(relay.port(), lines);
    EXPECT_EQ(lines, (std::vector<std::string>{R"({"a":1})"}));
    EXPECT_THAT(response.transportError, HasSubstr("stream broken"));
  }
}

}  // namespace
}  // namespace gpufair::k8s
