// HttpSession: one keep-alive HTTP/1.1 connection of ExtenderServer.
//   idle (waiting for a request's first byte, idleTimeout) -> reading (readTimeout) -> handling
//   (synchronously, on the io thread) -> writing (writeTimeout) -> idle again, or closing.
// Errors before a request is complete are answered (400, 408, 413, 431) with Connection: close; the
// socket is then half-closed and drained briefly so the client reads the answer instead of a reset.
// Thread-safety: every handler of a session runs on its strand; stop() may be called from any
// thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "gpufair/api/http.h"
#include "gpufair/api/server.h"

namespace gpufair::api::detail {

class HttpSession;

// What all sessions of one server share. Outlives every session (see ExtenderServer::Impl).
struct SessionHub {
  SessionHub(RequestHandler& handler, const ServerOptions& options)
      : handler(handler), options(options) {}

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
  std::atomic<bool> stopping{false};

 private:
  mutable std::mutex mu_;
  std::condition_variable emptied_;
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions_;  // GUARDED_BY(mu_)
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // socket: accepted on a strand, which all of the session's handlers then run on.
  // overloaded: the server is over maxConnections; the request is read and answered 503.
  HttpSession(boost::asio::ip::tcp::socket&& socket, SessionHub& hub, bool overloaded);
  ~HttpSession();

  void start();
  void stop();         // thread-safe: posts to the strand
  void closeSocket();  // only when no io thread runs

 private:
  enum class Phase { kIdle, kReading, kWriting, kLingering, kClosed };
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  void waitForRequest();
  void onFirstBytes(boost::system::error_code ec, std::size_t bytes);
  void readRequest();
  void onRead(boost::system::error_code ec);
  void handleRequest();
  void sendError(int status, std::string_view message);
  void send(Response response, unsigned version, bool keepAlive);
  void onWrite(boost::system::error_code ec);
  void lingerClose();
  void onLinger(boost::system::error_code ec, std::size_t bytes);
  void close();
  void armTimer(std::chrono::milliseconds timeout);
  void disarmTimer();

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  SessionHub& hub_;
  const bool overloaded_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  boost::beast::http::response<boost::beast::http::string_body> response_;
  Phase phase_ = Phase::kIdle;
  bool stopRequested_ = false;
  bool closeAfterWrite_ = false;
  bool timedOut_ = false;
  std::uint64_t timerGeneration_ = 0;
};

}  // namespace gpufair::api::detail
