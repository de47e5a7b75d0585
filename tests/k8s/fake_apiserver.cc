#include "k8s/fake_apiserver.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "k8s/fake_server_state.h"

namespace gpufair::k8s::fake {
namespace {

using nlohmann::json;

std::string reasonFor(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 429:
      return "TooManyRequests";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "InternalError";
  }
}

// kube-apiserver decodes a POST or PUT body by its Content-Type: JSON, YAML or protobuf; anything
// else (or none) is 415 before the handler runs. PATCH types are checked by the patch handler.
std::optional<HttpResponse> unsupportedBody(const HttpRequest& request) {
  if (request.method != "POST" && request.method != "PUT") return std::nullopt;
  const std::string type = request.contentType.substr(0, request.contentType.find(';'));
  if (type == "application/json" || type == "application/yaml" ||
      type == "application/vnd.kubernetes.protobuf") {
    return std::nullopt;
  }
  return statusResponse(415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml, "
                        "application/vnd.kubernetes.protobuf");
}

bool isWatch(const HttpRequest& request) {
  auto watch = request.queryValue("watch");
  return request.method == "GET" && (watch == "1" || watch == "true");
}

// Auth, injected faults and the request log, then the REST or WATCH handler.
bool handleRequest(FakeApiServer::State& state, const HttpRequest& request, ResponseWriter& out) {
  LoggedRequest entry{request.method,
                      request.target,
                      request.path,
                      request.body,
                      request.contentType,
                      request.token,
                      0};
  std::optional<HttpResponse> early;
  bool closeWithoutAnswer = false;
  {
    std::lock_guard lock(state.mu);
    bool authorized = state.tokens.empty() || request.clientCertVerified ||
                      (!request.token.empty() && std::find(state.tokens.begin(), state.tokens.end(),
                                                           request.token) != state.tokens.end());
    if (!request.hasHost) {
      // Go's HTTP server refuses an HTTP/1.1 request without Host before kube-apiserver sees it.
      early = statusResponse(400, "BadRequest", "missing required Host header");
    } else if (!authorized) {
      early = statusResponse(401, "Unauthorized", "Unauthorized");
    } else if (auto refused = unsupportedBody(request)) {
      early = std::move(refused);
    } else {
      auto query = request.target.substr(request.path.size());
      for (auto& fault : state.faults) {
        if (fault.count <= 0) continue;
        if (!fault.method.empty() && fault.method != request.method) continue;
        if (request.path.rfind(fault.pathPrefix, 0) != 0) continue;
        if (query.find(fault.queryContains) == std::string::npos) continue;
        --fault.count;
        if (fault.status == 0) {
          closeWithoutAnswer = true;
        } else {
          early = statusResponse(fault.status, reasonFor(fault.status), "injected failure");
        }
        break;
      }
    }
    std::erase_if(state.faults, [](const Fault& f) { return f.count <= 0; });
    if (closeWithoutAnswer || early || isWatch(request)) {
      entry.status = early ? early->status : (closeWithoutAnswer ? 0 : 200);
      state.log.push_back(entry);
    }
  }
  if (closeWithoutAnswer) return false;
  if (early) return out.respond(*early);
  if (isWatch(request)) return serveWatch(state, request, out);
  if (request.method != "GET" && state.options.writeLatency.count() > 0) {
    std::this_thread::sleep_for(state.options.writeLatency);  // this connection's thread only
  }
  auto response = handleRest(state, request);
  entry.status = response.status;
  {
    std::lock_guard lock(state.mu);
    state.log.push_back(std::move(entry));
  }
  return out.respond(response);
}

ResourcePath pathOrThrow(const std::string& path) {
  auto where = parseResourcePath(path);
  if (!where) throw std::runtime_error("fake apiserver: not a resource path: " + path);
  return *where;
}

json valueOrThrow(const StoreResult& result, const std::string& what) {
  if (!result.ok()) throw std::runtime_error("fake apiserver: " + what + ": " + result.message);
  return result.object->value;
}

}  // namespace

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : state_(std::make_shared<State>(std::move(options))) {}

FakeApiServer::~FakeApiServer() {
  stop();
}

void FakeApiServer::start() {
  std::lock_guard lock(lifecycle_);
  if (server_) return;
  state_->stopping = false;
  auto* state = state_.get();
  server_ = startHttpServer(state_->port, state_->options.tls, state_->options.requireClientCert,
                            [state](const HttpRequest& request, ResponseWriter& out) {
                              return handleRequest(*state, request, out);
                            });
  state_->port = server_->port();
}

void FakeApiServer::stop() {
  std::lock_guard lock(lifecycle_);
  if (!server_) return;
  state_->stopping = true;
  state_->store.notifyAll();
  server_->stop();
  server_.reset();
}

