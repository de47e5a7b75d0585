// AsyncKeepAlive: KeepAliveTransport's one-shot requests, sent asynchronously on the threads of
// an io_context the caller runs (the webhook server's): the request is written and its answer read
// by completion handlers on that context, so no thread waits for the API server and none is handed
// the exchange (the bind threads' condition-variable hand-off and their blocking poll cost a futex
// wake and context switches per /bind; bench/RESULTS.md, issue 15).
//   - Connections are kept alive and pooled (apart from the synchronous pool: their sockets belong
//     to this io_context), each with a strand of its own that its handlers and its timer run on.
//   - A pooled connection idle for over a second that the server closed meanwhile is noticed
//     before use (peek; one given back within the second is taken without it); a request that
//     fails on a reused connection before any byte of the answer is sent once more on a new one.
//   - TLS as KeepAliveTransport (the same context set-up, server name verification and SNI).
//   - The request's timeout bounds the whole exchange (connect, handshake, write, read): a timer on
//     the connection's strand closes the connection when it fires with an exchange past its
//     deadline. One wait serves a connection's exchanges one after another; it is not cancelled
//     when an exchange ends (see Connection::timer in the .cc).
// Lifetime: exchanges in flight hold the AsyncKeepAlive; close() drops the idle connections and
// must be called before the io_context is destroyed (a socket outliving its io_context is a
// use-after-free); exchanges still in flight then are ended by their timeout or by the io_context's
// destruction (which destroys their handlers).
// Thread-safety: send() and close() may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpufair/k8s/client.h"

#include "keepalive_transport.h"

namespace gpufair::k8s::detail {

class AsyncKeepAlive : public std::enable_shared_from_this<AsyncKeepAlive> {
 public:
  using Done = std::function<void(ApiResponse)>;
  // server, tls, verifyServer as for KeepAliveTransport.
  AsyncKeepAlive(boost::asio::io_context& context, const std::string& server,
                 std::shared_ptr<const TlsMaterial> tls, bool verifyServer);
  ~AsyncKeepAlive();
  AsyncKeepAlive(const AsyncKeepAlive&) = delete;
  AsyncKeepAlive& operator=(const AsyncKeepAlive&) = delete;

  // Sends the request with this Authorization header (when not empty); `done` gets the answer, or
  // status 0 and a transport error (without the method and path), on a thread of the io_context.
  void send(const ApiRequest& request, const std::string& authorization, Done done);
  // Drops the idle connections; later send()s fail at once ("closed"). Idempotent.
  void close();
  // Connections opened so far (for tests).
  std::size_t connectionsOpened() const;

  class Connection;
  class Exchange;
  using ConnectionPtr = std::shared_ptr<Connection>;

 private:
  friend class Exchange;
  // An idle connection still open, or null.
  ConnectionPtr take();
  // A new connection (not connected yet), or null with `error` set.
  ConnectionPtr create(std::string& error);
  void giveBack(ConnectionPtr connection);

  boost::asio::io_context& context_;
  KeepAliveTransport target_;  // where and how to connect; its own pool stays unused

  mutable std::mutex mu_;
  std::vector<ConnectionPtr> idle_;  // GUARDED_BY(mu_)
  std::size_t opened_ = 0;           // GUARDED_BY(mu_)
  bool closed_ = false;              // GUARDED_BY(mu_)
};

}  // namespace gpufair::k8s::detail
