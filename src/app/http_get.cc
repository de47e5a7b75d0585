#include "http_get.h"

#include <cctype>
#include <exception>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "gpufair/k8s/api.h"

namespace gpufair::app {
namespace {

struct Url {
  std::string host;
  std::string port = "80";
  std::string prefix;
};

Result<Url> parseUrl(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0) {
    return Result<Url>::failure("--url " + text +
                                ": https is not supported; use the plain http address");
  }
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  if (rest.find("://") != std::string::npos) {
    return Result<Url>::failure("--url " + text + ": only http:// URLs are supported");
  }
  Url url;
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

}  // namespace

Result<HttpResult> httpGet(const std::string& urlText, const std::string& path,
                           std::chrono::milliseconds timeout) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  auto url = parseUrl(urlText);
  if (!url) return Result<HttpResult>::failure(url.error());
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(url->host, url->port));
    http::request<http::empty_body> request(http::verb::get, url->prefix + path, 11);
    request.set(http::field::host, url->host);
    request.set(http::field::user_agent, "gpufair-cli");
    request.set(http::field::accept, "application/json");
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1u << 30);
    http::read(stream, buffer, parser);
    beast::error_code ignored;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    return HttpResult{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const std::exception& e) {
    return Result<HttpResult>::failure("cannot GET " + urlText + path + ": " + e.what());
  }
}

std::string urlEncode(const std::string& text) {
  return k8s::escapeQueryValue(text);
}

}  // namespace gpufair::app
