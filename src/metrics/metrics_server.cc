#include "gpufair/metrics/metrics_server.h"

#include <charconv>
#include <exception>

#include <prometheus/exposer.h>

namespace gpufair::metrics {
namespace {

// Checks HOST:PORT (or [V6]:PORT) before civetweb sees it: civetweb's own errors are terse.
Status checkListen(const std::string& listen) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::error("metrics address \"" + listen + "\" is not HOST:PORT");
  }
  const std::string_view port = std::string_view(listen).substr(colon + 1);
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535) {
    return Status::error("metrics address \"" + listen + "\": port must be 0..65535");
  }
  const std::string_view host = std::string_view(listen).substr(0, colon);
  if (host.find(':') != std::string_view::npos && (host.front() != '[' || host.back() != ']')) {
    return Status::error("metrics address \"" + listen + "\": write IPv6 hosts as [ADDR]:PORT");
  }
  return Status::ok();
}

}  // namespace

MetricsServer::MetricsServer(std::unique_ptr<prometheus::Exposer> exposer, int port)
    : exposer_(std::move(exposer)), port_(port) {}

MetricsServer::~MetricsServer() = default;

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const Metrics& metrics,
                                                            const std::string& listen,
                                                            int threads) {
  using R = Result<std::unique_ptr<MetricsServer>>;
  if (Status ok = checkListen(listen); !ok.isOk()) return R::failure(ok.reason());
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen, "num_threads", std::to_string(std::max(1, threads))});
  } catch (const std::exception& e) {
    return R::failure("cannot serve metrics on " + listen + ": " + e.what());
  }
  for (const auto& collectable : metrics.collectables()) exposer->RegisterCollectable(collectable);
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty()) return R::failure("cannot serve metrics on " + listen + ": no port bound");
  return R(std::unique_ptr<MetricsServer>(new MetricsServer(std::move(exposer), ports.front())));
}

}  // namespace gpufair::metrics
