#include <charconv>
#include <stdexcept>
#include <string_view>

#include "keepalive_connection.h"

namespace gpufair::k8s::detail {
namespace {

struct ServerParts {
  bool https = false;
  std::string host;        // without brackets
  std::string port;        // "443" when the URL has none
  std::string hostHeader;  // as in the URL
  std::string basePath;    // a path the URL has, without a trailing '/'
  std::string error;       // why the URL is unusable, or ""
};

ServerParts parseServer(std::string_view server) {
  ServerParts parts;
  parts.https = server.rfind("https://", 0) == 0;
  if (!parts.https && server.rfind("http://", 0) != 0) {
    parts.error = "not http:// or https://";
    return parts;
  }
  server.remove_prefix(parts.https ? 8 : 7);
  const auto slash = server.find('/');
  std::string_view authority = server.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = server.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    parts.basePath = path;
  }
  parts.hostHeader = authority;
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      parts.error = "no closing ] after an IPv6 address";
      return parts;
    }
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      parts.error = "unexpected text after the IPv6 address";
      return parts;
    }
    if (!after.empty()) port = after.substr(1);
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) parts.error = "empty port";
  }
  if (host.empty() || host.find_first_of(" @?#") != std::string_view::npos) {
    parts.error = "no usable host";
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (!port.empty() && (ec != std::errc() || end != port.data() + port.size() || value > 65535)) {
    parts.error = "port \"" + std::string(port) + "\" is not a number from 0 to 65535";
  }
  parts.host = host;
  parts.port = port.empty() ? (parts.https ? "443" : "80") : std::string(port);
  return parts;
}

using ResponseParser = http::response_parser<http::string_body>;

// Feeds the parser what the buffer holds, as Beast's read does.
error_code parseBuffered(beast::flat_buffer& buffer, ResponseParser& parser) {
  while (buffer.size() > 0 && !parser.is_done()) {
    error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) return {};
    if (ec) return ec;
    if (used == 0) return {};
  }
  return {};
}

// One request and its answer on a plain TCP connection, with the socket calls themselves: send,
// then poll and recv until the parser has the whole answer. Through the connection's io_context the
// same exchange cost two epoll_wait calls per answer (a poll of the queue, then the wait), and
// asio's operation state; here it is one poll and one recv. Errors as Beast's read gives them:
// end_of_stream when the server closed before any byte of the answer, partial_message when it
// closed in the middle, beast::error::timeout at the deadline.
error_code exchangePlain(int fd, std::string_view outgoing, SteadyClock::time_point deadline,
                         beast::flat_buffer& buffer, ResponseParser& parser) {
  std::size_t sent = 0;
  for (;;) {
    if (auto ec = sendWhatFits(fd, outgoing, sent)) return ec;
    if (sent == outgoing.size()) break;
    if (auto ec = waitReady(fd, POLLOUT, deadline)) return ec;
  }
  for (;;) {
    if (auto ec = parseBuffered(buffer, parser)) return ec;
    if (parser.is_done()) return {};
    if (auto ec = waitReady(fd, POLLIN, deadline)) return ec;
    const auto space = buffer.prepare(kReadChunk);
    const ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
    if (n > 0) {
      buffer.commit(static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) {
      if (!parser.got_some()) return http::error::end_of_stream;
      error_code ec;
      parser.put_eof(ec);  // a body without a length ends here; anything else is cut short
      return ec;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    return lastError();
  }
}

}  // namespace

std::string KeepAliveTransport::checkServer(const std::string& server) {
  return parseServer(server).error;
}

KeepAliveTransport::KeepAliveTransport(const std::string& server,
                                       std::shared_ptr<const TlsMaterial> tls, bool verifyServer)
    : tls_(std::move(tls)), verifyServer_(verifyServer) {
  ServerParts parts = parseServer(server);
  https_ = parts.https;
  host_ = std::move(parts.host);
  port_ = std::move(parts.port);
  hostHeader_ = std::move(parts.hostHeader);
  basePath_ = std::move(parts.basePath);
}

KeepAliveTransport::~KeepAliveTransport() = default;

std::size_t KeepAliveTransport::tlsContextsBuilt() const {
  std::lock_guard lock(tlsMu_);
  return tlsBuilt_;
}

std::size_t KeepAliveTransport::connectionsOpened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

KeepAliveTransport::ConnectionPtr KeepAliveTransport::take() {
  return takeStillOpen(mu_, idle_);
}

void KeepAliveTransport::giveBack(ConnectionPtr connection) {
  connection->reused = true;
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(connection));
}

