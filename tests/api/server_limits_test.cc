// Transport limits: every abuse is answered (or the connection dropped) and the server goes on.
#include <gtest/gtest.h>

#include "gpufair/api/server.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testsupport::Cluster;
using testsupport::HttpClient;
using testsupport::parseJson;

ServerOptions tightOptions() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.maxBodyBytes = 1024;
  options.maxHeaderBytes = 1024;
  options.readTimeout = 300ms;
  options.idleTimeout = 300ms;
  options.maxConnections = 3;
  options.drainTimeout = 1s;
  return options;
}

class ServerLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server.start().isOk()); }

  // The server still serves a fresh connection.
  void expectServing() {
    HttpClient client(server.port());
    const auto reply = client.request("GET", "/healthz");
    EXPECT_EQ(reply.status, 200) << reply.body;
  }
  static std::string errorOf(const testsupport::HttpReply& reply) {
    return parseJson(reply.body).at("Error").get<std::string>();
  }
  // Counters are bumped on an io thread before the answer or the close; by the time the client
  // has seen either, they are set. Waits a little anyway for closes the client cannot observe.
  static std::uint64_t counted(const std::atomic<std::uint64_t>& counter, std::uint64_t want = 1) {
    for (int i = 0; i < 200 && counter.load() < want; ++i) std::this_thread::sleep_for(5ms);
    return counter.load();
  }

  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
  ExtenderServer server{service, tightOptions()};
};

TEST_F(ServerLimitsTest, OversizeBodyIs413) {
  HttpClient client(server.port());
  const auto reply = client.request("POST", "/filter", std::string(4096, ' '));
  EXPECT_EQ(reply.status, 413);
  EXPECT_EQ(errorOf(reply), "request body larger than 1024 bytes");
  EXPECT_FALSE(reply.keepAlive);
  EXPECT_TRUE(client.closedByServer());
  EXPECT_EQ(counted(server.stats().bodyTooLarge), 1u);
  expectServing();
}

TEST_F(ServerLimitsTest, OversizeHeaderIs431) {
  HttpClient client(server.port());
  client.sendRaw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(2048, 'a') +
                 "\r\n\r\n");
  const auto reply = client.readReply();
  EXPECT_EQ(reply.status, 431);
  EXPECT_EQ(errorOf(reply), "request header larger than 1024 bytes");
  EXPECT_EQ(counted(server.stats().headerTooLarge), 1u);
  EXPECT_EQ(server.stats().bodyTooLarge, 0u);
  expectServing();
}

TEST_F(ServerLimitsTest, MalformedHttpIs400) {
  HttpClient client(server.port());
  client.sendRaw("THIS IS NOT HTTP\r\n\r\n");
  const auto reply = client.readReply();
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(errorOf(reply).rfind("malformed HTTP request: ", 0), 0u) << reply.body;
  EXPECT_TRUE(client.closedByServer());
  EXPECT_EQ(counted(server.stats().malformedRequests), 1u);
  expectServing();
}

TEST_F(ServerLimitsTest, SlowClientGets408AndIsClosed) {
  HttpClient client(server.port());
  client.sendRaw(
      "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 200\r\n\r\n{\"Pod\":{\"metadata\":");
  const auto start = std::chrono::steady_clock::now();
  const auto reply = client.readReply(5s);
  EXPECT_EQ(reply.status, 408) << reply.body;
  EXPECT_EQ(errorOf(reply), "request not received completely within 300 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(client.closedByServer());
  EXPECT_EQ(counted(server.stats().readTimeouts), 1u);
  expectServing();
}

TEST_F(ServerLimitsTest, IdleKeepAliveConnectionIsClosedQuietly) {
  HttpClient client(server.port());
  EXPECT_EQ(client.request("GET", "/healthz").status, 200);
  EXPECT_TRUE(client.closedByServer(5s));
  EXPECT_EQ(counted(server.stats().idleClosed), 1u);
  expectServing();
}

TEST_F(ServerLimitsTest, ConnectionsOverTheLimitAre503) {
  std::vector<std::unique_ptr<HttpClient>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<HttpClient>(server.port()));
    ASSERT_EQ(open.back()->request("GET", "/healthz").status, 200);  // accepted and counted
  }
  HttpClient extra(server.port());
  const auto reply = extra.request("GET", "/healthz");
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(errorOf(reply), "server busy: over 3 open connections; retry later");
  EXPECT_FALSE(reply.keepAlive);
  EXPECT_EQ(server.stats().connectionsRefused, 1u);
  EXPECT_EQ(server.stats().connectionsAccepted, 4u);
  // The connections within the limit keep working.
  EXPECT_EQ(open.front()->request("GET", "/healthz").status, 200);
  open.clear();
  extra.closedByServer();
  for (int attempt = 0; attempt < 50; ++attempt) {  // the server notices the closes shortly
    HttpClient client(server.port());
    if (client.request("GET", "/healthz").status == 200) return;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "the server did not recover after the clients left";
}

