// HttpSession: one keep-alive HTTP/1.1 connection of ExtenderServer, plain or TLS.
//   [TLS handshake (readTimeout)] -> idle (waiting for a request's first byte, idleTimeout) ->
//   reading (readTimeout) -> handling -> writing (writeTimeout) -> idle again, or closing.
// Handling: the handler answers through a Reply (RequestHandler::handleAsync), at once on the io
// thread (most requests) or later from another thread (/bind once its Binding is done): then the
// answer is posted to the session's io_context, and its thread serves other connections meanwhile.
// Nothing is timed while a request is handled (the handler bounds its own waits).
// One deadline per phase, kept by one timer that is not re-armed per request: arming a phase only
// moves deadline_, and the timer is moved only when the new deadline is earlier than its expiry
// (when it fires early it waits again for the deadline in force). A request thus costs no timer
// system calls and no cancelled waits to complete.
// The answer is written as its status line, header fields and body in one write (no per-request
// Beast response, fields or serializer to allocate); on plain HTTP at once, with the socket
// non-blocking, and only what it does not take then through an asynchronous write.
// Errors before a request is complete are answered (400, 408, 413, 431) with Connection: close; the
// connection is then closed gracefully (TLS close_notify; TCP half-close and a brief drain) so the
// client reads the answer instead of a reset.
// Reading (plain HTTP): each receive takes up to kReadBytes (64 kB), so a /filter naming thousands
// of nodes comes in one receive once it is there (it took two or three of 16 kB and Beast's read
// sizes); the parser gets what is buffered, and only an incomplete request reads again. Waiting
// for readability first (socket.async_wait) instead of asio's receive tried at once does not pay
// with this Boost (1.74): its reactor re-arms the descriptor (epoll_ctl) for every such wait, one
// system call for the receive it saves (bench/RESULTS.md, speed-io9). TLS reads as before.
// Thread-safety: every handler of a session runs on its io_context, which one thread runs (see
// ExtenderServer); stop() may be called from any thread. SessionHub is thread-safe; it never calls
// into a session while holding its lock.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "gpufair/api/http.h"
#include "gpufair/api/server.h"

namespace gpufair::api::detail {

class HttpSession;

// What all sessions of one server share. Outlives every session (see ExtenderServer::Impl).
struct SessionHub {
  SessionHub(RequestHandler& handler, const ServerOptions& options, ServerStats& stats)
      : handler(handler), options(options), stats(stats) {}

  void add(const std::shared_ptr<HttpSession>& session);
  void remove(HttpSession* session);
  // Asks every open session to finish its current request and close; returns how many were open.
  std::size_t stopAll();
  // Closes the sockets of sessions still open. Only once no io thread runs.
  void closeAll();
  // Waits until no session is open or the timeout passes; true when none is open.
  bool waitEmpty(std::chrono::milliseconds timeout);
  std::size_t open() const;

  RequestHandler& handler;
  const ServerOptions& options;
  ServerStats& stats;
  std::atomic<bool> stopping{false};

 private:
  // Strong references to the open sessions, taken under the lock and used after it is released:
  // dropping the last reference destroys a session, whose destructor calls remove().
  std::vector<std::shared_ptr<HttpSession>> lockAll();

  mutable std::mutex mu_;
  std::condition_variable emptied_;
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions_;  // GUARDED_BY(mu_)
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // The socket and timer name their executor's type (one of the server's io_contexts, run by one
  // thread: no strand is needed); behind asio's type-erased executor every copy of it (one per
  // operation started, per handler's work guard) was a heap allocation.
  using Executor = boost::asio::io_context::executor_type;
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;

  // socket: accepted onto an io_context run by one thread, which all of the session's handlers
  // then run on.
  // tls: the TLS context of new connections, or null for plain HTTP; the session keeps it alive
  // (a certificate reload replaces the server's context, not the one a session uses).
  // overloaded: the server is over maxConnections; the request is read and answered 503.
  HttpSession(Socket&& socket, SessionHub& hub, std::shared_ptr<boost::asio::ssl::context> tls,
              bool overloaded);
  ~HttpSession();

