// gmock KubeClient for the k8s unit tests, and helpers to answer like kube-apiserver.
#pragma once

#include <atomic>
#include <string>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "gpufair/k8s/client.h"

namespace gpufair::k8s::testing {

class MockKubeClient : public KubeClient {
 public:
  MOCK_METHOD(ApiResponse, send, (const ApiRequest& request), (override));
  MOCK_METHOD(ApiResponse, stream,
              (const ApiRequest& request, const LineHandler& onLine,
               const std::atomic<bool>& cancel),
              (override));
  MOCK_METHOD(std::string, server, (), (const, override));
};

inline ApiResponse reply(int status, std::string body = "{}") {
  ApiResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

// A metav1.Status failure as kube-apiserver writes it.
inline ApiResponse statusReply(int code, const std::string& reason, const std::string& message) {
  nlohmann::json status = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                           {"message", message}, {"reason", reason},   {"code", code}};
  return reply(code, status.dump());
}

inline ApiResponse transportFailure(std::string error) {
  ApiResponse response;
  response.transportError = std::move(error);
  return response;
}

// The JSON body of a request; fails the test (and returns null) when it does not parse.
inline nlohmann::json body(const ApiRequest& request) {
  nlohmann::json parsed = nlohmann::json::parse(request.body, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << request.body;
  return parsed;
}

}  // namespace gpufair::k8s::testing