TEST_F(ServerLimitsTest, PipelinedRequestsAreAnsweredInOrder) {
  HttpClient client(server.port());
  client.sendRaw(
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(client.readReply().status, 200);
  EXPECT_EQ(client.readReply().status, 404);
  EXPECT_EQ(client.readReply().status, 200);
}

TEST_F(ServerLimitsTest, ConnectionCloseIsHonoured) {
  HttpClient client(server.port());
  client.sendRaw("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const auto reply = client.readReply();
  EXPECT_EQ(reply.status, 200);
  EXPECT_FALSE(reply.keepAlive);
  EXPECT_TRUE(client.closedByServer());
}

// The answer's header as Beast wrote it: Content-Type, Content-Length, extra fields (Allow), and
// Connection as each HTTP version reads it.
TEST_F(ServerLimitsTest, AnswerHeadersFollowTheRequestsVersion) {
  HttpClient client(server.port());
  client.sendRaw("GET /filter HTTP/1.1\r\nHost: x\r\n\r\n");
  auto reply = client.readReply();
  EXPECT_EQ(reply.status, 405);
  EXPECT_EQ(reply.header("Allow"), "POST");
  EXPECT_EQ(reply.header("Content-Type"), "application/json");
  EXPECT_EQ(reply.header("Content-Length"), std::to_string(reply.body.size()));
  EXPECT_EQ(reply.header("Connection"), "") << "HTTP/1.1 keeps the connection unless it says";
  EXPECT_TRUE(reply.keepAlive);
  EXPECT_FALSE(reply.body.empty());

  client.sendRaw("GET /healthz HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n");
  reply = client.readReply();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("Connection"), "keep-alive");
  EXPECT_TRUE(reply.keepAlive);

  client.sendRaw("GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n");
  reply = client.readReply();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("Connection"), "");
  EXPECT_FALSE(reply.keepAlive) << "HTTP/1.0 closes unless asked to keep the connection";
  EXPECT_TRUE(client.closedByServer());
}

// One timer keeps every phase's deadline and is not re-armed per request (it waits for the
// earliest deadline set, then for the one in force): a connection in use for longer than any
// timeout is not cut off by a deadline that has passed on, and each phase still gets its own.
TEST(ServerDeadlineTest, EachPhaseKeepsItsOwnDeadlineOverManyRequests) {
  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
  ServerOptions options = tightOptions();
  options.readTimeout = 200ms;
  options.idleTimeout = 700ms;
  ExtenderServer server(service, options);
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  // Eight requests over ~1.2 s, longer than both timeouts; each pause outlasts the read timeout
  // (the timer's first expiry) and is within the idle timeout.
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(client.request("GET", "/healthz").status, 200) << "request " << i;
    std::this_thread::sleep_for(i % 2 == 0 ? 50ms : 300ms);
  }
  EXPECT_EQ(server.stats().idleClosed, 0u);
  EXPECT_EQ(server.stats().readTimeouts, 0u);
  // A request that stops half-way gets the read timeout, not the longer idle one.
  client.sendRaw("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{");
  const auto start = std::chrono::steady_clock::now();
  const auto reply = client.readReply(5s);
  EXPECT_EQ(reply.status, 408) << reply.body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(server.stats().readTimeouts, 1u);
  // And a connection left idle is closed after the idle timeout.
  HttpClient idle(server.port());
  EXPECT_EQ(idle.request("GET", "/healthz").status, 200);
  EXPECT_TRUE(idle.closedByServer(5s));
  for (int i = 0; i < 200 && server.stats().idleClosed == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(server.stats().idleClosed, 1u);
}

// A handler that throws: the transport answers 500 and keeps going.
class ThrowingHandler final : public RequestHandler {
 public:
  Response handle(const Request& request) override {
    if (request.target == "/throw") throw std::runtime_error("handler bug");
    return errorResponse(200, "");
  }
};

TEST(ServerHandlerTest, HandlerExceptionIs500) {
  ThrowingHandler handler;
  ExtenderServer server(handler, tightOptions());
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  const auto reply = client.request("GET", "/throw");
  EXPECT_EQ(reply.status, 500);
  EXPECT_EQ(parseJson(reply.body).at("Error"), "internal error: handler bug");
  EXPECT_EQ(server.stats().handlerErrors, 1u);
  EXPECT_EQ(client.request("GET", "/fine").status, 200);
}

// stop() lets a request in flight finish instead of cutting it off.
class SlowHandler final : public RequestHandler {
 public:
  Response handle(const Request&) override {
    entered = true;
    std::this_thread::sleep_for(200ms);
    return errorResponse(200, "");
  }
  std::atomic<bool> entered{false};
};

