// ExtenderServer: the HTTP/1.1 transport of the webhooks (Boost.Beast, asynchronous, keep-alive) on
// `threads` io threads (one io_context each; connections spread over them in turn), over TLS when
// `tls` names a certificate and key (optionally requiring a client certificate signed by
// `tls.clientCaFile`, as kube-scheduler presents with its extender tlsConfig). Plain HTTP is
// refused on any address but loopback unless allowInsecureHttp is set. Each request is read under
// limits and handed to a RequestHandler; each limit is counted in stats():
//   body over maxBodyBytes            -> 413, connection closed            (bodyTooLarge)
//   header over maxHeaderBytes        -> 431, connection closed            (headerTooLarge)
//   malformed HTTP                    -> 400, connection closed            (malformedRequests)
//   request not complete in readTimeout (counted from its first byte) -> 408, connection closed
//                                                                          (readTimeouts)
//   answer not written in writeTimeout -> connection closed               (writeTimeouts)
//   keep-alive connection silent for idleTimeout -> closed quietly        (idleClosed)
//   more than maxConnections open     -> the request is answered 503, connection closed; beyond
//                                        twice that the connection is closed at once
//                                                                          (connectionsRefused)
//   TLS handshake failed or not done within readTimeout -> closed      (tlsHandshakeFailures)
//   client certificate valid but its CN / DNS names not in tls.clientAllowedNames -> handshake
//                                        refused                        (clientNamesRefused)
// TLS follows Mozilla's "intermediate" policy: TLS 1.2 with ECDHE key exchange and AEAD ciphers
// only (AES-GCM, ChaCha20-Poly1305), and TLS 1.3 with OpenSSL's suites.
// Certificate rotation: every tls.reloadPeriod (and on reloadTls()) the certificate, key and client
// CA files are read again; when their contents changed, a new TLS context is built from them and
// serves every connection accepted from then on; connections already open keep theirs. A change
// that cannot be used (unparsable, key of another certificate, certificate expired) keeps the old
// context in force: logged, counted in TlsState::reloadErrors and reported by tlsState(). A change
// seen by the periodic check is applied or refused once the files are the same at two checks in a
// row, so a certificate and key copied one after the other are not refused half-way.
// All error bodies are {"Error": "..."}. Beast, Asio and OpenSSL stay out of this header.
// Thread-safety: start() and stop() from one controlling thread; port() and stats() from any
// thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/api/http.h"
#include "gpufair/common/status.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gpufair::api {

// PEM files, read at start() and again when they change. An empty certFile means plain HTTP.
struct TlsOptions {
  std::string certFile;      // the server certificate chain, leaf first
  std::string keyFile;       // its private key
  std::string clientCaFile;  // when set, clients must present a certificate this CA signed
  // With clientCaFile: when not empty, only client certificates whose subject CN or one of whose
  // DNS subject alternative names is listed here (exactly) are served.
  std::vector<std::string> clientAllowedNames;
  // How often the files are checked for changes; 0: only when reloadTls() is called.
  std::chrono::milliseconds reloadPeriod{5'000};
  bool enabled() const { return !certFile.empty(); }
};

// The certificate the server presents to new connections, and how rotation went.
struct TlsState {
  bool enabled = false;            // false: plain HTTP, the rest is empty
  std::string serial;              // of the served leaf certificate, hex ("1A2B")
  std::string subject;             // its subject, one line ("CN=gpufair.gpufair-system.svc")
  std::vector<std::string> names;  // its DNS and IP subject alternative names
  std::chrono::system_clock::time_point notAfter;  // its expiry
  std::uint64_t reloads = 0;       // new certificates taken into service since start()
  std::uint64_t reloadErrors = 0;  // changed files refused since start()
  std::string lastError;           // why the files on disk are not served; empty when they are
};

struct ServerOptions {
  std::string listen = "127.0.0.1:8888";  // HOST:PORT; port 0 picks a free port (see port())
  TlsOptions tls;
  bool allowInsecureHttp = false;  // serve plain HTTP on a non-loopback address
  int threads = 2;                 // serve's --threads defaults to 1 (bench/RESULTS.md, speed-io9)
  std::size_t maxBodyBytes = 64u << 20;
  std::size_t maxHeaderBytes = 16u << 10;
  std::chrono::milliseconds readTimeout{10'000};
  std::chrono::milliseconds idleTimeout{90'000};
  std::chrono::milliseconds writeTimeout{10'000};
  std::size_t maxConnections = 1024;
  std::chrono::milliseconds drainTimeout{5'000};  // stop(): how long requests in flight may finish
};

// What the server refused or cut short since start(), for metrics. Monotonic counters.
struct ServerStats {
  std::atomic<std::uint64_t> connectionsAccepted{0};
  std::atomic<std::uint64_t> connectionsRefused{0};  // over maxConnections: 503, or dropped
  std::atomic<std::uint64_t> bodyTooLarge{0};        // 413
  std::atomic<std::uint64_t> headerTooLarge{0};      // 431
  std::atomic<std::uint64_t> malformedRequests{0};   // 400: not HTTP/1.1 a parser accepts
  std::atomic<std::uint64_t> readTimeouts{0};        // 408
  std::atomic<std::uint64_t> writeTimeouts{0};       // answer not taken by the client in time
  std::atomic<std::uint64_t> idleClosed{0};          // keep-alive connections closed when idle
  std::atomic<std::uint64_t> tlsHandshakeFailures{0};
  std::atomic<std::uint64_t> clientNamesRefused{0};  // CA-signed, but not an allowed name
  std::atomic<std::uint64_t> handlerErrors{0};       // 500: the handler threw
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

  // Reads the TLS files, binds, listens and starts the io threads. Fails (address in use, bad
  // listen address, bad options, unreadable or mismatched certificate and key, plain HTTP on a
  // non-loopback address without allowInsecureHttp) without starting anything.
  Status start();
  // Stops accepting, lets requests in flight finish (up to drainTimeout), closes idle connections
  // and joins the io threads. Idempotent.
  void stop();
  // The bound port (the real one when listen asked for port 0); 0 before start().
  std::uint16_t port() const;
  bool tls() const;
  const ServerStats& stats() const;
  // Reads the TLS files now and serves a changed, usable set to new connections (for SIGHUP).
  // Ok when the files are served (changed or not); the error says why a change was refused (the
  // old certificate stays). Ok without TLS. Thread-safe.
  Status reloadTls();
  // Thread-safe.
  TlsState tlsState() const;
  // The io_contexts the io threads run, one per thread (from start() until stop()), for work that
  // should run on them too: the Binding's asynchronous exchange (k8s::KubeBinder::bindOn, one
  // sender per context; a /bind sends on its own connection's context). Destroyed with the server.
  std::vector<boost::asio::io_context*> contexts();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufair::api
