// KeepAliveTransport (the path of every one-shot request: Bindings, label and annotation patches,
// Events, Leases, LISTs) against FakeApiServer: connections are kept and reused, a connection the
// server closed is replaced, the API server's refusals (409, 422, 500) come back as answers with
// their Status body, and TLS with client certificates reuses its connection too.
#include "keepalive_transport.h"

#include <sstream>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/api.h"

#include "k8s/fake_apiserver.h"
#include "k8s/watch_wire.h"

// Designated initializers leave the other members at their defaults on purpose; GCC 12 warns about
// that under -Wextra.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpufair::k8s {
namespace {

using detail::KeepAliveTransport;
using fake::FakeApiServer;
using fake::testPki;
using ::testing::HasSubstr;

ApiRequest binding(const std::string& pod, const std::string& node) {
  ApiRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/ml/pods/" + pod + "/binding";
  request.body = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")" + pod +
                 R"(","namespace":"ml"},"target":{"apiVersion":"v1","kind":"Node","name":")" +
                 node + R"("}})";
  return request;
}

ApiRequest labelPatch(const std::string& pod, const std::string& body) {
  ApiRequest request;
  request.method = "PATCH";
  request.path = "/api/v1/namespaces/ml/pods/" + pod;
  request.contentType = "application/merge-patch+json";
  request.body = body;
  return request;
}

class KeepAliveTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.start();
    server_.create("/api/v1/nodes", fake::makeNode("gpu-1"));
    for (int i = 0; i < kPods; ++i) {
      server_.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-" + std::to_string(i)));
    }
  }
  static constexpr int kPods = 20;
  FakeApiServer server_;
};

// The request text is what Beast's request with the same fields and prepare_payload() wrote
// before (the transport built one per request): every method, with and without a body and a token.
TEST(KeepAliveTransportFormat, TheRequestIsWhatBeastWrote) {
  namespace http = boost::beast::http;
  auto beast = [](const ApiRequest& request, const std::string& target,
                  const std::string& authorization) {
    http::request<http::string_body> message;
    message.version(11);
    const http::verb verb = http::string_to_verb(request.method);
    if (verb == http::verb::unknown) {
      message.method_string(request.method);
    } else {
      message.method(verb);
    }
    message.target(target);
    message.set(http::field::host, "api.example:6443");
    message.set(http::field::accept, "application/json");
    message.set(http::field::user_agent, "gpufair/0.1");
    if (!authorization.empty()) message.set(http::field::authorization, authorization);
    if (!request.body.empty() || verb == http::verb::post || verb == http::verb::put ||
        verb == http::verb::patch) {
      message.set(http::field::content_type, request.contentType);
      message.body() = request.body;
    }
    message.keep_alive(true);
    message.prepare_payload();
    std::ostringstream out;
    out << message;
    return out.str();
  };
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "BREW"}) {
    for (const char* body : {"", R"({"a":1})"}) {
      for (const std::string& token : {std::string(), std::string("Bearer abc")}) {
        SCOPED_TRACE(std::string(method) + " body=" + body + " token=" + token);
        ApiRequest request;
        request.method = method;
        request.path = "/api/v1/pods?watch=1";
        request.contentType = "application/merge-patch+json";
        request.body = body;
        EXPECT_EQ(detail::formatRequest(request, "/base" + request.path, "api.example:6443", token),
                  beast(request, "/base" + request.path, token));
      }
    }
  }
}

TEST_F(KeepAliveTransportTest, BindingsAndPatchesShareOneConnection) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  for (int i = 0; i < kPods; ++i) {
    const std::string pod = "p-" + std::to_string(i);
    auto bound = transport.send(binding(pod, "gpu-1"), "");
    ASSERT_EQ(bound.status, 201) << bound.transportError << bound.body;
    auto labelled = transport.send(
        labelPatch(pod, R"({"metadata":{"labels":{"gpufair.io/over-quota":"true"}}})"), "");
    ASSERT_EQ(labelled.status, 200) << labelled.transportError << labelled.body;
  }
  EXPECT_EQ(transport.connectionsOpened(), 1u);
  auto pod = server_.get("/api/v1/namespaces/ml/pods/p-7");
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["spec"]["nodeName"], "gpu-1");
  EXPECT_EQ((*pod)["metadata"]["labels"]["gpufair.io/over-quota"], "true");
  const auto logged = server_.requests("PATCH", "/api/v1/namespaces/ml/pods/p-7");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_THAT(logged[0].contentType, HasSubstr("application/merge-patch+json"));
}

