#include "serve_tls.h"

#include <algorithm>
#include <ctime>
#include <sstream>

namespace gpufair::app {
namespace {

std::string isoTime(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string served(const api::TlsState& tls) {
  return "certificate serial " + tls.serial + " (" + tls.subject + "), valid until " +
         isoTime(tls.notAfter);
}

bool names(const api::TlsState& tls, const std::string& name) {
  return std::find(tls.names.begin(), tls.names.end(), name) != tls.names.end();
}

bool isIp(const std::string& name) {
  return name.find_first_not_of("0123456789.") == std::string::npos ||
         name.find(':') != std::string::npos;
}

}  // namespace

api::HealthDetail tlsDetail(const api::TlsState& tls, std::chrono::system_clock::time_point now) {
  if (!tls.lastError.empty()) {
    return {"tls", false,
            "a changed certificate was refused, the old one stays in service (" + served(tls) +
                "): " + tls.lastError};
  }
  if (tls.notAfter <= now) return {"tls", false, "the served " + served(tls) + " has expired"};
  return {"tls", true, "serving " + served(tls)};
}

Status tlsReadiness(const api::TlsState& tls, std::chrono::system_clock::time_point now) {
  if (!tls.enabled || tls.notAfter > now) return Status::ok();
  std::string reason = "the TLS " + served(tls) + " has expired";
  reason += tls.lastError.empty() ? "; replace the certificate files (they are re-read)"
                                  : "; its replacement was refused: " + tls.lastError;
  return Status::error(reason);
}

metrics::TlsCertificateStatus tlsStatus(const api::TlsState& tls,
                                        std::chrono::system_clock::time_point now) {
  const double seconds = std::chrono::duration<double>(tls.notAfter - now).count();
  return {seconds, tls.reloads, tls.reloadErrors};
}

std::string tryCommands(const api::ServerOptions& server, const api::TlsState& tls,
                        const std::string& host, std::uint16_t port) {
  const std::string path = "/debug/snapshot";
  const std::string filter =
      "/filter -H 'Content-Type: application/json' -d @examples/filter-request.json";
  std::ostringstream out;
  if (!tls.enabled) {
    const std::string url = "http://" + host + ":" + std::to_string(port);
    out << "  try:  curl -s " << url << path << "\n"
        << "        curl -s -X POST " << url << filter << "\n"
        << "        gpufair top --url " << url << "\n";
    return out.str();
  }
  // The URL's host must be a name of the certificate; otherwise name the server by one of its
  // DNS names and connect to the host anyway (curl --resolve, gpufair --server-name).
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[') bare = bare.substr(1, bare.size() - 2);
  std::string serverName;
  if (!names(tls, bare)) {
    auto dns = std::find_if(tls.names.begin(), tls.names.end(),
                            [](const std::string& n) { return !isIp(n); });
    if (dns != tls.names.end()) serverName = *dns;
  }
  const std::string portText = std::to_string(port);
  const std::string hostUrl = "https://" + host + ":" + portText;
  std::string curlTls = "--cacert " + server.tls.certFile;
  std::string curlUrl = hostUrl;
  std::string topTls = "--cacert " + server.tls.certFile;
  if (!serverName.empty()) {
    curlTls += " --resolve " + serverName + ":" + portText + ":" + host;
    curlUrl = "https://" + serverName + ":" + portText;
    topTls += " --server-name " + serverName;
  }
  const bool mutual = !server.tls.clientCaFile.empty();
  if (mutual) {
    curlTls += " --cert CLIENT.pem --key CLIENT-KEY.pem";
    topTls += " --cert CLIENT.pem --key CLIENT-KEY.pem";
  }
  out << "  try:  curl -s " << curlTls << " " << curlUrl << path << "\n"
      << "        curl -s " << curlTls << " -X POST " << curlUrl << filter << "\n"
      << "        gpufair top --url " << hostUrl << " " << topTls << "\n";
  if (mutual) {
    out << "        (CLIENT.pem, CLIENT-KEY.pem: a client certificate and key signed by "
        << server.tls.clientCaFile;
    if (!server.tls.clientAllowedNames.empty()) {
      std::string list;
      for (const auto& n : server.tls.clientAllowedNames) list += (list.empty() ? "" : ", ") + n;
      out << ", with the CN or a DNS name " << list;
    }
    out << ")\n";
  }
  return out.str();
}

}  // namespace gpufair::app
