// A small blocking HTTP/1.1 GET for the CLI's views of a running service (top, explain).
// Plain http only: the webhooks' own port, or a port-forward to it.
// Thread-safety: a free function; each call uses its own connection.
#pragma once

#include <chrono>
#include <string>

#include "gpufair/common/status.h"

namespace gpufair::app {

struct HttpResult {
  int status = 0;
  std::string body;
};

// url: "http://HOST:PORT[/prefix]" (or "HOST:PORT"); path is appended ("/debug/snapshot").
// Fails with a reason in words on a bad URL, a refused connection or a timeout. Any HTTP status
// is a success here; the caller decides what a 404 means.
Result<HttpResult> httpGet(const std::string& url, const std::string& path,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Percent-encodes a query value ("team-a/x" -> "team-a%2Fx").
std::string urlEncode(const std::string& text);

}  // namespace gpufair::app