  void start();
  void stop();         // thread-safe: posts to the session's io_context
  void closeSocket();  // only when no io thread runs

 private:
  enum class Phase { kHandshake, kIdle, kReading, kHandling, kWriting, kLingering, kClosed };
  // The request's header fields are allocated from fieldsMemory_, which is emptied before each
  // request: Beast's fields otherwise cost a heap allocation per header line, per request.
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body,
                                                    std::pmr::polymorphic_allocator<char>>;
  using TlsStream = boost::asio::ssl::stream<Socket&>;
  using Timer = boost::asio::basic_waitable_timer<
      std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;

  // With allowed client names: refuses a client certificate none of whose names is allowed.
  bool verifyClientName(bool preverified, boost::asio::ssl::verify_context& context);
  void onHandshake(boost::system::error_code ec);
  void waitForRequest();
  void onFirstBytes(boost::system::error_code ec, std::size_t bytes);
  void readRequest();
  // Plain HTTP: parses what is buffered and receives more while the request is incomplete; ends
  // in onRead().
  void readPlain();
  void onMore(boost::system::error_code ec, std::size_t bytes);
  void onRead(boost::system::error_code ec);
  void handleRequest();
  // The handler's answer, from any thread: sent on the session's io_context.
  void onReply(Response response);
  void answer(Response response);
  void sendError(int status, std::string_view message);
  void send(Response response, unsigned version, bool keepAlive);
  void onWrite(boost::system::error_code ec);
  void lingerClose();
  void drainAndClose();
  void onLinger(boost::system::error_code ec, std::size_t bytes);
  void close();
  // Sets the deadline of the phase that starts; disarmTimer() clears it (the timer stays armed).
  void armTimer(std::chrono::milliseconds timeout);
  void disarmTimer();
  void waitTimer(std::chrono::steady_clock::time_point expiry);
  void onTimer(boost::system::error_code ec, std::uint64_t generation);
  std::string remote() const;  // "ADDRESS:PORT" of the peer, for logs

  Socket socket_;
  std::shared_ptr<boost::asio::ssl::context> tlsContext_;  // keeps the context alive for tls_
  std::optional<TlsStream> tls_;
  Timer timer_;
  SessionHub& hub_;
  const bool overloaded_;
  boost::beast::flat_buffer buffer_;
  // The fields of a usual request fit fieldsArena_; a larger header (up to maxHeaderBytes) takes
  // more from the heap, given back when the next request starts. Declared before parser_, which
  // allocates from it and so is destroyed first.
  std::array<std::byte, 2048> fieldsArena_;
  std::pmr::monotonic_buffer_resource fieldsMemory_{fieldsArena_.data(), fieldsArena_.size()};
  // The last request's body string, emptied, lent to the next request's parser (its capacity kept
  // when it is at most kSpareBodyBytes): one allocation less per request.
  std::string spareBody_;
  std::optional<Parser> parser_;
  // The answer being written: its status line and header fields (written by send(), keeping its
  // capacity from one request to the next), and its body (moved from the handler's Response).
  // Plain HTTP writes both with one gathered write; TLS appends the body to head_ (one record).
  std::string head_;
  std::string body_;
  Phase phase_ = Phase::kHandshake;
  bool stopRequested_ = false;
  // The request being handled: how its answer is written.
  unsigned requestVersion_ = 11;
  bool requestKeepAlive_ = false;
  // This session, from the request's handling until its answer (see handleRequest()).
  std::shared_ptr<HttpSession> handling_;
  bool closeAfterWrite_ = false;
  bool timedOut_ = false;
  // The phase's deadline; max() when no phase is timed.
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  bool timerWaiting_ = false;          // a wait of timer_ is pending
  std::uint64_t timerGeneration_ = 0;  // of the latest wait; earlier ones are stale
  std::string refusedClient_;          // the names of a client certificate refused for its name
};

}  // namespace gpufair::api::detail
