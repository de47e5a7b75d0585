// ExtenderServer: the HTTP/1.1 transport of the webhooks (Boost.Beast, asynchronous, keep-alive) on
// `threads` io threads. Each request is read under limits and handed to a RequestHandler:
//   body over maxBodyBytes            -> 413, connection closed
//   header over maxHeaderBytes        -> 431, connection closed
//   malformed HTTP                    -> 400, connection closed
//   request not complete in readTimeout (counted from its first byte) -> 408, connection closed
//   keep-alive connection silent for idleTimeout -> closed quietly
//   more than maxConnections open     -> the request is answered 503, connection closed
// All error bodies are {"Error": "..."}. Beast stays out of this header.
// Thread-safety: start() and stop() from one controlling thread; port() from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gpufair/api/http.h"
#include "gpufair/common/status.h"

namespace gpufair::api {

struct ServerOptions {
  std::string listen = "0.0.0.0:8888";  // HOST:PORT; port 0 picks a free port (see port())
  int threads = 2;
  std::size_t maxBodyBytes = 64u << 20;
  std::size_t maxHeaderBytes = 16u << 10;
  std::chrono::milliseconds readTimeout{10'000};
  std::chrono::milliseconds idleTimeout{90'000};
  std::chrono::milliseconds writeTimeout{10'000};
  std::size_t maxConnections = 1024;
  std::chrono::milliseconds drainTimeout{5'000};  // stop(): how long requests in flight may finish
};

struct ListenAddress {
  std::string host;  // "0.0.0.0", "127.0.0.1", "::1", "localhost"
  std::uint16_t port = 0;
};
// "HOST:PORT", "[IPv6]:PORT" or ":PORT" (all interfaces). Errors say what is wrong.
Result<ListenAddress> parseListenAddress(std::string_view text);

class ExtenderServer {
 public:
  // The handler must outlive the server.
  ExtenderServer(RequestHandler& handler, ServerOptions options);
  ~ExtenderServer();  // stops if running
  ExtenderServer(const ExtenderServer&) = delete;
  ExtenderServer& operator=(const ExtenderServer&) = delete;

  // Binds, listens and starts the io threads. Fails (address in use, bad listen address, bad
  // options) without starting anything.
  Status start();
  // Stops accepting, lets requests in flight finish (up to drainTimeout), closes idle connections
  // and joins the io threads. Idempotent.
  void stop();
  // The bound port (the real one when listen asked for port 0); 0 before start().
  std::uint16_t port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufair::api
