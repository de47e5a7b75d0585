// Shared pieces of the HTTPS tests: PEM files in a temporary directory (rewritable, as a
// certificate rotation does) and a blocking TLS client with a deadline on every step.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <openssl/bn.h>
#include <unistd.h>

#include "k8s/fake_apiserver.h"

namespace gpufair::api::testsupport {

// PEM files of the test PKI in a temporary directory, removed afterwards.
class PemFiles {
 public:
  PemFiles() : dir_(std::filesystem::temp_directory_path() / tempName()) {
    using k8s::fake::testPki;
    std::filesystem::create_directories(dir_);
    write("ca.pem", testPki().caPem);
    write("server.pem", testPki().serverCertPem);
    write("server-key.pem", testPki().serverKeyPem);
    write("client-key.pem", testPki().clientKeyPem);
    write("other-ca.pem", testPki().otherCaPem);
  }
  ~PemFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  PemFiles(const PemFiles&) = delete;
  PemFiles& operator=(const PemFiles&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Replaces a file the way an editor or `cp` does: new contents at the same path.
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << text;
  }

 private:
  static std::string tempName() {
    static int counter = 0;
    return "gpufair-tls-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  }
  std::filesystem::path dir_;
};

struct TlsReply {
  bool handshakeOk = false;
  int status = 0;  // 0: no answer (the error is in `error`)
  std::string body;
  std::string error;
  std::string serverSerial;  // hex serial of the certificate the server presented
};

// What a TlsClient presents and offers.
struct TlsClientOptions {
  std::string certPem;  // client certificate; empty: none
  std::string keyPem;
  std::string tls12Ciphers;  // OpenSSL cipher list for TLS 1.2; empty: OpenSSL's default
  int maxVersion = 0;        // e.g. TLS1_2_VERSION; 0: the newest
  int minVersion = 0;        // e.g. TLS1_1_VERSION; 0: OpenSSL's default
};

// A blocking HTTPS client: verifies the server against the test CA and presents what it is told.
class TlsClient {
 public:
  TlsClient(std::uint16_t port, bool presentClientCert)
      : TlsClient(port, presentClientCert
                            ? TlsClientOptions{k8s::fake::testPki().clientCertPem,
                                               k8s::fake::testPki().clientKeyPem, "", 0, 0}
                            : TlsClientOptions{}) {}
  TlsClient(std::uint16_t port, const TlsClientOptions& options)
      : context_(boost::asio::ssl::context::tls_client) {
    namespace asio = boost::asio;
    context_.add_certificate_authority(asio::buffer(k8s::fake::testPki().caPem));
    context_.set_verify_mode(asio::ssl::verify_peer);
    if (!options.certPem.empty()) {
      context_.use_certificate_chain(asio::buffer(options.certPem));
      context_.use_private_key(asio::buffer(options.keyPem), asio::ssl::context::pem);
    }
    SSL_CTX* native = context_.native_handle();
    if (options.minVersion != 0) {
      SSL_CTX_set_security_level(native, 0);  // OpenSSL 3 would not even offer TLS 1.1 otherwise
      SSL_CTX_set_min_proto_version(native, options.minVersion);
    }
    if (options.maxVersion != 0) SSL_CTX_set_max_proto_version(native, options.maxVersion);
    if (!options.tls12Ciphers.empty()) {
      SSL_CTX_set_cipher_list(native, options.tls12Ciphers.c_str());
    }
    stream_ = std::make_unique<Stream>(ioc_, context_);
    stream_->next_layer().connect({asio::ip::make_address("127.0.0.1"), port});
  }

  TlsReply request(const std::string& method, const std::string& target,
                   const std::string& body = "") {
    namespace http = boost::beast::http;
    TlsReply reply;
    auto ec = runFor([&](auto done) {
      stream_->async_handshake(boost::asio::ssl::stream_base::client,
                               [done](boost::system::error_code e) { done(e, 0); });
    });
    reply.handshakeOk = !ec;
    if (ec) {
      reply.error = ec.message();
      return reply;
    }
    reply.serverSerial = peerSerial();
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    if (ec = runFor([&](auto done) { http::async_write(*stream_, req, done); }); ec) {
      reply.error = ec.message();
      return reply;
    }
    http::response<http::string_body> res;
    if (ec = runFor([&](auto done) { http::async_read(*stream_, buffer_, res, done); }); ec) {
      reply.error = ec.message();
      return reply;
    }
    reply.status = static_cast<int>(res.result_int());
    reply.body = res.body();
    return reply;
  }
  // Another request on the same connection (after a first request()).
  TlsReply again(const std::string& target) {
    namespace http = boost::beast::http;
    TlsReply reply{true, 0, "", "", peerSerial()};
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    boost::system::error_code ec;
    http::response<http::string_body> res;
    if (ec = runFor([&](auto done) { http::async_write(*stream_, req, done); }); !ec) {
      ec = runFor([&](auto done) { http::async_read(*stream_, buffer_, res, done); });
    }
    if (ec) {
      reply.error = ec.message();
      return reply;
    }
    reply.status = static_cast<int>(res.result_int());
    reply.body = res.body();
    return reply;
  }

 private:
  using Stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

  std::string peerSerial() {
    X509* peer = SSL_get1_peer_certificate(stream_->native_handle());
    if (peer == nullptr) return "";
    BIGNUM* number = ASN1_INTEGER_to_BN(X509_get0_serialNumber(peer), nullptr);
    char* hex = BN_bn2hex(number);
    std::string text = hex;
    OPENSSL_free(hex);
    BN_free(number);
    X509_free(peer);
    return text;
  }

  template <typename Start>
  boost::system::error_code runFor(Start start) {
    std::optional<boost::system::error_code> result;
    ioc_.restart();
    start([&result](boost::system::error_code ec, std::size_t) { result = ec; });
    ioc_.run_for(std::chrono::seconds(10));
    if (result) return *result;
    boost::system::error_code ignored;
    stream_->next_layer().cancel(ignored);
    ioc_.run();
    return boost::asio::error::timed_out;
  }

  boost::asio::io_context ioc_;
  boost::asio::ssl::context context_;
  std::unique_ptr<Stream> stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace gpufair::api::testsupport