TEST(ServerHandlerTest, StopDrainsRequestsInFlight) {
  SlowHandler handler;
  ExtenderServer server(handler, tightOptions());
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  client.sendRaw("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  while (!handler.entered) std::this_thread::sleep_for(1ms);
  server.stop();
  const auto reply = client.readReply(2s);
  EXPECT_EQ(reply.status, 200);
  EXPECT_FALSE(reply.keepAlive);  // stopping: the connection ends after this answer
}

// A client that stops reading: the answer cannot be written within writeTimeout, the connection is
// closed and counted, and the server goes on.
class BigHandler final : public RequestHandler {
 public:
  Response handle(const Request& request) override {
    Response response = errorResponse(200, "");
    if (request.target == "/big") response.body.assign(std::size_t{64} << 20, 'x');
    if (request.target == "/medium") response.body.assign(std::size_t{16} << 20, 'x');
    return response;
  }
};

TEST(ServerHandlerTest, ClientThatDoesNotReadIsCutOffAfterWriteTimeout) {
  BigHandler handler;
  ServerOptions options = tightOptions();
  options.writeTimeout = 300ms;
  ExtenderServer server(handler, options);
  ASSERT_TRUE(server.start().isOk());
  HttpClient stalled(server.port());
  stalled.sendRaw("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");  // and never reads the answer
  for (int i = 0; i < 400 && server.stats().writeTimeouts == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(server.stats().writeTimeouts, 1u);
  HttpClient client(server.port());
  EXPECT_EQ(client.request("GET", "/small").status, 200);
}

// A plain answer is written at once as far as the socket takes it, the rest asynchronously: a
// client that reads only later still gets every byte, and the connection serves the next request.
TEST(ServerHandlerTest, AnAnswerLargerThanTheSocketTakesArrivesWhole) {
  BigHandler handler;
  ServerOptions options = tightOptions();
  options.writeTimeout = 30s;
  // The server's write ends while the client still reads the last megabytes from the socket's
  // buffers (slowly under ASan): the keep-alive wait for the next request must outlast that.
  options.idleTimeout = 30s;
  ExtenderServer server(handler, options);
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  client.sendRaw("GET /medium HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(100ms);  // the socket's buffers fill; the rest waits for the reader
  // Reading 16 MiB through the test client took over 10 s under ASan on a loaded 2-core machine.
  const auto big = client.readReply(60s);
  EXPECT_EQ(big.status, 200);
  EXPECT_EQ(big.body.size(), std::size_t{16} << 20);
  EXPECT_EQ(big.body.find_first_not_of('x'), std::string::npos);
  EXPECT_TRUE(big.keepAlive);
  const auto small = client.request("GET", "/small");
  EXPECT_EQ(small.status, 200);
  EXPECT_EQ(server.stats().writeTimeouts, 0u);
}

// Regression: stop() while clients hang up at the same moment once deadlocked. The hub took a
// session's last reference under its lock; the session's destructor then took the lock again.
TEST(ServerLifecycleStressTest, StopWhileClientsDisconnect) {
  Cluster cluster;
  ExtenderService service{cluster.mirror, *cluster.scorer, cluster.binder};
  for (int round = 0; round < 30; ++round) {
    ServerOptions options = tightOptions();
    options.maxConnections = 64;
    ExtenderServer server(service, options);
    ASSERT_TRUE(server.start().isOk());
    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < 8; ++i) {
      clients.push_back(std::make_unique<HttpClient>(server.port()));
      ASSERT_EQ(clients.back()->request("GET", "/healthz").status, 200);
    }
    std::thread hangUp([&clients] { clients.clear(); });
    server.stop();
    hangUp.join();
  }
}

// A session reuses its request's memory (header fields from an arena emptied per request, the
// body's string lent to the next request): on one kept-alive connection, requests whose header
// overflows the arena and whose body is larger, smaller, or past the kept capacity than the last
// one's each arrive exactly as sent.
class EchoHandler final : public RequestHandler {
 public:
  Response handle(const Request& request) override {
    Response response = errorResponse(200, "");
    response.body = std::string(request.method) + " " + std::string(request.target) + " " +
                    std::string(request.body);
    return response;
  }
};

TEST(ServerHandlerTest, RequestsOnOneConnectionArriveExactlyAsSentWhateverTheirSizes) {
  EchoHandler handler;
  ServerOptions options = tightOptions();
  options.maxHeaderBytes = 64 << 10;
  options.maxBodyBytes = 4 << 20;
  options.readTimeout = 10s;
  options.idleTimeout = 10s;
  ExtenderServer server(handler, options);
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  std::string padding;  // ~12 kB of header fields: several times the session's arena
  for (int i = 0; i < 120; ++i)
    padding += "X-Pad-" + std::to_string(i) + ": " + std::string(90, 'p') + "\r\n";
  const std::vector<std::string> bodies{
      std::string(3000, 'a'),  "b", std::string(2 << 20, 'c'), "", std::string(100, 'd'),
      std::string(70000, 'e'), "f"};
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const std::string target = "/echo/" + std::to_string(i);
    client.sendRaw("POST " + target + " HTTP/1.1\r\nHost: x\r\n" + (i % 2 == 0 ? padding : "") +
                   "Content-Length: " + std::to_string(bodies[i].size()) + "\r\n\r\n" + bodies[i]);
    const auto reply = client.readReply(10s);
    EXPECT_EQ(reply.status, 200) << i;
    EXPECT_TRUE(reply.keepAlive) << i;
    EXPECT_EQ(reply.body, "POST " + target + " " + bodies[i]) << i;
  }
}

}  // namespace
}  // namespace gpufair::api
