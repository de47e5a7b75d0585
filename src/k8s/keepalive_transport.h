// KeepAliveTransport: HTTP/1.1 to one API server, plain or TLS, run on the calling thread: one-shot
// requests over a pool of keep-alive connections, and watch streams each on a connection of its
// own. Each connection owns a small io_context that the caller runs while its request is under
// way, so a request (or a watch event) costs its socket calls and its parsing, and nothing else:
// no thread hand-off, no completion queued on a shared pool and woken up again (cpprestsdk, used
// before, woke two to three threads per request and per watch event; bench/RESULTS.md, issue 15).
//   - Connections are reused while the server keeps them alive; a pooled connection the server
//     has closed meanwhile is noticed before use (peek), and a request that fails on a reused
//     connection before any byte of the answer arrived is sent once more on a new connection
//     (what cpprest's asio client did, for any method).
//   - TLS: the CA bundle and client certificate of TlsMaterial, read again for every new
//     connection (one TLS context serves all connections while they stay the same); the server
//     certificate is verified, its name against the host, unless insecureSkipTlsVerify; with a
//     CA bundle only its CAs are trusted, without one the system roots.
//   - The request's timeout bounds the whole request (connect, TLS handshake, write, read).
// Errors are values: the status and body of any answer, or a transport error text.
// Thread-safety: send() may be called from many threads at once; each takes its own connection.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/k8s/client.h"

#include "client_auth.h"

namespace gpufair::k8s::detail {

// The request as it goes on the wire: request line, Host, Accept, User-Agent, Authorization (when
// not empty), Content-Type (with a body, or for POST, PUT and PATCH), Content-Length (with a body,
// or for POST, PUT and OPTIONS), then the body: byte for byte what Beast's request with these
// fields and prepare_payload() wrote, built into one string (one write, one TLS record; no fields
// or serializer allocated per request). `target` is the base path and the request's path.
std::string formatRequest(const ApiRequest& request, std::string_view target,
                          std::string_view hostHeader, const std::string& authorization);

class KeepAliveTransport {
 public:
  // server: "http://HOST:PORT" or "https://HOST:PORT" (the port may be left
  // out). tls: the credentials of an https server (null: system roots, no
  // client certificate).
  KeepAliveTransport(const std::string& server, std::shared_ptr<const TlsMaterial> tls,
                     bool verifyServer);
  ~KeepAliveTransport();

  // Why `server` cannot be used (no host, a bad port, another scheme), or "".
  static std::string checkServer(const std::string& server);

  // Sends the request with these headers added (e.g. Authorization); on failure
  // only `status` 0 and `transportError` (without the method and path: the
  // caller adds them).
  ApiResponse send(const ApiRequest& request, const std::string& authorization);

  // Streams a long answer (watch) on a connection of its own, closed at the
  // end: onLine gets each line of a 2xx body until the body ends, onLine
  // returns false, or `cancel` (checked every 100 ms); a non-2xx answer comes
  // back with its body and no lines. The request's timeout bounds the wait for
  // the answer's headers; afterwards 10 minutes of silence break the stream.
  ApiResponse stream(const ApiRequest& request, const std::string& authorization,
                     const LineHandler& onLine, const std::atomic<bool>& cancel);

  // Connections opened so far (for tests and stats).
  std::size_t connectionsOpened() const;
  // TLS contexts built so far: one, unless the CA bundle or client certificate changed (for tests).
  std::size_t tlsContextsBuilt() const;

  class Connection;

 private:
  friend class AsyncKeepAlive;  // connects as open() does (keepalive_async.cc)
  // The TLS context of a new connection to an https server (null for http), or null with `error`
  // set: verification as configured, the CA bundle and client certificate of tls_ read again,
  // and the context built for them before returned while they are the same (building one parses
  // every CA certificate, and the system roots when no CA bundle is configured: milliseconds).
  std::shared_ptr<boost::asio::ssl::context> tlsContext(std::string& error) const;
  using ConnectionPtr = std::unique_ptr<Connection>;
  // An idle connection still open, or null.
  ConnectionPtr take();
  // A new connection, connected (and TLS handshaken), or null with `error` set
  // ("timeout" when the deadline passed).
  ConnectionPtr open(std::chrono::steady_clock::time_point deadline, std::string& error,
                     const std::atomic<bool>* cancel = nullptr);
  void giveBack(ConnectionPtr connection);

  bool https_ = false;
  std::string host_;
  std::string port_;
  std::string hostHeader_;  // HOST:PORT as in the server URL
  std::string basePath_;    // the server URL's path, put before every request's path
  std::shared_ptr<const TlsMaterial> tls_;
  bool verifyServer_ = true;

  mutable std::mutex tlsMu_;
  mutable std::shared_ptr<boost::asio::ssl::context> tlsContext_;  // GUARDED_BY(tlsMu_)
  mutable TlsMaterial::Pems tlsBuiltFrom_;                         // GUARDED_BY(tlsMu_)
  mutable std::size_t tlsBuilt_ = 0;                               // GUARDED_BY(tlsMu_)

  mutable std::mutex mu_;
  std::vector<ConnectionPtr> idle_;  // GUARDED_BY(mu_)
  std::size_t opened_ = 0;           // GUARDED_BY(mu_)
};

}  // namespace gpufair::k8s::detail