bool FakeApiServer::running() const {
  std::lock_guard lock(lifecycle_);
  return server_ != nullptr;
}

std::uint16_t FakeApiServer::port() const {
  return state_->port;
}

std::string FakeApiServer::url() const {
  return std::string(state_->options.tls ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(state_->port);
}

void FakeApiServer::setTokens(std::vector<std::string> tokens) {
  std::lock_guard lock(state_->mu);
  state_->tokens = std::move(tokens);
}

json FakeApiServer::create(const std::string& collectionPath, json object) {
  return valueOrThrow(state_->store.create(pathOrThrow(collectionPath), std::move(object)),
                      "create in " + collectionPath);
}

json FakeApiServer::update(const std::string& itemPath, json object) {
  return valueOrThrow(state_->store.update(pathOrThrow(itemPath), std::move(object)),
                      "update " + itemPath);
}

json FakeApiServer::mutate(const std::string& itemPath, const std::function<void(json&)>& change) {
  return valueOrThrow(state_->store.mutate(pathOrThrow(itemPath),
                                           [&](json& object) {
                                             change(object);
                                             return StoreResult{};
                                           }),
                      "mutate " + itemPath);
}

bool FakeApiServer::remove(const std::string& itemPath) {
  return state_->store.remove(pathOrThrow(itemPath)).ok();
}

std::optional<json> FakeApiServer::get(const std::string& itemPath) const {
  auto object = state_->store.get(pathOrThrow(itemPath));
  if (!object) return std::nullopt;
  return object->value;
}

std::vector<json> FakeApiServer::list(const std::string& collectionPath) const {
  std::vector<json> out;
  for (const auto& object : state_->store.snapshot(pathOrThrow(collectionPath)).items) {
    out.push_back(object->value);
  }
  return out;
}

std::uint64_t FakeApiServer::resourceVersion() const {
  return state_->store.resourceVersion();
}

void FakeApiServer::compact() {
  state_->store.compact();
}

void FakeApiServer::setHistoryLimit(std::size_t events) {
  state_->store.setHistoryLimit(events);
}

void FakeApiServer::dropWatches() {
  ++state_->dropGeneration;
  state_->store.notifyAll();
}

void FakeApiServer::expireWatches() {
  ++state_->expireGeneration;
  state_->store.notifyAll();
}

void FakeApiServer::sendBookmarks() {
  ++state_->bookmarkGeneration;
  state_->store.notifyAll();
}

std::size_t FakeApiServer::activeWatches() const {
  return state_->activeWatches;
}

void FakeApiServer::addFault(Fault fault) {
  std::lock_guard lock(state_->mu);
  state_->faults.push_back(std::move(fault));
}

void FakeApiServer::clearFaults() {
  std::lock_guard lock(state_->mu);
  state_->faults.clear();
}

void FakeApiServer::protectFromEviction(const std::string& ns, const std::string& name,
                                        bool protect) {
  std::lock_guard lock(state_->mu);
  if (protect) {
    state_->protectedPods.insert(ns + "/" + name);
  } else {
    state_->protectedPods.erase(ns + "/" + name);
  }
}

std::vector<LoggedRequest> FakeApiServer::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->log;
}

std::vector<LoggedRequest> FakeApiServer::requests(const std::string& method,
                                                   const std::string& pathPrefix) const {
  std::lock_guard lock(state_->mu);
  std::vector<LoggedRequest> out;
  for (const auto& r : state_->log) {
    if ((method.empty() || r.method == method) && r.path.rfind(pathPrefix, 0) == 0) {
      out.push_back(r);
    }
  }
  return out;
}

void FakeApiServer::clearRequests() {
  std::lock_guard lock(state_->mu);
  state_->log.clear();
}

json makePod(const std::string& ns, const std::string& name, const std::string& nodeName,
             const std::map<std::string, std::string>& labels, int gpus) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"schedulerName", "gpufair"},
                {"containers",
                 json::array({{{"name", "main"},
                               {"image", "busybox"},
                               {"resources",
                                {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
              {"status", {{"phase", nodeName.empty() ? "Pending" : "Running"}}}};
  if (!nodeName.empty()) pod["spec"]["nodeName"] = nodeName;
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  return pod;
}

json makeNode(const std::string& name, int gpus) {
  auto count = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"capacity", {{"nvidia.com/gpu", count}, {"cpu", "64"}, {"memory", "512Gi"}}},
            {"allocatable", {{"nvidia.com/gpu", count}, {"cpu", "64"}, {"memory", "512Gi"}}}}}};
}

}  // namespace gpufair::k8s::fake
