// MetricsServer: serves GET /metrics of a Metrics over HTTP on its own address (prometheus-cpp's
// Exposer, a civetweb server with its own threads), apart from the webhooks.
// Thread-safety: construct and destroy on one thread; port() from any. The Metrics must outlive
// the server.
#pragma once

#include <memory>
#include <string>

#include "gpufair/common/status.h"
#include "gpufair/metrics/metrics.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace gpufair::metrics {

class MetricsServer {
 public:
  // listen: "HOST:PORT" ("[::1]:PORT" for IPv6); port 0 picks a free port. Fails with a reason
  // when the address is malformed or cannot be bound.
  static Result<std::unique_ptr<MetricsServer>> start(const Metrics& metrics,
                                                      const std::string& listen, int threads = 2);
  ~MetricsServer();  // stops serving
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsServer(std::unique_ptr<prometheus::Exposer> exposer, int port);
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_;
};

}  // namespace gpufair::metrics
