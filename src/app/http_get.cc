#include "http_get.h"

#include <cctype>
#include <exception>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "gpufair/k8s/api.h"

namespace gpufair::app {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct Url {
  bool https = false;
  std::string host;
  std::string port;
  std::string prefix;
};

Result<Url> parseUrl(const std::string& text) {
  std::string rest = text;
  Url url;
  if (rest.rfind("https://", 0) == 0) {
    url.https = true;
    rest = rest.substr(8);
  } else if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  }
  if (rest.find("://") != std::string::npos) {
    return Result<Url>::failure("--url " + text + ": only http:// and https:// URLs are supported");
  }
  url.port = url.https ? "443" : "80";
  const std::size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
    rest = rest.substr(0, slash);
  }
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string::npos) return Result<Url>::failure("--url " + text + ": unclosed [");
    url.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() == ':')
      url.port = rest.substr(1);
    else if (!rest.empty())
      return Result<Url>::failure("--url " + text + ": bad host");
  } else {
    const std::size_t colon = rest.rfind(':');
    url.host = rest.substr(0, colon);
    if (colon != std::string::npos) url.port = rest.substr(colon + 1);
  }
  if (url.host.empty()) return Result<Url>::failure("--url " + text + ": no host");
  if (url.port.empty() || url.port.find_first_not_of("0123456789") != std::string::npos) {
    return Result<Url>::failure("--url " + text + ": the port must be a number");
  }
  return url;
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// Sends the GET and reads the answer on a connected (and, for https, handshaken) stream.
template <typename Stream>
HttpResult exchange(Stream& stream, const Url& url, const std::string& path) {
  http::request<http::empty_body> request(http::verb::get, url.prefix + path, 11);
  request.set(http::field::host, url.host);
  request.set(http::field::user_agent, "gpufair-cli");
  request.set(http::field::accept, "application/json");
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1u << 30);
  http::read(stream, buffer, parser);
  return HttpResult{static_cast<int>(parser.get().result_int()), parser.get().body()};
}

// A client context: TLS 1.2 or newer, the server verified against --cacert or the system's CAs
// (a certificate in --cacert is trusted itself, CA or not, as curl does), --cert/--key presented.
void configure(asio::ssl::context& context, const ClientTls& tls) {
  auto check = [](const boost::system::error_code& ec, const std::string& what) {
    if (ec) throw std::runtime_error(what + ": " + ec.message());
  };
  boost::system::error_code ec;
  SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
  if (tls.caFile.empty()) {
    context.set_default_verify_paths(ec);
    check(ec, "the system's CAs");
  } else {
    context.load_verify_file(tls.caFile, ec);
    check(ec, "--cacert " + tls.caFile);
    X509_STORE_set_flags(SSL_CTX_get_cert_store(context.native_handle()),
                         X509_V_FLAG_PARTIAL_CHAIN);
  }
  context.set_verify_mode(asio::ssl::verify_peer);
  if (!tls.certFile.empty()) {
    context.use_certificate_chain_file(tls.certFile, ec);
    check(ec, "--cert " + tls.certFile);
    context.use_private_key_file(tls.keyFile, asio::ssl::context::pem, ec);
    check(ec, "--key " + tls.keyFile + " (of --cert " + tls.certFile + ")");
  }
}

constexpr const char* kTlsHint =
    "; check --cacert (the CA of the server's certificate, or that certificate), --cert and --key "
    "(a client certificate the server accepts) and --server-name (a name the server's certificate "
    "carries, when the URL's host is not one)";

HttpResult httpsGet(asio::io_context& io, const Url& url, const std::string& path,
                    const ClientTls& tls, std::chrono::milliseconds timeout) {
  asio::ssl::context context(asio::ssl::context::tls_client);
  configure(context, tls);
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  const std::string name = tls.serverName.empty() ? url.host : tls.serverName;
  SSL* ssl = stream.native_handle();
  if (isIpAddress(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name.c_str());
    SSL_set1_host(ssl, name.c_str());
  }
  asio::ip::tcp::resolver resolver(io);
  beast::get_lowest_layer(stream).expires_after(timeout);
  beast::get_lowest_layer(stream).connect(resolver.resolve(url.host, url.port));
  boost::system::error_code ec;
  stream.handshake(asio::ssl::stream_base::client, ec);
  if (ec) {
    const long verify = SSL_get_verify_result(ssl);
    std::string why = ec.message();
    if (verify != X509_V_OK) why += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
    throw std::runtime_error("TLS handshake failed: " + why + kTlsHint);
  }
  try {
    HttpResult result = exchange(stream, url, path);
    stream.shutdown(ec);  // a server that closes without close_notify is no error here
    return result;
  } catch (const boost::system::system_error& e) {
    // TLS 1.3 finishes the client's side of the handshake before the server checks the client's
    // certificate: a refusal ends the first read.
    if (e.code().category() != asio::error::get_ssl_category() &&
        e.code() != asio::ssl::error::stream_truncated) {
      throw;
    }
    throw std::runtime_error("the server ended the TLS connection: " + e.code().message() +
                             kTlsHint);
  }
}

}  // namespace

std::vector<FlagSpec> clientTlsFlags() {
  return {{"cacert",
           "https: trust this PEM CA (or the server's own certificate, e.g. serve's --tls-cert) "
           "instead of the system's CAs",
           ""},
          {"cert", "https: present this PEM client certificate (serve --client-ca)", ""},
          {"key", "https: the private key of --cert", ""},
          {"server-name",
           "https: the name the server certificate must carry, when the URL's host is not one "
           "(e.g. a port-forward to 127.0.0.1)",
           ""}};
}

Result<ClientTls> readClientTls(const ParsedArgs& args) {
  if (args.has("cert") != args.has("key")) {
    return Result<ClientTls>::failure("--cert and --key go together");
  }
  ClientTls tls;
  if (args.has("cacert")) tls.caFile = args.get("cacert");
  if (args.has("cert")) tls.certFile = args.get("cert");
  if (args.has("key")) tls.keyFile = args.get("key");
  if (args.has("server-name")) tls.serverName = args.get("server-name");
  return tls;
}

Result<HttpResult> httpGet(const std::string& urlText, const std::string& path,
                           const ClientTls& tls, std::chrono::milliseconds timeout) {
  auto url = parseUrl(urlText);
  if (!url) return Result<HttpResult>::failure(url.error());
  try {
    asio::io_context io;
    if (url->https) return httpsGet(io, *url, path, tls, timeout);
    asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(url->host, url->port));
    HttpResult result = exchange(stream, *url, path);
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    return result;
  } catch (const std::exception& e) {
    return Result<HttpResult>::failure("cannot GET " + urlText + path + ": " + e.what());
  }
}

std::string urlEncode(const std::string& text) {
  return k8s::escapeQueryValue(text);
}

}  // namespace gpufair::app
