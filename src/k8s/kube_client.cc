// The implementation of KubeClient: KeepAliveTransport (Boost.Beast, on the
// caller's thread) for one-shot requests and watch streams, AsyncKeepAlive for
// asyncSender()'s, with the bearer token added to each and a 401 retried once
// after the token file changed.
#include <algorithm>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpufair/k8s/client.h"

#include "client_auth.h"
#include "keepalive_async.h"
#include "keepalive_transport.h"

namespace gpufair::k8s {
namespace {

class KubeClientImpl final : public KubeClient,
                             public std::enable_shared_from_this<KubeClientImpl> {
 public:
  KubeClientImpl(const ClientConfig& config, std::shared_ptr<const TlsMaterial> tls)
      : server_(config.server),
        tls_(tls),
        verifyServer_(!config.insecureSkipTlsVerify),
        tokens_(config.token, config.tokenFile),
        transport_(config.server, std::move(tls), verifyServer_) {}

  Status init() { return tokens_.init(); }

  ApiResponse send(const ApiRequest& request) override {
    auto response = sendOnce(request);
    if (response.status == 401 && tokens_.refresh()) response = sendOnce(request);
    return response;
  }

  ApiResponse stream(const ApiRequest& request, const LineHandler& onLine,
                     const std::atomic<bool>& cancel) override {
    auto response = streamOnce(request, onLine, cancel);
    if (response.status == 401 && tokens_.refresh()) response = streamOnce(request, onLine, cancel);
    return response;
  }

  std::string server() const override { return server_; }

  AsyncSenderPtr asyncSender(boost::asio::io_context& context) override;

  std::string authorization() {
    const std::string token = tokens_.current();
    return token.empty() ? "" : "Bearer " + token;
  }

  // Errors name the request: "GET https://10.0.0.1:443/api/v1/pods: no answer
  // within 300 ms".
  ApiResponse named(const ApiRequest& request, ApiResponse response) const {
    if (!response.transportError.empty()) {
      response.transportError = request.method + " " + server_ +
                                request.path.substr(0, request.path.find('?')) + ": " +
                                response.transportError;
    }
    return response;
  }

  bool refreshToken() { return tokens_.refresh(); }

 private:
  ApiResponse sendOnce(const ApiRequest& request) {
    return named(request, transport_.send(request, authorization()));
  }

  ApiResponse streamOnce(const ApiRequest& request, const LineHandler& onLine,
                         const std::atomic<bool>& cancel) {
    return named(request, transport_.stream(request, authorization(), onLine, cancel));
  }

  const std::string server_;
  const std::shared_ptr<const TlsMaterial> tls_;
  const bool verifyServer_;
  TokenSource tokens_;
  detail::KeepAliveTransport transport_;
};

// send() as KubeClientImpl::send does it (token, a 401 retried once after a refresh, errors named),
// over AsyncKeepAlive. What a request in flight needs is held by its handler, not by the sender.
class AsyncSenderImpl final : public AsyncSender {
 public:
  AsyncSenderImpl(std::shared_ptr<KubeClientImpl> client,
                  std::shared_ptr<detail::AsyncKeepAlive> channel)
      : client_(std::move(client)), channel_(std::move(channel)) {}
  ~AsyncSenderImpl() override { channel_->close(); }

  void send(ApiRequest request, ResponseHandler done) override {
    sendOnce(client_, channel_, std::make_shared<const ApiRequest>(std::move(request)),
             std::move(done), /*mayRetry=*/true);
  }
  void close() override { channel_->close(); }

 private:
  static void sendOnce(std::shared_ptr<KubeClientImpl> client,
                       std::shared_ptr<detail::AsyncKeepAlive> channel,
                       std::shared_ptr<const ApiRequest> request, ResponseHandler done,
                       bool mayRetry) {
    const std::string authorization = client->authorization();
    // Named before the handler's captures move the pointers (arguments are evaluated in any order).
    detail::AsyncKeepAlive& sender = *channel;
    const ApiRequest& sent = *request;
    sender.send(
        sent, authorization,
        [client = std::move(client), channel = std::move(channel), request = std::move(request),
         done = std::move(done), mayRetry](ApiResponse response) mutable {
          if (mayRetry && response.status == 401 && client->refreshToken()) {
            return sendOnce(std::move(client), std::move(channel), std::move(request),
                            std::move(done), false);
          }
          done(client->named(*request, std::move(response)));
        });
  }

  std::shared_ptr<KubeClientImpl> client_;
  std::shared_ptr<detail::AsyncKeepAlive> channel_;
};

AsyncSenderPtr KubeClientImpl::asyncSender(boost::asio::io_context& context) {
  return std::make_shared<AsyncSenderImpl>(
      shared_from_this(),
      std::make_shared<detail::AsyncKeepAlive>(context, server_, tls_, verifyServer_));
}

}  // namespace

std::string ApiResponse::describe() const {
  if (!transportError.empty()) return transportError;
  std::string text = "HTTP " + std::to_string(status);
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("message") && json["message"].is_string()) {
    return text + ": " + json["message"].get<std::string>();
  }
  if (body.empty()) return text;
  auto excerpt = body.substr(0, 200);
  std::replace(excerpt.begin(), excerpt.end(), '\n', ' ');
  return text + ": " + excerpt + (body.size() > 200 ? "..." : "");
}

Result<KubeClientPtr> makeKubeClient(const ClientConfig& config) {
  using R = Result<KubeClientPtr>;
  if (config.server.empty()) return R::failure("server: no API server address");
  bool https = config.server.rfind("https://", 0) == 0;
  if (!https && config.server.rfind("http://", 0) != 0) {
    return R::failure("server \"" + config.server + "\" must start with https:// or http://");
  }
  if (auto invalid = detail::KeepAliveTransport::checkServer(config.server); !invalid.empty()) {
    return R::failure("server \"" + config.server + "\" is not a valid URL: " + invalid);
  }
  std::shared_ptr<const TlsMaterial> tls;
  if (https) {
    auto material = TlsMaterial::load(config);
    if (!material) return R::failure(material.error());
    tls = std::make_shared<const TlsMaterial>(std::move(material).value());
  }
  try {
    auto client = std::make_shared<KubeClientImpl>(config, tls);
    if (auto status = client->init(); !status.isOk()) return R::failure(status.reason());
    return KubeClientPtr(std::move(client));
  } catch (const std::exception& e) {
    return R::failure("cannot create a client for " + config.server + ": " + e.what());
  }
}

}  // namespace gpufair::k8s