TEST_F(KeepAliveTransportTest, RefusalsAreAnswersAndTheConnectionStays) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  ASSERT_EQ(transport.send(binding("p-0", "gpu-1"), "").status, 201);

  auto again = transport.send(binding("p-0", "gpu-1"), "");  // already bound
  EXPECT_EQ(again.status, 409);
  EXPECT_THAT(again.body, HasSubstr(R"("reason":"Conflict")"));
  EXPECT_TRUE(again.transportError.empty());

  auto malformed = transport.send(labelPatch("p-1", "not json"), "");
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  auto invalid = transport.send(
      labelPatch("p-1", R"({"metadata":{"labels":{"gpufair.io/bad key":"x"}}})"), "");
  EXPECT_EQ(invalid.status, 422) << invalid.body;
  EXPECT_THAT(apiError(invalid).describe(), HasSubstr("HTTP 422"));

  server_.addFault({.method = "POST", .pathPrefix = "/api/v1/namespaces/ml/pods/p-2/binding"});
  auto failed = transport.send(binding("p-2", "gpu-1"), "");
  EXPECT_EQ(failed.status, 500);
  EXPECT_FALSE(server_.get("/api/v1/namespaces/ml/pods/p-2")->at("spec").contains("nodeName"));

  EXPECT_EQ(transport.send(binding("p-2", "gpu-1"), "").status, 201);
  EXPECT_EQ(transport.connectionsOpened(), 1u);
}

TEST_F(KeepAliveTransportTest, AConnectionTheServerClosedIsReplaced) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  ASSERT_EQ(transport.send(binding("p-0", "gpu-1"), "").status, 201);
  server_.stop();  // closes the pooled connection
  server_.start();
  auto bound = transport.send(binding("p-1", "gpu-1"), "");
  EXPECT_EQ(bound.status, 201) << bound.transportError;
  EXPECT_EQ(transport.connectionsOpened(), 2u);
  EXPECT_EQ(server_.requests("POST", "/api/v1/namespaces/ml/pods/p-1/binding").size(), 1u);
}

TEST_F(KeepAliveTransportTest, ServerDownIsATransportError) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  server_.stop();
  auto response = transport.send(binding("p-0", "gpu-1"), "");
  EXPECT_EQ(response.status, 0);
  EXPECT_THAT(response.transportError, HasSubstr("cannot connect"));
}

TEST_F(KeepAliveTransportTest, AServerThatClosesWithoutAnswerIsATransportError) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  server_.addFault({.method = "POST", .pathPrefix = "/api/v1/namespaces", .status = 0});
  auto response = transport.send(binding("p-0", "gpu-1"), "");
  EXPECT_EQ(response.status, 0);
  EXPECT_FALSE(response.transportError.empty());
  // A new connection that fails is not sent again: the Binding went out once.
  EXPECT_EQ(server_.requests("POST", "/api/v1/namespaces/ml/pods/p-0/binding").size(), 1u);
  EXPECT_EQ(transport.send(binding("p-0", "gpu-1"), "").status, 201);
}

TEST_F(KeepAliveTransportTest, ConcurrentCallersEachTakeAConnection) {
  KeepAliveTransport transport(server_.url(), nullptr, true);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kPods; i += kThreads) {
        const std::string pod = "p-" + std::to_string(i);
        ok += transport.send(binding(pod, "gpu-1"), "").status == 201 ? 1 : 0;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kPods);
  EXPECT_LE(transport.connectionsOpened(), static_cast<std::size_t>(kThreads));
}

