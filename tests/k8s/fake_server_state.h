// Internals of FakeApiServer shared by its source files: the request/response types of the HTTP
// layer, the server state, and the handlers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/fake_apiserver.h"
#include "k8s/fake_store.h"

namespace gpufair::k8s::fake {

struct HttpRequest {
  std::string method;
  std::string target;
  std::string path;
  std::map<std::string, std::string> query;  // URL-decoded
  std::string body;
  std::string contentType;
  bool hasHost = false;  // a Host header was sent (HTTP/1.1 requires one)
  std::string token;
  bool clientCertVerified = false;
  std::string queryValue(const std::string& key) const {
    auto it = query.find(key);
    return it == query.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
};

// How a handler answers: one complete response, or a chunked stream (watch).
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual bool respond(const HttpResponse& response) = 0;
  virtual bool beginChunked(int status) = 0;
  virtual bool chunk(std::string_view data) = 0;
  virtual bool endChunked() = 0;
  // The client closed its end (checked without blocking).
  virtual bool peerClosed() = 0;
};

// Returns whether the connection may serve another request.
using RequestHandler = std::function<bool(const HttpRequest&, ResponseWriter&)>;

// The listener and connections: one thread per connection, synchronous Beast.
class HttpServer {
 public:
  virtual ~HttpServer() = default;
  virtual std::uint16_t port() const = 0;
  virtual void stop() = 0;  // closes the listener and every connection, joins their threads
};
std::unique_ptr<HttpServer> startHttpServer(std::uint16_t port, bool tls, bool requireClientCert,
                                            RequestHandler handler);

// Label and field selectors as the API server reads them.
class Selector {
 public:
  static Selector parse(const std::string& labelSelector, const std::string& fieldSelector);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  struct Requirement {
    bool field = false;  // field selector (dotted path) or label
    std::string key;
    std::string op;  // "=", "!=", "exists", "!exists"
    std::string value;
  };
  std::vector<Requirement> requirements_;
};

struct FakeApiServer::State {
  explicit State(FakeApiServerOptions opts)
      : options(std::move(opts)), store(options.historyLimit), tokens(options.tokens) {}

  FakeApiServerOptions options;
  FakeStore store;
  std::uint16_t port = 0;

  mutable std::mutex mu;  // guards the members below
  std::vector<std::string> tokens;
  std::vector<Fault> faults;
  std::set<std::string> protectedPods;  // "ns/name"
  std::vector<LoggedRequest> log;

  std::atomic<std::uint64_t> dropGeneration{0};
  std::atomic<std::uint64_t> bookmarkGeneration{0};
  std::atomic<std::uint64_t> expireGeneration{0};
  std::atomic<std::size_t> activeWatches{0};
  std::atomic<bool> stopping{false};
};

HttpResponse statusResponse(int code, const std::string& reason, const std::string& message);
HttpResponse objectResponse(int code, const ObjectPtr& object);
// GET, LIST, POST, PUT, PATCH, DELETE and the binding and eviction subresources.
HttpResponse handleRest(FakeApiServer::State& state, const HttpRequest& request);
// A WATCH: streams until timeoutSeconds, a drop, the server stopping or the client leaving.
// Returns whether the stream ended cleanly (the connection may be reused).
bool serveWatch(FakeApiServer::State& state, const HttpRequest& request, ResponseWriter& out);

}  // namespace gpufair::k8s::fake
