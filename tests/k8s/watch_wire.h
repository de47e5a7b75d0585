// What the tests that play an API server's watch by hand share: the answer's head and a chunk of
// its body, a TLS server context with the test PKI's server certificate, the server side's accept
// of one request, and a client transport that trusts it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <gtest/gtest.h>

#include "client_auth.h"
#include "k8s/fake_apiserver.h"
#include "keepalive_transport.h"

namespace gpufair::k8s::testsupport {

// The head of a watch's answer: 200 and a chunked body.
inline const std::string kWatchAnswerHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

// `data` as one chunk of an HTTP/1.1 chunked body.
inline std::string httpChunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// A TLS server context presenting fake::testPki()'s server certificate (signed by its CA, names
// 127.0.0.1 and localhost).
inline std::unique_ptr<boost::asio::ssl::context> testServerTlsContext() {
  namespace ssl = boost::asio::ssl;
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->use_certificate_chain(boost::asio::buffer(fake::testPki().serverCertPem));
  context->use_private_key(boost::asio::buffer(fake::testPki().serverKeyPem), ssl::context::pem);
  return context;
}

// Accepts one connection on `acceptor` into `tls`, shakes hands as the server and reads the head
// of the request that comes on it (a watch has no body). Errors are left in `ec`.
inline void acceptTlsRequest(boost::asio::ip::tcp::acceptor& acceptor,
                             boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& tls,
                             boost::system::error_code& ec) {
  acceptor.accept(tls.next_layer(), ec);
  if (ec) return;
  tls.handshake(boost::asio::ssl::stream_base::server, ec);
  if (ec) return;
  std::string request;
  boost::asio::read_until(tls, boost::asio::dynamic_buffer(request), "\r\n\r\n", ec);
}

// A KeepAliveTransport to https://127.0.0.1:`port` that verifies the server against the test CA.
inline std::unique_ptr<detail::KeepAliveTransport> testTlsTransport(std::uint16_t port) {
  ClientConfig config;
  config.caData = fake::testPki().caPem;
  auto material = TlsMaterial::load(config);
  EXPECT_TRUE(material) << material.error();
  return std::make_unique<detail::KeepAliveTransport>(
      "https://127.0.0.1:" + std::to_string(port),
      std::make_shared<const TlsMaterial>(std::move(material).value()), true);
}

}  // namespace gpufair::k8s::testsupport