TEST(KeepAliveTransportTls, ClientCertificateAndTokenOverOneConnection) {
  FakeApiServer server({.tls = true, .requireClientCert = true, .tokens = {"t-1"}});
  server.start();
  server.create("/api/v1/namespaces/ml/pods", fake::makePod("ml", "p-0"));
  ClientConfig config{.server = server.url(),
                      .caData = testPki().caPem,
                      .clientCertData = testPki().clientCertPem,
                      .clientKeyData = testPki().clientKeyPem};
  auto tls = TlsMaterial::load(config);
  ASSERT_TRUE(tls) << tls.error();
  KeepAliveTransport transport(server.url(),
                               std::make_shared<const TlsMaterial>(std::move(tls).value()), true);
  ASSERT_EQ(transport.send(binding("p-0", "gpu-1"), "Bearer t-1").status, 201);
  for (int i = 0; i < 5; ++i) {
    auto response = transport.send(
        labelPatch("p-0", R"({"metadata":{"labels":{"n":")" + std::to_string(i) + R"("}}})"),
        "Bearer t-1");
    ASSERT_EQ(response.status, 200) << response.transportError << response.body;
  }
  EXPECT_EQ(transport.connectionsOpened(), 1u);
  EXPECT_EQ(server.requests().back().token, "t-1");
}

TEST(KeepAliveTransportTls, AServerOfAnotherCaOrNameIsRefused) {
  FakeApiServer server({.tls = true});
  server.start();
  ClientConfig config{.server = server.url(), .caData = testPki().otherCaPem};
  auto other = TlsMaterial::load(config);
  ASSERT_TRUE(other) << other.error();
  ApiRequest get;
  get.path = "/api/v1/nodes";
  KeepAliveTransport wrongCa(server.url(),
                             std::make_shared<const TlsMaterial>(std::move(other).value()), true);
  auto refused = wrongCa.send(get, "");
  EXPECT_EQ(refused.status, 0);
  EXPECT_THAT(refused.transportError, HasSubstr("TLS handshake failed"));

  config.caData = testPki().caPem;
  auto right = TlsMaterial::load(config);
  ASSERT_TRUE(right) << right.error();
  auto material = std::make_shared<const TlsMaterial>(std::move(right).value());
  // The certificate names 127.0.0.1 and localhost; "localhost" is verified by name.
  const std::string byName = "https://localhost:" + std::to_string(server.port());
  EXPECT_EQ(KeepAliveTransport(byName, material, true).send(get, "").status, 200);
}

