// KubeClient: the transport to kube-apiserver, and nothing more. It knows where the server is and
// how to authenticate (service account token re-read when it rotates, client certificates, CA
// bundles), sends one request and returns the status and body, or streams a long response line by
// line (watch). Everything Kubernetes-specific on top (list pages, watch events, bindings, patches,
// events, leases, evictions) is written against this interface, so tests drive it with a fake API
// server or a mock. Thread-safety: implementations must allow concurrent send() and stream() calls
// from many threads.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "gpufair/common/status.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gpufair::k8s {

struct ApiRequest {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string path;            // absolute path with query, e.g. "/api/v1/pods?limit=500"
  std::string body;
  std::string contentType = "application/json";  // for PATCH: application/merge-patch+json etc.
  std::chrono::milliseconds timeout{30'000};     // whole request; for stream(): until first byte
  // stream() only, optional: called once with the HTTP status when the response headers arrive,
  // before any line (a reflector uses it to know its watch is established).
  std::function<void(int status)> onResponse;
  // stream() only: while lines keep coming (a read within this long of the one before, then as
  // long as each window ends with data there), the next read waits until this long after the
  // last, so that lines arriving close together are read, and handled, together: one wake-up of
  // the reading thread for several lines instead of one each, for at most this much delay. A line
  // after a quiet spell is read at once. 0: every read as soon as data arrives.
  std::chrono::microseconds batchWindow{0};
};

struct ApiResponse {
  int status = 0;              // HTTP status; 0 when the request never got an answer
  std::string body;            // for stream(): the body of a non-2xx answer only
  std::string transportError;  // connection refused, TLS failure, timeout, stream broken, ...

  bool ok() const { return transportError.empty() && status >= 200 && status < 300; }
  // A one-line description for logs and errors: "HTTP 404: pods \"x\" not found" or the transport
  // error. Never contains credentials.
  std::string describe() const;
};

// Called with each complete line of a streamed body (without the newline). Return false to stop.
using LineHandler = std::function<bool(std::string_view line)>;

using ResponseHandler = std::function<void(ApiResponse response)>;

// One-shot requests sent asynchronously on the threads of an io_context (the webhook server's):
// no thread waits for the answer; `done` runs on one of the context's threads once the answer is
// there (or the request failed: transport error, timeout), exactly once. The request's timeout
// bounds the whole exchange. Its connections (kept alive, pooled apart from send()'s) live on that
// io_context: close() drops the idle ones, and must run before the io_context is destroyed;
// requests in flight then still end (their own timeout at the latest), later ones fail.
// Thread-safety: send() and close() may be called from any thread.
class AsyncSender {
 public:
  virtual ~AsyncSender() = default;
  virtual void send(ApiRequest request, ResponseHandler done) = 0;
  virtual void close() = 0;
};
using AsyncSenderPtr = std::shared_ptr<AsyncSender>;

class KubeClient {
 public:
  virtual ~KubeClient() = default;
  virtual ApiResponse send(const ApiRequest& request) = 0;
  // Streams a long response (watch): calls onLine for each line until the server ends the stream,
  // the connection breaks (transportError set), onLine returns false, or `cancel` becomes true
  // (checked at least every 500 ms). A non-2xx answer is returned with its body and no lines.
  virtual ApiResponse stream(const ApiRequest& request, const LineHandler& onLine,
                             const std::atomic<bool>& cancel) = 0;
  // "https://10.0.0.1:443", for logs.
  virtual std::string server() const = 0;
  // A sender of asynchronous requests on `context`'s threads, with this client's server,
  // credentials and token refresh; null when this client cannot (tests' mocks): callers then use
  // send() on threads of their own.
  virtual AsyncSenderPtr asyncSender(boost::asio::io_context& context) {
    (void)context;
    return nullptr;
  }
};
using KubeClientPtr = std::shared_ptr<KubeClient>;

// Where and how to connect, from a kubeconfig file or the in-cluster environment.
struct ClientConfig {
  std::string server;  // https://host:port
  std::string caData;  // PEM; empty: use caFile or system roots
  std::string caFile;
  std::string clientCertData;  // PEM
  std::string clientKeyData;   // PEM
  std::string clientCertFile;
  std::string clientKeyFile;
  std::string token;      // bearer token
  std::string tokenFile;  // re-read when it changes (service account token rotation)
  bool insecureSkipTlsVerify = false;
  std::string ns;  // the context's (or service account's) namespace, if any
};

// kubeconfig: the current context (or `context` when not empty), its cluster and user.
// Relative file paths are resolved against the kubeconfig's directory. Errors name the field.
Result<ClientConfig> loadKubeconfig(const std::string& path, const std::string& context = "");
Result<ClientConfig> parseKubeconfig(std::string_view yaml, const std::string& baseDir,
                                     const std::string& context = "");
// In-cluster: KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/serviceaccount/{token,
// ca.crt,namespace}. `root` replaces that directory in tests.
Result<ClientConfig> inClusterConfig(
    const std::string& root = "/var/run/secrets/kubernetes.io/serviceaccount");

// The implementation: Boost.Beast over plain HTTP or TLS, run on the calling thread.
Result<KubeClientPtr> makeKubeClient(const ClientConfig& config);

}  // namespace gpufair::k8s