std::shared_ptr<ssl::context> KeepAliveTransport::tlsContext(std::string& error) const {
  if (!https_) return nullptr;
  try {
    TlsMaterial::Pems pems = tls_ ? tls_->read() : TlsMaterial::Pems{};  // throws: unreadable
    std::lock_guard lock(tlsMu_);
    if (tlsContext_ != nullptr && pems == tlsBuiltFrom_) return tlsContext_;
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    if (verifyServer_) {
      // The system roots only when no CA bundle is configured: a bundle replaces the store (as
      // client-go trusts only the kubeconfig's CA when it names one).
      error_code ignored;
      if (tls_ == nullptr || !tls_->hasCa()) context->set_default_verify_paths(ignored);
      context->set_verify_mode(ssl::verify_peer);
    } else {
      context->set_verify_mode(ssl::verify_none);
    }
    if (tls_) tls_->configure(*context, pems);
    tlsContext_ = context;
    tlsBuiltFrom_ = std::move(pems);
    ++tlsBuilt_;
    return context;
  } catch (const std::exception& e) {
    ERR_clear_error();
    error = e.what();
    return nullptr;
  }
}

KeepAliveTransport::ConnectionPtr KeepAliveTransport::open(SteadyClock::time_point deadline,
                                                           std::string& error,
                                                           const std::atomic<bool>* cancel) {
  std::shared_ptr<ssl::context> context = tlsContext(error);
  if (https_ && !context) return nullptr;
  auto connection = std::make_unique<Connection>(std::move(context));
  if (auto* tls = connection->tls()) nameServer(*tls, host_, verifyServer_);
  error_code ec;
  tcp::resolver resolver(connection->tcpStream().get_executor());
  const auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) {
    error = "cannot resolve " + host_ + ": " + ec.message();
    return nullptr;
  }
  {
    std::lock_guard lock(mu_);
    ++opened_;
  }
  const auto failed = [&](const char* what) {
    error = ec == beast::error::timeout ? "timeout"
            : ec == kCancelled          ? "cancelled"
                                        : what + ec.message();
    return nullptr;
  };
  ec = connection->run(
      deadline,
      [&](auto&, auto& finish) {
        connection->tcpStream().async_connect(
            endpoints, [&finish](error_code e, const tcp::endpoint&) { finish(e); });
      },
      cancel);
  if (ec) return failed("cannot connect: ");
  error_code ignored;
  connection->tcpStream().socket().set_option(tcp::no_delay(true), ignored);
  if (auto* tls = connection->tls()) {
    ec = connection->run(
        deadline,
        [&](auto&, auto& finish) {
          tls->async_handshake(ssl::stream_base::client, [&finish](error_code e) { finish(e); });
        },
        cancel);
    if (ec) return failed("TLS handshake failed: ");
  }
  return connection;
}

std::string formatRequest(const ApiRequest& request, std::string_view target,
                          std::string_view hostHeader, const std::string& authorization) {
  const std::string_view method = request.method;
  const bool sendsBody = !request.body.empty() || method == "POST" || method == "PUT";
  const bool typed = sendsBody || method == "PATCH";
  std::string text;
  text.reserve(160 + target.size() + authorization.size() + request.body.size());
  text.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ");
  text.append(hostHeader).append("\r\nAccept: application/json\r\nUser-Agent: gpufair/0.1\r\n");
  if (!authorization.empty()) text.append("Authorization: ").append(authorization).append("\r\n");
  if (typed) text.append("Content-Type: ").append(request.contentType).append("\r\n");
  if (sendsBody || method == "OPTIONS") {
    text.append("Content-Length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  text.append("\r\n").append(request.body);
  return text;
}

ApiResponse KeepAliveTransport::send(const ApiRequest& request, const std::string& authorization) {
  const auto deadline = deadlineAfter(request.timeout);
  const std::string outgoing =
      formatRequest(request, basePath_ + request.path, hostHeader_, authorization);
  // At most two attempts: the second only after a reused connection turned out
  // closed.
  for (int attempt = 0; attempt < 2; ++attempt) {
    ConnectionPtr connection = attempt == 0 ? take() : nullptr;
    if (!connection) {
      std::string error;
      connection = open(deadline, error);
      if (!connection) return transportError(error == "timeout" ? noAnswer(request) : error);
    }
    ResponseParser parser;
    parser.body_limit(kNoBodyLimit);
    parser.header_limit(kHeaderLimit);
    const error_code ec =
        connection->tls() == nullptr
            ? exchangePlain(connection->tcpStream().socket().native_handle(), outgoing, deadline,
                            connection->buffer(), parser)
            : connection->run(deadline, [&](auto& stream, auto& finish) {
                asio::async_write(stream, asio::buffer(outgoing), [&](error_code e, std::size_t) {
                  if (e) return finish(e);
                  http::async_read(stream, connection->buffer(), parser,
                                   [&finish](error_code r, std::size_t) { finish(r); });
                });
              });
    if (ec) {
      if (ec == beast::error::timeout) return transportError(noAnswer(request));
      if (connection->reused && !parser.got_some() && closedWhileIdle(ec)) continue;
      return transportError(ec.message());
    }
    auto response = parser.release();
    ApiResponse out;
    out.status = static_cast<int>(response.result_int());
    out.body = std::move(response.body());
    if (response.keep_alive() && connection->buffer().size() == 0) {
      giveBack(std::move(connection));
    }
    return out;
  }
  return transportError("the connection was closed before an answer");
}

}  // namespace gpufair::k8s::detail