// A server that answers one request with the given pieces, each written on its own (a pause
// between them, so each arrives in a read of its own), then closes the connection.
class PiecewiseServer {
 public:
  explicit PiecewiseServer(std::vector<std::string> pieces) {
    namespace asio = boost::asio;
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    thread_ = std::thread([this, pieces = std::move(pieces)] {
      asio::ip::tcp::socket socket(ioc_);
      acceptor_.accept(socket);
      std::string request;
      boost::system::error_code ec;
      asio::read_until(socket, asio::dynamic_buffer(request), "\r\n\r\n", ec);
      for (const auto& piece : pieces) {
        asio::write(socket, asio::buffer(piece), ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    });
  }
  ~PiecewiseServer() { thread_.join(); }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  std::thread thread_;
};

std::vector<std::string> streamLines(const std::string& url, ApiResponse& response) {
  KeepAliveTransport transport(url, nullptr, false);
  std::vector<std::string> lines;
  std::atomic<bool> cancel{false};
  ApiRequest request;
  request.path = "/api/v1/pods?watch=1";
  response = transport.stream(
      request, "",
      [&](std::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      cancel);
  return lines;
}

// The watch body is parsed from the connection's buffer and read only when more is needed: chunk
// headers and events split across reads, several events in one read, an event larger than a read.
TEST(KeepAliveTransportStream, ChunksSplitAnyWayGiveTheSameLines) {
  const std::string big(100'000, 'x');
  const auto chunk = testsupport::httpChunk;
  const std::string all = chunk("{\"a\":1}\n{\"b\":2}\n") + chunk("{\"c\":") + chunk("3}\n") +
                          chunk(big + "\n") + "0\r\n\r\n";
  std::vector<std::string> pieces = {testsupport::kWatchAnswerHead};
  for (std::size_t at = 0; at < all.size();) {  // 1, 2, 3, ... bytes, then the rest in 40 kB
    const std::size_t n = pieces.size() < 12 ? pieces.size() : 40'000;
    pieces.push_back(all.substr(at, n));
    at += n;
  }
  PiecewiseServer server(pieces);
  ApiResponse response;
  const auto lines = streamLines(server.url(), response);
  EXPECT_TRUE(response.ok()) << response.describe();
  EXPECT_EQ(lines, (std::vector<std::string>{R"({"a":1})", R"({"b":2})", R"({"c":3})", big}));
}

// A body without a length ends where the connection does; a chunked one cut short is an error.
TEST(KeepAliveTransportStream, TheEndOfTheConnection) {
  {
    PiecewiseServer server({"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"a\":1}\n", "{\"b\""});
    ApiResponse response;
    const auto lines = streamLines(server.url(), response);
    EXPECT_TRUE(response.ok()) << response.describe();
    EXPECT_EQ(lines, (std::vector<std::string>{R"({"a":1})", R"({"b")"}));
  }
  {
    PiecewiseServer server(
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"a\":1}\n\r\n"});
    ApiResponse response;
    const auto lines = streamLines(server.url(), response);
    EXPECT_EQ(lines, (std::vector<std::string>{R"({"a":1})"}));
    EXPECT_THAT(response.transportError, HasSubstr("stream broken"));
  }
}

// send() on plain TCP reads its answer with poll and recv on the socket (no io_context): the
// answer is whole however it is split across reads, whatever its framing.
ApiResponse sendTo(const std::string& url) {
  KeepAliveTransport transport(url, nullptr, false);
  return transport.send(binding("p-0", "gpu-1"), "");
}

std::vector<std::string> splitFirstBytes(const std::string& all, std::size_t singles) {
  std::vector<std::string> pieces;
  std::size_t at = 0;
  for (; at < all.size() && pieces.size() < singles; ++at) pieces.push_back(all.substr(at, 1));
  if (at < all.size()) pieces.push_back(all.substr(at));
  return pieces;
}

TEST(KeepAliveTransportSend, AnAnswerSplitAcrossReadsIsReadWhole) {
  const std::string body = R"({"kind":"Status","code":201})";
  const std::string answer = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n" +
                             std::string("Content-Length: ") + std::to_string(body.size()) +
                             "\r\n\r\n" + body;
  // Byte by byte through the status line, then the header's end and the body's start in one
  // piece, the body's rest in another.
  auto pieces = splitFirstBytes(answer.substr(0, answer.size() - 10), 12);
  pieces.push_back(answer.substr(answer.size() - 10));
  PiecewiseServer server(pieces);
  const ApiResponse response = sendTo(server.url());
  EXPECT_EQ(response.status, 201) << response.describe();
  EXPECT_EQ(response.body, body);
}

TEST(KeepAliveTransportSend, ChunkedAndUntilCloseBodies) {
  {
    PiecewiseServer server({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                            "lo\r\n", "6\r\n world\r\n0\r\n\r\n"});
    const ApiResponse response = sendTo(server.url());
    EXPECT_EQ(response.status, 200) << response.describe();
    EXPECT_EQ(response.body, "hello world");
  }
  {
    PiecewiseServer server({"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil ", "the end"});
    const ApiResponse response = sendTo(server.url());
    EXPECT_EQ(response.status, 200) << response.describe();
    EXPECT_EQ(response.body, "until the end");
  }
}

TEST(KeepAliveTransportSend, AnAnswerCutShortIsATransportError) {
  {
    PiecewiseServer server({"HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{\"kind\""});
    const ApiResponse response = sendTo(server.url());
    EXPECT_EQ(response.status, 0);
    EXPECT_THAT(response.transportError, HasSubstr("partial message"));
  }
  {
    PiecewiseServer server({"HTTP/1.1 201 Cre"});
    const ApiResponse response = sendTo(server.url());
    EXPECT_EQ(response.status, 0);
    EXPECT_THAT(response.transportError, HasSubstr("partial message"));
  }
  {
    PiecewiseServer server({});  // reads the request, closes without a byte
    const ApiResponse response = sendTo(server.url());
    EXPECT_EQ(response.status, 0);
    EXPECT_FALSE(response.transportError.empty());
  }
}

TEST(KeepAliveTransportSend, AnAnswerOverTheHeaderLimitIsRefused) {
  const std::string answer =
      "HTTP/1.1 200 OK\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\nContent-Length: 0\r\n\r\n";
  PiecewiseServer server({answer});
  const ApiResponse response = sendTo(server.url());
  EXPECT_EQ(response.status, 0);
  EXPECT_THAT(response.transportError, HasSubstr("header limit"));
}

}  // namespace
}  // namespace gpufair::k8s
