// KeepAliveTransport::stream: a watch, read as it arrives on the caller's thread.
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "keepalive_connection.h"

namespace gpufair::k8s::detail {
namespace {

// Reads what the plain TCP socket `fd` holds into `buffer` (up to kReadChunk bytes) with the
// socket calls themselves: through the connection's io_context each read cost a speculative recv
// that found nothing, an epoll_wait and the recv. With `waitFirst` it waits for data (poll) before
// the recv (the last read took everything there was); without, it tries the recv first (after a
// batch window, data is likely there). Waits in slices of kPollSlice to see `cancel`. Errors:
// eof at the end of the stream, beast::error::timeout at `deadline`, kCancelled.
error_code readPlain(int fd, beast::flat_buffer& buffer, bool waitFirst,
                     SteadyClock::time_point deadline, const std::atomic<bool>& cancel,
                     std::size_t& read) {
  read = 0;
  bool wait = waitFirst;
  for (;;) {
    if (cancel.load()) return kCancelled;
    if (wait) {
      if (error_code ec =
              waitReady(fd, POLLIN, std::min(deadline, SteadyClock::now() + kPollSlice))) {
        if (ec != beast::error::timeout || SteadyClock::now() >= deadline) return ec;
        continue;  // the slice passed: cancel again
      }
    }
    const auto space = buffer.prepare(kReadChunk);
    const ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
    if (n > 0) {
      read = static_cast<std::size_t>(n);
      buffer.commit(read);
      return {};
    }
    if (n == 0) return asio::error::eof;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return lastError();
    wait = true;
  }
}

// Whether a TLS stream holds more than its last read returned. One read gives at most one TLS
// record, and an API server writes each watch event as a record of its own: the rest waits in
// OpenSSL (decrypted or not), in the BIO pair asio feeds it from the socket, or in the socket.
bool moreWaiting(ssl::stream<beast::tcp_stream>& tls) {
  SSL* session = tls.native_handle();
  if (SSL_pending(session) > 0 || SSL_has_pending(session) == 1) return true;
  if (BIO* in = SSL_get_rbio(session); in != nullptr && BIO_ctrl_pending(in) > 0) return true;
  error_code ec;
  const std::size_t inSocket = tls.next_layer().socket().available(ec);
  return !ec && inSocket > 0;
}

// Reads what the TLS stream holds into `buffer` (one record's data at most) with synchronous calls,
// the socket in non-blocking mode: through the connection's io_context each read cost a
// speculative receive that found nothing and about three epoll_waits, and a TLS watch read about
// one event per wake-up where a plain one read a batch. A read is always tried first (OpenSSL may
// hold data, or asio's input buffer bytes taken from the socket but not yet given to OpenSSL,
// which nothing here can see); only when OpenSSL and the socket have nothing (would_block) does it
// wait for the socket, in slices of kPollSlice to see `cancel`. Errors as readPlain's, and
// ssl::error::stream_truncated when the server closed without a TLS close_notify.
error_code readTls(ssl::stream<beast::tcp_stream>& tls, beast::flat_buffer& buffer,
                   SteadyClock::time_point deadline, const std::atomic<bool>& cancel,
                   std::size_t& read) {
  read = 0;
  const int fd = tls.next_layer().socket().native_handle();
  for (;;) {
    if (cancel.load()) return kCancelled;
    error_code ec;
    const std::size_t n = tls.read_some(buffer.prepare(kReadChunk), ec);
    if (n > 0) {
      read = n;
      buffer.commit(read);
      return {};
    }
    if (ec != asio::error::would_block && ec != asio::error::try_again) {
      return ec ? ec : asio::error::eof;
    }
    if (ec = waitReady(fd, POLLIN, std::min(deadline, SteadyClock::now() + kPollSlice)); ec) {
      if (ec != beast::error::timeout || SteadyClock::now() >= deadline) return ec;
    }
  }
}

}  // namespace

ApiResponse KeepAliveTransport::stream(const ApiRequest& request, const std::string& authorization,
                                       const LineHandler& onLine, const std::atomic<bool>& cancel) {
  auto deadline = deadlineAfter(request.timeout);
  std::string error;
  ConnectionPtr connection = open(deadline, error, &cancel);
  if (!connection) return transportError(error == "timeout" ? noAnswer(request) : error);
  const std::string outgoing =
      formatRequest(request, basePath_ + request.path, hostHeader_, authorization);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(kNoBodyLimit);
  parser.header_limit(kHeaderLimit);
  error_code ec = connection->run(
      deadline,
      [&](auto& stream, auto& finish) {
        asio::async_write(stream, asio::buffer(outgoing), [&](error_code e, std::size_t) {
          if (e) return finish(e);
          http::async_read_header(stream, connection->buffer(), parser,
                                  [&finish](error_code r, std::size_t) { finish(r); });
        });
      },
      &cancel);
  if (ec == kCancelled) return transportError("cancelled");
  if (ec == beast::error::timeout) return transportError(noAnswer(request));
  if (ec) return transportError(ec.message());
  ApiResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  if (request.onResponse) request.onResponse(out.status);
  const bool success = out.status >= 200 && out.status < 300;
  // A failure's body (small) within the request's timeout again; a watch's
  // lines as they come, for as long as the stream is not silent for
  // kStreamIdle.
  deadline = success ? SteadyClock::time_point::max() : deadlineAfter(request.timeout);
  std::string pending;
  std::vector<char> chunk(kReadChunk);
  // Calls onLine for each complete line in `pending` (the rest too when `all`);
  // false when onLine asked to stop.
  auto deliver = [&](bool all) {
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty() && !onLine(line)) return false;
    }
    if (all && start < pending.size()) {
      if (!onLine(std::string_view(pending).substr(start))) return false;
      start = pending.size();
    }
    pending.erase(0, start);
    return true;
  };
  // The body is parsed here from the connection's buffer, and bytes are read only when the parser
  // needs more: Beast's async_read_some on the parser took one more trip through the io_context per
  // event (a completion posted when the buffer already held what it parsed).
  beast::flat_buffer& buffer = connection->buffer();
  const int plainSocket =
      connection->tls() == nullptr ? connection->tcpStream().socket().native_handle() : -1;
  if (connection->tls() != nullptr) {
    // readTls's calls return would_block instead of waiting. The connection is closed when the
    // stream ends (a watch's connection never goes back to the pool).
    error_code ignored;
    connection->tcpStream().socket().non_blocking(true, ignored);
  }
  const auto window = success ? request.batchWindow : std::chrono::microseconds{0};
  // Whether the next read waits for the batch window, and until when; whether the last read
  // filled the buffer (more is waiting: read again at once).
  bool batching = false;
  bool filled = false;
  SteadyClock::time_point lastRead{};
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    ec = {};
    while (buffer.size() > 0 && parser.get().body().size > 0 && !parser.is_done()) {
      const std::size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == http::error::need_buffer) ec = {};
      if (ec || used == 0) break;
    }
    if (ec == http::error::need_more) ec = {};
    std::size_t got = chunk.size() - parser.get().body().size;
    if (!ec && got == 0 && !parser.is_done()) {
      if (batching && !filled) std::this_thread::sleep_until(lastRead + window);
      const auto started = SteadyClock::now();
      std::size_t read = 0;
      const auto readDeadline = success ? SteadyClock::now() + kStreamIdle : deadline;
      if (plainSocket >= 0) {
        ec = readPlain(plainSocket, buffer, !batching && !filled, readDeadline, cancel, read);
      } else {
        ec = readTls(*connection->tls(), buffer, readDeadline, cancel, read);
      }
      if (ec == kCancelled) return out;
      if (read > 0 && window.count() > 0) {
        // Lines keep coming: a read within a window of the one before starts batching, and
        // batching goes on while the read after each window finds data there at once; a window
        // that passed with nothing to read ends it (a wait for the window would only delay).
        const auto now = SteadyClock::now();
        batching = batching ? now - started < window / 4 : now - lastRead < window;
        lastRead = now;
      }
      // A full read, or a TLS record with more behind it, leaves more to read at once: the batch
      // window is waited for only once the stream is drained (else a TLS watch would take one
      // event per window, 500 a second, and fall behind any burst).
      filled = read == kReadChunk ||
               (read > 0 && connection->tls() != nullptr && moreWaiting(*connection->tls()));
      if (ec == asio::error::eof) {
        // As Beast's read: the end of a body without a length, else a message cut short.
        ec = {};
        if (parser.got_some()) {
          parser.put_eof(ec);
        } else {
          ec = http::error::end_of_stream;
        }
        if (!ec && !parser.is_done()) ec = http::error::partial_message;
      }
      if (!ec) continue;
    }
    got = chunk.size() - parser.get().body().size;
    if (!success) {
      out.body.append(chunk.data(), got);
      if (ec) return out;
      continue;
    }
    pending.append(chunk.data(), got);
    if (!deliver(false)) return out;
    if (ec) {
      out.transportError = "stream broken: " + ec.message();
      return out;
    }
  }
  if (success) deliver(true);
  return out;
}

}  // namespace gpufair::k8s::detail
