#include "gpufair/api/extender_service.h"

#include <chrono>
#include <exception>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "gpufair/api/debug_snapshot.h"
#include "gpufair/api/explain.h"
#include "gpufair/api/wire.h"

namespace gpufair::api {
namespace {

enum class Verb { kFilter, kPrioritize, kPreempt, kBind, kHealthz, kReadyz, kSnapshot, kExplain };

struct Route {
  std::string_view path;
  std::string_view method;
  Verb verb;
  std::string_view label;  // the verb label of request metrics
};

constexpr Route kRoutes[] = {
    {"/filter", "POST", Verb::kFilter, "filter"},
    {"/prioritize", "POST", Verb::kPrioritize, "prioritize"},
    {"/preempt", "POST", Verb::kPreempt, "preempt"},
    {"/bind", "POST", Verb::kBind, "bind"},
    {"/healthz", "GET", Verb::kHealthz, "healthz"},
    {"/readyz", "GET", Verb::kReadyz, "readyz"},
    {"/debug/snapshot", "GET", Verb::kSnapshot, "debug_snapshot"},
    {"/debug/explain", "GET", Verb::kExplain, "debug_explain"},
};

Response jsonResponse(int status, const nlohmann::json& body) {
  Response response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return response;
}

}  // namespace

Response errorResponse(int status, std::string_view message) {
  Response response;
  response.status = status;
  encodeErrorResult(message, response.body);
  return response;
}

ExtenderService::ExtenderService(state::Mirror& mirror, const policy::Scorer& scorer,
                                 state::Binder& binder, ReadinessCheck readiness)
    : mirror_(mirror), scorer_(scorer), binder_(binder), readiness_(std::move(readiness)) {}

Response ExtenderService::handle(const Request& request) {
  if (requestObserver_ == nullptr) return dispatch(request, nullptr);
  const auto start = std::chrono::steady_clock::now();
  std::string_view verb = "unknown";
  Response response = dispatch(request, &verb);
  observeRequest(verb, response.status, start);
  return response;
}

void ExtenderService::observeRequest(std::string_view verb, int status,
                                     std::chrono::steady_clock::time_point start) const {
  if (requestObserver_ == nullptr) return;
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  requestObserver_->observe(verb, resultLabel(status), took.count());
}

Response ExtenderService::dispatch(const Request& request, std::string_view* verb) {
  const std::string_view path = request.target.substr(0, request.target.find('?'));
  const Route* route = nullptr;
  for (const auto& candidate : kRoutes) {
    if (candidate.path == path) route = &candidate;
  }
  if (route == nullptr) {
    spdlog::info("{} {}: no such endpoint", request.method, path);
    return errorResponse(404, "no such endpoint: " + std::string(path));
  }
  if (verb != nullptr) *verb = route->label;
  if (request.method != route->method) {
    spdlog::info("{} {}: method not allowed", request.method, path);
    auto response =
        errorResponse(405, std::string(path) + " accepts " + std::string(route->method) + " only");
    response.headers.emplace_back("Allow", std::string(route->method));
    return response;
  }
  switch (route->verb) {
    case Verb::kFilter:
      return filter(request.body);
    case Verb::kPrioritize:
      return prioritize(request.body);
    case Verb::kPreempt:
      return preempt(request.body);
    case Verb::kBind:
      return bind(request.body);
    case Verb::kHealthz:
      return healthz();
    case Verb::kReadyz:
      return readyz();
    case Verb::kSnapshot:
      return debugSnapshot();
    case Verb::kExplain:
      return debugExplain(request.target);
  }
  return errorResponse(404, "no such endpoint: " + std::string(path));
}

Status ExtenderService::decisionsAllowed() const {
  if (!gate_) return Status::ok();
  Status allowed;
  try {
    allowed = gate_();
  } catch (const std::exception& e) {
    allowed = Status::error(std::string("the readiness check failed: ") + e.what());
  }
  if (allowed.isOk()) return allowed;
  return Status::error("gpufair is starting: " + allowed.reason() +
                       "; no decision on a partial view of the cluster, kube-scheduler retries");
}

Response ExtenderService::healthz() const {
  Response response;
  response.body = R"({"status":"ok"})";
  return response;
}

Response ExtenderService::readyz() const {
  Status ready;
  if (readiness_) {
    try {
      ready = readiness_();
    } catch (const std::exception& e) {
      ready = Status::error(std::string("readiness check failed: ") + e.what());
    }
  }
  nlohmann::json body = ready.isOk()
                            ? nlohmann::json{{"status", "ready"}}
                            : nlohmann::json{{"status", "not ready"}, {"reason", ready.reason()}};
  if (details_) {
    nlohmann::json checks = nlohmann::json::array();
    try {
      for (const HealthDetail& detail : details_()) {
        checks.push_back({{"name", detail.name}, {"ok", detail.ok}, {"message", detail.message}});
      }
    } catch (const std::exception& e) {
      checks.push_back({{"name", "health-details"}, {"ok", false}, {"message", e.what()}});
    }
    body["checks"] = std::move(checks);
  }
  if (ready.isOk()) return jsonResponse(200, body);
  spdlog::info("readyz: not ready: {}", ready.reason());
  return jsonResponse(503, body);
}

Response ExtenderService::debugSnapshot() const {
  Response response;
  response.body = renderSnapshotJson(*mirror_.snapshot());
  return response;
}

Response ExtenderService::debugExplain(std::string_view target) const {
  const std::optional<std::string> pod = queryParameter(target, "pod");
  if (!pod || pod->find('/') == std::string::npos) {
    return errorResponse(400, "/debug/explain needs ?pod=NAMESPACE/NAME");
  }
  auto explained = renderExplainJson(*mirror_.snapshot(), *pod, scorer_);
  if (!explained) return errorResponse(404, explained.error());
  Response response;
  response.body = std::move(explained.value());
  return response;
}

}  // namespace gpufair::api
