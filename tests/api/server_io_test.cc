// The server's io threads and its reads: each io thread runs its own io_context, connections are
// spread over them in turn and each stays on one; a plain-HTTP request is read whole whatever
// pieces it arrives in (the session parses what one receive brought and reads again only for the
// rest), and a request left unfinished ends as before (408 after the read timeout, a quiet close
// when the client hangs up).
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "gpufair/api/server.h"

#include "test_support.h"

namespace gpufair::api {
namespace {

using namespace std::chrono_literals;
using testsupport::HttpClient;

// Answers "METHOD TARGET BODY" and notes the thread each target was handled on.
class RecordingHandler final : public RequestHandler {
 public:
  Response handle(const Request& request) override {
    {
      std::lock_guard lock(mu_);
      threads_[std::string(request.target)].insert(std::this_thread::get_id());
    }
    Response response = errorResponse(200, "");
    response.body = std::string(request.method) + " " + std::string(request.target) + " " +
                    std::string(request.body);
    return response;
  }
  std::set<std::thread::id> threadsOf(const std::string& target) {
    std::lock_guard lock(mu_);
    return threads_[target];
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::set<std::thread::id>> threads_;
};

ServerOptions options(int threads) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.threads = threads;
  options.readTimeout = 10s;
  options.idleTimeout = 10s;
  return options;
}

struct SpreadCase {
  int threads;
  int connections;
  std::size_t threadsUsed;  // by all connections together
};

class ServerSpreadTest : public ::testing::TestWithParam<SpreadCase> {};

TEST_P(ServerSpreadTest, ConnectionsAreSpreadOverTheIoThreadsAndEachStaysOnOne) {
  const SpreadCase& c = GetParam();
  RecordingHandler handler;
  ExtenderServer server(handler, options(c.threads));
  ASSERT_TRUE(server.start().isOk());
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < c.connections; ++i) {
    clients.push_back(std::make_unique<HttpClient>(server.port()));
  }
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < c.connections; ++i) {
      const auto reply = clients[i]->request("POST", "/c/" + std::to_string(i), "x");
      ASSERT_EQ(reply.status, 200) << reply.body;
    }
  }
  std::set<std::thread::id> all;
  for (int i = 0; i < c.connections; ++i) {
    const auto threads = handler.threadsOf("/c/" + std::to_string(i));
    EXPECT_EQ(threads.size(), 1u) << "connection " << i << " moved between threads";
    all.insert(threads.begin(), threads.end());
  }
  EXPECT_EQ(all.size(), c.threadsUsed);
  EXPECT_EQ(all.count(std::this_thread::get_id()), 0u);
  server.stop();
}

INSTANTIATE_TEST_SUITE_P(Threads, ServerSpreadTest,
                         ::testing::Values(SpreadCase{1, 3, 1}, SpreadCase{2, 4, 2},
                                           SpreadCase{3, 6, 3}, SpreadCase{4, 2, 2}));

// The pieces a request is sent in, each written after the server had time to read the last.
struct PiecesCase {
  const char* name;
  std::vector<std::string> pieces;
  std::string answer;  // the body the echo handler answers
};

class ServerPiecesTest : public ::testing::TestWithParam<PiecesCase> {};

TEST_P(ServerPiecesTest, ARequestArrivingInPiecesIsReadWhole) {
  RecordingHandler handler;
  ExtenderServer server(handler, options(2));
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  for (const std::string& piece : GetParam().pieces) {
    client.sendRaw(piece);
    std::this_thread::sleep_for(20ms);  // the server reads this piece alone, then reads again
  }
  const auto reply = client.readReply();
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.body, GetParam().answer);
  EXPECT_TRUE(reply.keepAlive);
  // The connection serves the next request as usual.
  const auto next = client.request("POST", "/next", "n");
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.body, "POST /next n");
  EXPECT_EQ(server.stats().readTimeouts, 0u);
}

const std::string kBig(100'000, 'b');  // over one read's 64 kB

INSTANTIATE_TEST_SUITE_P(
    Pieces, ServerPiecesTest,
    ::testing::Values(
        PiecesCase{"OneByteFirst",
                   {"P", "OST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"},
                   "POST /a abc"},
        PiecesCase{"HeaderSplit",
                   {"POST /b HTTP/1.1\r\nHo", "st: x\r\nContent-Len", "gth: 2\r\n\r\nxy"},
                   "POST /b xy"},
        PiecesCase{
            "BodyInPieces",
            {"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n", "01234", "5", "6789"},
            "POST /c 0123456789"},
        PiecesCase{"LargeBodyAfterItsHeader",
                   {"POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", kBig},
                   "POST /d " + kBig},
        PiecesCase{"ChunkedBody",
                   {"POST /e HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
                    "2\r\nde\r\n0\r\n\r\n"},
                   "POST /e abcde"}),
    [](const auto& info) { return std::string(info.param.name); });

// Two requests in one write (pipelined): both answered, in order, from the one read.
TEST(ServerReadTest, TwoRequestsInOneWriteAreBothAnswered) {
  RecordingHandler handler;
  ExtenderServer server(handler, options(1));
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  client.sendRaw(
      "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\naPOST /2 HTTP/1.1\r\nHost: "
      "x\r\nContent-Length: 1\r\n\r\nb");
  EXPECT_EQ(client.readReply().body, "POST /1 a");
  EXPECT_EQ(client.readReply().body, "POST /2 b");
}

// A request whose rest never comes: the read under way ends with the read timeout (408).
TEST(ServerReadTest, AClientThatStopsMidRequestGets408) {
  RecordingHandler handler;
  ServerOptions tight = options(2);
  tight.readTimeout = 200ms;
  ExtenderServer server(handler, tight);
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  client.sendRaw("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01");
  const auto reply = client.readReply(5s);
  EXPECT_EQ(reply.status, 408) << reply.body;
  EXPECT_FALSE(reply.keepAlive);
  EXPECT_TRUE(client.closedByServer());
  EXPECT_EQ(server.stats().readTimeouts, 1u);
  EXPECT_TRUE(handler.threadsOf("/slow").empty());  // never handed to the handler
}

// A client that hangs up mid-request: closed without an answer, nothing counted as a timeout,
// and the server goes on.
TEST(ServerReadTest, AClientHangingUpMidRequestIsClosedQuietly) {
  RecordingHandler handler;
  ExtenderServer server(handler, options(2));
  ASSERT_TRUE(server.start().isOk());
  HttpClient client(server.port());
  client.sendRaw("POST /cut HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01");
  client.shutdownSend();
  EXPECT_TRUE(client.closedByServer());
  EXPECT_EQ(server.stats().readTimeouts, 0u);
  EXPECT_EQ(server.stats().malformedRequests, 0u);
  EXPECT_TRUE(handler.threadsOf("/cut").empty());
  HttpClient next(server.port());
  EXPECT_EQ(next.request("GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace gpufair::api
