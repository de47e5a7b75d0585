// The HTTP layer of FakeApiServer: a listener thread and one synchronous Beast session thread per
// connection, plain or TLS. stop() shuts the sockets down (which wakes blocked reads) and joins.
#include <cstdio>
#include <list>
#include <thread>
#include <utility>  // before Boost.Asio, which uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include "k8s/fake_server_state.h"

namespace gpufair::k8s::fake {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string urlDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%' && i + 2 < in.size() && hexValue(in[i + 1]) >= 0 &&
               hexValue(in[i + 2]) >= 0) {
      out += static_cast<char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2]));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

std::map<std::string, std::string> parseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    auto eq = pair.find('=');
    if (!pair.empty()) {
      out[urlDecode(pair.substr(0, eq))] =
          eq == std::string_view::npos ? std::string() : urlDecode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

template <class Stream>
class StreamWriter final : public ResponseWriter {
 public:
  StreamWriter(Stream& stream, int fd, bool keepAlive)
      : stream_(stream), fd_(fd), keepAlive_(keepAlive) {}

  bool respond(const HttpResponse& response) override {
    http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
    res.set(http::field::content_type, response.contentType);
    res.set(http::field::server, "fake-apiserver");
    res.keep_alive(keepAlive_);
    res.body() = response.body;
    res.prepare_payload();
    beast::error_code ec;
    http::write(stream_, res, ec);
    return !ec;
  }
  bool beginChunked(int status) override {
    http::response<http::empty_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(keepAlive_);
    res.chunked(true);
    http::response_serializer<http::empty_body> serializer{res};
    beast::error_code ec;
    http::write_header(stream_, serializer, ec);
    return !ec;
  }
  // The chunk's size line, data and CRLF in one buffer and one write, as Go's net/http flushes
  // them: a buffer sequence would go out as one TLS record per buffer.
  bool chunk(std::string_view data) override {
    if (data.empty()) return true;  // an empty chunk would end the body
    char size[24];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    framed_.assign(size, static_cast<std::size_t>(n)).append(data).append("\r\n");
    beast::error_code ec;
    net::write(stream_, net::buffer(framed_), ec);
    return !ec;
  }
  bool endChunked() override {
    beast::error_code ec;
    net::write(stream_, http::make_chunk_last(), ec);
    return !ec;
  }
  bool peerClosed() override {
    char byte = 0;
    return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

 private:
  Stream& stream_;
  int fd_;
  bool keepAlive_;
  std::string framed_;  // the chunk being written
};

ssl::context makeServerContext(bool requireClientCert) {
  const auto& pki = testPki();
  ssl::context ctx(ssl::context::tls_server);
  ctx.use_certificate_chain(net::buffer(pki.serverCertPem));
  ctx.use_private_key(net::buffer(pki.serverKeyPem), ssl::context::pem);
  ctx.add_certificate_authority(net::buffer(pki.caPem));
  // Ask for a client certificate; without requireClientCert a client may present none.
  ctx.set_verify_mode(requireClientCert ? ssl::verify_peer | ssl::verify_fail_if_no_peer_cert
                                        : ssl::verify_peer);
  ctx.set_verify_callback([](bool preverified, ssl::verify_context&) { return preverified; });
  return ctx;
}

class BeastServer final : public HttpServer {
 public:
  BeastServer(std::uint16_t port, bool tls, bool requireClientCert, RequestHandler handler)
      : tls_(tls), handler_(std::move(handler)), acceptor_(ioc_), sslContext_(ssl::context::tls) {
    if (tls_) sslContext_ = makeServerContext(requireClientCert);
    tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), port);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    acceptThread_ = std::thread([this] { acceptLoop(); });
  }
  ~BeastServer() override { stop(); }

  std::uint16_t port() const override { return port_; }

  void stop() override {
    if (stopped_.exchange(true)) return;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    if (acceptThread_.joinable()) acceptThread_.join();
    beast::error_code ec;
    acceptor_.close(ec);
    std::list<std::shared_ptr<Connection>> connections;
    {
      std::lock_guard lock(mu_);
      for (auto& c : connections_) {
        if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
      }
      connections.swap(connections_);
    }
    for (auto& c : connections) c->thread.join();
  }

 private:
  struct Connection {
    int fd = -1;  // guarded by mu_; -1 once the session closed its socket
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void acceptLoop() {
    while (!stopped_) {
      tcp::socket socket(ioc_);
      beast::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec) {
        if (stopped_) return;
        continue;
      }
      auto connection = std::make_shared<Connection>();
      std::lock_guard lock(mu_);
      reapLocked();
      connection->fd = socket.native_handle();
      connection->thread = std::thread(
          [this, connection, s = std::move(socket)]() mutable { session(*connection, s); });
      connections_.push_back(std::move(connection));
    }
  }

  void reapLocked() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void session(Connection& connection, tcp::socket& socket) {
    if (tls_) {
      ssl::stream<tcp::socket&> stream(socket, sslContext_);
      beast::error_code ec;
      stream.handshake(ssl::stream_base::server, ec);
      if (!ec) {
        X509* peer = SSL_get1_peer_certificate(stream.native_handle());
        bool certOk = peer != nullptr && SSL_get_verify_result(stream.native_handle()) == X509_V_OK;
        X509_free(peer);
        serve(stream, socket.native_handle(), certOk);
      }
    } else {
      serve(socket, socket.native_handle(), false);
    }
    {
      std::lock_guard lock(mu_);
      connection.fd = -1;
      beast::error_code ec;
      socket.close(ec);
    }
    connection.done = true;
  }

  template <class Stream>
  void serve(Stream& stream, int fd, bool clientCertVerified) {
    beast::flat_buffer buffer;
    while (!stopped_) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(256u << 20);
      beast::error_code ec;
      http::read(stream, buffer, parser, ec);
      if (ec) return;
      const auto& req = parser.get();
      HttpRequest request;
      request.method = std::string(req.method_string());
      request.target = std::string(req.target());
      auto q = request.target.find('?');
      request.path = request.target.substr(0, q);
      if (q != std::string::npos) {
        request.query = parseQuery(std::string_view(request.target).substr(q + 1));
      }
      request.body = req.body();
      request.contentType = std::string(req[http::field::content_type]);
      request.hasHost = req.find(http::field::host) != req.end();
      auto auth = std::string(req[http::field::authorization]);
      if (auth.rfind("Bearer ", 0) == 0) request.token = auth.substr(7);
      request.clientCertVerified = clientCertVerified;
      StreamWriter<Stream> writer(stream, fd, req.keep_alive());
      if (!handler_(request, writer) || !req.keep_alive()) return;
    }
  }

  bool tls_;
  RequestHandler handler_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  ssl::context sslContext_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  std::thread acceptThread_;
  std::mutex mu_;
  std::list<std::shared_ptr<Connection>> connections_;
};

}  // namespace

std::unique_ptr<HttpServer> startHttpServer(std::uint16_t port, bool tls, bool requireClientCert,
                                            RequestHandler handler) {
  return std::make_unique<BeastServer>(port, tls, requireClientCert, std::move(handler));
}

}  // namespace gpufair::k8s::fake
