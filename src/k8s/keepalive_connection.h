// KeepAliveTransport's connection: a socket (and TLS stream) with its own io_context, which the
// thread whose request uses the connection runs; and what the transport's two files share.
// Private to src/k8s/keepalive_*.cc. Thread-safety: a Connection is used by one thread at a time.
#pragma once

#include <atomic>
#include <cerrno>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include "keepalive_transport.h"

namespace gpufair::k8s::detail {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

inline constexpr std::size_t kMaxIdle = 16;
inline constexpr std::chrono::milliseconds kPollSlice{100};
// How long a watch may stay silent before its connection is considered dead (as
// cpprest's inactivity timeout did).
inline constexpr std::chrono::seconds kStreamIdle{600};
inline constexpr std::size_t kReadChunk = 64 * 1024;
inline const error_code kCancelled = boost::asio::error::operation_aborted;
inline constexpr std::uint32_t kHeaderLimit = 64 * 1024;
// Not boost::none: Beast 1.74 compares a Content-Length with an empty optional limit as "over".
inline constexpr std::uint64_t kNoBodyLimit = std::numeric_limits<std::uint64_t>::max();

inline bool isIpLiteral(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// Errors that mean a reused connection was closed by the server while it sat in
// the pool.
inline bool closedWhileIdle(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == ssl::error::stream_truncated;
}

inline error_code lastError() {
  return {errno, boost::system::system_category()};
}

// Sends what the socket `fd` takes of `data` from `sent` on now, without waiting, and adds it to
// `sent`. A socket that takes no more is not an error; anything else (a reset, a closed pipe) is.
inline error_code sendWhatFits(int fd, std::string_view data, std::size_t& sent) {
  while (sent < data.size()) {
    const ssize_t n =
        ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return lastError();
  }
  return {};
}

// Waits until the socket is ready for `events` (POLLIN, POLLOUT), or the deadline passes
// (beast::error::timeout).
inline error_code waitReady(int fd, short events, SteadyClock::time_point deadline) {
  for (;;) {
    int timeoutMs = -1;
    if (deadline != SteadyClock::time_point::max()) {
      const auto left = deadline - SteadyClock::now();
      if (left <= SteadyClock::duration::zero()) return beast::error::timeout;
      timeoutMs = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    }
    pollfd one{fd, events, 0};
    const int n = ::poll(&one, 1, timeoutMs);
    if (n > 0) return {};  // ready, or an error or hang-up the next call reports
    if (n < 0 && errno != EINTR) return lastError();
  }
}

// False when the server closed the connection on `socket` (or sent something unasked) while it
// sat idle in a pool: a kept-alive connection has nothing to read until a request is sent.
inline bool quietWhileIdle(int socket) {
  char byte = 0;
  const ssize_t n = ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// The newest idle connection of `idle` (guarded by `mu`) that is still open, or null; the closed
// ones met on the way are dropped. Used by the synchronous and the asynchronous pools alike.
template <typename ConnectionPtr>
ConnectionPtr takeStillOpen(std::mutex& mu, std::vector<ConnectionPtr>& idle) {
  for (;;) {
    ConnectionPtr connection;
    {
      std::lock_guard lock(mu);
      if (idle.empty()) return nullptr;
      connection = std::move(idle.back());
      idle.pop_back();
    }
    if (connection->stillOpen()) return connection;
  }
}

// A new TLS stream to `host`: the name it asks for (SNI; not for an IP address) and, when the
// server is verified, the name its certificate must carry. Used by the synchronous and the
// asynchronous connections alike.
template <typename TlsStream>
void nameServer(TlsStream& tls, const std::string& host, bool verifyServer) {
  if (!isIpLiteral(host)) SSL_set_tlsext_host_name(tls.native_handle(), host.c_str());
  if (verifyServer) tls.set_verify_callback(ssl::host_name_verification(host));
}

class KeepAliveTransport::Connection {
 public:
  explicit Connection(std::shared_ptr<ssl::context> context) : context_(std::move(context)) {
    if (context_) {
      tls_.emplace(ioc_, *context_);
    } else {
      plain_.emplace(ioc_);
    }
    // Beast reads max(512, free capacity) bytes at a time: without this, a watch event of 1.5 kB
    // took three reads and a LIST page hundreds.
    buffer_.reserve(kReadChunk);
  }

  beast::tcp_stream& tcpStream() { return tls_ ? tls_->next_layer() : *plain_; }
  ssl::stream<beast::tcp_stream>* tls() { return tls_ ? &*tls_ : nullptr; }
  beast::flat_buffer& buffer() { return buffer_; }
  bool reused = false;

  // Starts an operation on the stream requests travel on and runs it to its end on this thread.
  // The deadline bounds how long this thread runs it: an operation still under way then is cut
  // off by closing the connection, and beast::error::timeout returned. No timer is armed for it
  // (a timer per operation cost two timerfd calls per request and per watch read). With
  // `cancel`: checked every kPollSlice; once true, the connection is closed (the operation ends
  // with an error) and kCancelled is returned.
  template <typename Start>
  error_code run(SteadyClock::time_point deadline, Start&& start,
                 const std::atomic<bool>* cancel = nullptr) {
    error_code result;
    bool done = false;
    auto finish = [&](error_code ec) {
      result = ec;
      done = true;
    };
    tcpStream().expires_never();
    if (tls_) {
      start(*tls_, finish);
    } else {
      start(*plain_, finish);
    }
    ioc_.restart();
    while (!done) {
      if (cancel != nullptr && cancel->load()) return cutOff(kCancelled);
      if (ioc_.stopped()) return asio::error::operation_aborted;  // no work left, yet not done
      if (cancel == nullptr && deadline == SteadyClock::time_point::max()) {
        ioc_.run_one();
        continue;
      }
      const auto now = SteadyClock::now();
      if (now >= deadline) return cutOff(beast::error::timeout);
      ioc_.run_one_until(cancel == nullptr ? deadline : std::min(deadline, now + kPollSlice));
    }
    return result;
  }

  bool stillOpen() { return quietWhileIdle(tcpStream().socket().native_handle()); }

 private:
  // Closes the connection under an operation that must end now, lets it finish with its error,
  // and returns `why`.
  error_code cutOff(error_code why) {
    tcpStream().close();
    ioc_.run();
    return why;
  }

  asio::io_context ioc_{1};                // first: the streams below are destroyed before it
  std::shared_ptr<ssl::context> context_;  // shared with the transport's other connections
  std::optional<ssl::stream<beast::tcp_stream>> tls_;
  std::optional<beast::tcp_stream> plain_;
  beast::flat_buffer buffer_;
};

inline SteadyClock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return SteadyClock::time_point::max();
  return SteadyClock::now() + timeout;
}

inline ApiResponse transportError(std::string text) {
  ApiResponse out;
  out.transportError = std::move(text);
  return out;
}

inline std::string noAnswer(const ApiRequest& request) {
  return "no answer within " + std::to_string(request.timeout.count()) + " ms";
}

}  // namespace gpufair::k8s::detail
