// FakeApiServer: an in-process kube-apiserver for tests, on 127.0.0.1 (port 0 on first start),
// plain HTTP or TLS, speaking the real protocol on the wire:
//  - any resource under /api/v1 and /apis/GROUP/VERSION, cluster-scoped or namespaced
//    (/api/v1/nodes, /api/v1/pods, /api/v1/namespaces/NS/pods, .../configmaps, .../events,
//    /apis/coordination.k8s.io/v1/namespaces/NS/leases, ...): GET, LIST, POST, PUT (409 on a stale
//    metadata.resourceVersion), PATCH (merge, strategic-merge as merge, json-patch), DELETE;
//  - LIST with limit/continue (consistent snapshots; 410 Expired after compact()), labelSelector
//    (k=v, k==v, k!=v, k, !k) and fieldSelector (any dotted path: spec.nodeName=, spec.nodeName!=,
//    metadata.name=, metadata.namespace=, status.phase=);
//  - WATCH (watch=1|true) as a chunked stream of {"type":...,"object":...} lines from a
//    resourceVersion (none or "0": synthetic ADDED for every object first), BOOKMARKs when
//    allowWatchBookmarks (every bookmarkInterval and on sendBookmarks()), ERROR 410 (or HTTP 410)
//    when the resourceVersion is older than the retained history, timeoutSeconds honoured;
//  - POST pods/NAME/binding (201; 409 when already bound), POST pods/NAME/eviction (deletes the
//    pod; 429 when protected by protectFromEviction());
//  - auth: Bearer tokens from `tokens` (401 otherwise; no check while the list is empty); with TLS
//  a
//    verified client certificate also authenticates, and requireClientCert rejects the handshake
//    without one.
// Thread-safety: every member may be called from any thread while the server runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpufair::k8s::fake {

// Certificates generated once per process: a CA, a server certificate for 127.0.0.1/localhost
// signed by it, a client certificate (CN test-user) signed by it, and an unrelated CA.
struct TestPki {
  std::string caPem;
  std::string serverCertPem;
  std::string serverKeyPem;
  std::string clientCertPem;
  std::string clientKeyPem;
  std::string otherCaPem;  // signs nothing the server presents: verification must fail
  std::string caKeyPem;    // for issueTestCert
};
const TestPki& testPki();

// A certificate signed by testPki()'s CA, for tests that need their own names, serial or lifetime.
struct TestCertRequest {
  std::string commonName;
  long serial = 100;
  std::string altNames;                     // "DNS:a,IP:127.0.0.1", or empty
  bool client = false;                      // extended key usage clientAuth, else serverAuth
  long notBeforeSeconds = -3600;            // from now
  long notAfterSeconds = 365L * 24 * 3600;  // from now
  bool rsa = false;                         // an RSA 2048 key instead of EC P-256
};
struct TestCert {
  std::string certPem;
  std::string keyPem;
};
TestCert issueTestCert(const TestCertRequest& request);

struct FakeApiServerOptions {
  bool tls = false;
  bool requireClientCert = false;      // TLS only
  std::vector<std::string> tokens;     // valid Bearer tokens; empty: no authentication needed
  std::size_t historyLimit = 100'000;  // watch events retained; older resourceVersions expire
  std::chrono::milliseconds bookmarkInterval{0};  // 0: bookmarks only on sendBookmarks()
  bool goneAsHttpStatus = false;  // watch from an expired RV: HTTP 410 instead of an ERROR event
  // Every write (POST, PUT, PATCH, DELETE; Bindings included) is carried out and answered only
  // after this long, as a real kube-apiserver answers after its etcd write (ms). Each connection
  // has its own thread, so the wait holds only the connection that asked: other requests and
  // watches go on meanwhile. The object changes (and its watch event goes out) after the wait.
  std::chrono::milliseconds writeLatency{0};
};

struct LoggedRequest {
  std::string method;
  std::string target;  // path and query as sent
  std::string path;    // without the query
  std::string body;
  std::string contentType;
  std::string token;  // the Bearer token presented, if any
  int status = 0;     // the status answered (200 for a watch that started streaming)
};

// The next `count` requests matching method (empty: any), path prefix and a query substring
// (e.g. "watch=" for watches only) are answered with `status` and a Status body; status 0 closes
// the connection without an answer.
struct Fault {
  std::string method;
  std::string pathPrefix;
  std::string queryContains;
  int status = 500;
  int count = 1;
};

class HttpServer;

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Listens (the same port again after stop()); the constructor does not start the server.
  void start();
  // Closes the listener and every connection (watches break mid-stream); the objects remain.
  void stop();
  bool running() const;
  std::uint16_t port() const;
  std::string url() const;  // "http://127.0.0.1:PORT" or "https://..."

  void setTokens(std::vector<std::string> tokens);

  // Objects, bypassing HTTP (they still produce watch events). Paths as on the wire:
  // collection "/api/v1/namespaces/ns/pods", item "/api/v1/namespaces/ns/pods/p". Throw
  // std::runtime_error on failures (exists, not found).
  nlohmann::json create(const std::string& collectionPath, nlohmann::json object);
  nlohmann::json update(const std::string& itemPath, nlohmann::json object);
  nlohmann::json mutate(const std::string& itemPath,
                        const std::function<void(nlohmann::json&)>& change);
  bool remove(const std::string& itemPath);
  std::optional<nlohmann::json> get(const std::string& itemPath) const;
  std::vector<nlohmann::json> list(const std::string& collectionPath) const;
  std::uint64_t resourceVersion() const;
  // Forgets the watch history and list snapshots up to now: older RVs and continue tokens -> 410.
  void compact();
  void setHistoryLimit(std::size_t events);

  // Watches: break every open watch stream mid-stream (no terminating chunk); send a BOOKMARK now
  // on every watch that allowed them; the number of watch streams open.
  void dropWatches();
  // End every open watch with an ERROR event 410 Expired, as an API server does to a watcher
  // that fell too far behind.
  void expireWatches();
  void sendBookmarks();
  std::size_t activeWatches() const;

  void addFault(Fault fault);
  void clearFaults();
  // Evictions of this pod answer 429 TooManyRequests (a PodDisruptionBudget would be violated).
  void protectFromEviction(const std::string& ns, const std::string& name, bool protect = true);

  std::vector<LoggedRequest> requests() const;
  // Requests whose method matches (empty: any) and whose path starts with `pathPrefix`.
  std::vector<LoggedRequest> requests(const std::string& method,
                                      const std::string& pathPrefix) const;
  void clearRequests();

  struct State;

 private:
  std::shared_ptr<State> state_;
  mutable std::mutex lifecycle_;  // start()/stop()
  std::unique_ptr<HttpServer> server_;
};

// Minimal objects for tests. makePod: a pod of scheduler gpufair asking for `gpus` whole GPUs
// (limits nvidia.com/gpu, which Kubernetes copies to requests), Running when bound.
nlohmann::json makePod(const std::string& ns, const std::string& name,
                       const std::string& nodeName = "",
                       const std::map<std::string, std::string>& labels = {}, int gpus = 1);
nlohmann::json makeNode(const std::string& name, int gpus = 8);

}  // namespace gpufair::k8s::fake
