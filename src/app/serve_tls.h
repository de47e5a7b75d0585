// What serve says about its TLS certificate: the /readyz check and readiness rule, the metrics'
// view, and the start-up banner's commands, which work as printed, TLS or not.
// Readiness: a refused certificate change does not make gpufair unready while the certificate in
// service is valid (the webhooks work; the check "tls" says what was refused); an expired
// certificate in service does, since no kube-scheduler accepts it.
// Thread-safety: free functions over values.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/server.h"
#include "gpufair/common/status.h"
#include "gpufair/metrics/metrics.h"

namespace gpufair::app {

api::HealthDetail tlsDetail(const api::TlsState& tls, std::chrono::system_clock::time_point now =
                                                          std::chrono::system_clock::now());
Status tlsReadiness(const api::TlsState& tls,
                    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
metrics::TlsCertificateStatus tlsStatus(
    const api::TlsState& tls,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// The banner's "try:" lines for the webhooks at https?://host:port. With TLS they trust the served
// certificate file (--cacert, as curl and gpufair accept a server certificate there), name the
// server as its certificate does, and with client certificates required present CLIENT.pem and
// CLIENT-KEY.pem, which a last line says how to get (gpufair has no client key to offer).
std::string tryCommands(const api::ServerOptions& server, const api::TlsState& tls,
                        const std::string& host, std::uint16_t port);

}  // namespace gpufair::app
