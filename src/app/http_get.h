// A small blocking HTTP/1.1 GET for the CLI's views of a running service (top, explain), over
// plain http or https (the webhooks' own port, or a port-forward to it).
// HTTPS verifies the server certificate against --cacert (a CA, or the server's certificate itself,
// as curl accepts it) or the system's CAs, and its name against the URL's host or --server-name;
// it presents --cert/--key when the server requires a client certificate (serve --client-ca).
// Thread-safety: free functions; each call uses its own connection.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gpufair/common/status.h"

#include "cli.h"

namespace gpufair::app {

struct HttpResult {
  int status = 0;
  std::string body;
};

// What an https URL is verified with and presents, named after curl's flags.
struct ClientTls {
  std::string caFile;      // --cacert: PEM; empty: the system's CAs
  std::string certFile;    // --cert: PEM client certificate (chain)
  std::string keyFile;     // --key: its private key
  std::string serverName;  // --server-name: the name the server certificate must carry; empty:
                           // the URL's host
};

// --cacert, --cert, --key and --server-name, for the commands that call httpGet.
std::vector<FlagSpec> clientTlsFlags();
// Reads them; --cert and --key go together. Files are read by httpGet, not here.
Result<ClientTls> readClientTls(const ParsedArgs& args);

// url: "http://HOST:PORT[/prefix]", "https://HOST:PORT[/prefix]" or "HOST:PORT" (http); path is
// appended ("/debug/snapshot"). Fails with a reason in words on a bad URL, a refused connection, a
// failed TLS handshake (saying which flag may help) or a timeout. Any HTTP status is a success
// here; the caller decides what a 404 means.
Result<HttpResult> httpGet(const std::string& url, const std::string& path,
                           const ClientTls& tls = {},
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Percent-encodes a query value ("team-a/x" -> "team-a%2Fx").
std::string urlEncode(const std::string& text);

}  // namespace gpufair::app
