// Shared pieces of the api tests: golden files, the small cluster they run against, and a blocking
// HTTP client that talks to ExtenderServer the way kube-scheduler does.
#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/memory_binder.h"
#include "gpufair/policy/scorer.h"
#include "gpufair/state/mirror.h"

#include "testing/builders.h"

namespace gpufair::api::testsupport {

inline std::string readTestdata(const std::string& name) {
  const std::string path = std::string(GPUFAIR_SOURCE_DIR) + "/tests/api/testdata/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline constexpr const char* kTrainUid = "5f0c7b1e-2c4d-4e8a-9b1f-6a7d8e9f0a11";

// The cluster the golden files describe:
//   gpu-node-1  8 GPUs, empty            gpu-node-2  8 GPUs, team-b/sweep-7 holds 6
//   gpu-node-3  4 GPUs, cordoned         cpu-node-1  no GPUs
//   queues: team-a deserved 4 limit 12; team-b deserved 8; team-c deserved 0 limit 2.
struct Cluster {
  Cluster() : clock(std::make_shared<testing::ManualClock>()), mirror(clock) {
    QuotaConfig quota;
    quota.queues = {testing::MakeQueue("team-a").deserved(4).limit(12),
                    testing::MakeQueue("team-b").deserved(8),
                    testing::MakeQueue("team-c").deserved(0).limit(2)};
    mirror.setQuotaConfig(quota);
    mirror.upsertNode(testing::MakeNode("gpu-node-1").gpus(8));
    mirror.upsertNode(testing::MakeNode("gpu-node-2").gpus(8));
    mirror.upsertNode(testing::MakeNode("gpu-node-3").gpus(4).unschedulable());
    mirror.upsertNode(testing::MakeNode("cpu-node-1").gpus(0));
    mirror.upsertPod(testing::MakePod("team-b", "sweep-7").gpus(6).on("gpu-node-2"));
  }

  std::shared_ptr<testing::ManualClock> clock;
  state::Mirror mirror;
  policy::ScorerPtr scorer = policy::makeScorer(policy::kDefaultScorer);
  MemoryBinder binder;
};

// A pod as kube-scheduler would send it in ExtenderArgs.Pod (only what the decoder needs).
inline nlohmann::json podJson(const std::string& ns, const std::string& name,
                              const std::string& uid, int gpus) {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
          {"spec",
           {{"schedulerName", "gpufair"},
            {"containers",
             {{{"name", "main"},
               {"resources", {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

inline nlohmann::json filterArgs(const nlohmann::json& pod, const nlohmann::json& names) {
  return {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
}

inline nlohmann::json parseJson(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  EXPECT_FALSE(json.is_discarded()) << "not JSON: " << body;
  return json;
}

struct HttpReply {
  int status = 0;
  std::string body;
  bool keepAlive = false;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  std::map<std::string, std::string> headers;
};

// A blocking HTTP/1.1 client on one keep-alive connection.
class HttpClient {
 public:
  explicit HttpClient(std::uint16_t port) : socket_(ioc_) {
    boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), port);
    socket_.connect(endpoint);
  }

  HttpReply request(const std::string& method, const std::string& target,
                    const std::string& body = "") {
    namespace http = boost::beast::http;
    http::request<http::string_body> request{http::string_to_verb(method), target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::user_agent, "kube-scheduler/v1.30.2 (linux/amd64)");
    request.body() = body;
    request.prepare_payload();
    // Written with a deadline, like every read: a server that stops reading (it refused the body)
    // must fail the test, not hang it. A write error shows in the reply that follows.
    runFor(std::chrono::seconds(10),
           [&](auto handler) { http::async_write(socket_, request, handler); });
    return readReply();
  }
  HttpReply post(const std::string& target, const nlohmann::json& body) {
    return request("POST", target, body.dump());
  }

  void sendRaw(const std::string& bytes) {
    runFor(std::chrono::seconds(10), [&](auto handler) {
      boost::asio::async_write(socket_, boost::asio::buffer(bytes), handler);
    });
  }

  // status 0 with body = the error message when the connection ended (or stayed silent for
  // `timeout`) instead of a reply.
  HttpReply readReply(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    const auto ec =
        runFor(timeout, [&](auto handler) { http::async_read(socket_, buffer_, parser, handler); });
    HttpReply reply;
    if (ec) {
      reply.body = ec.message();
      return reply;
    }
    const auto& response = parser.get();
    reply.status = static_cast<int>(response.result_int());
    reply.body = response.body();
    reply.keepAlive = response.keep_alive();
    for (const auto& field : response) {
      reply.headers[std::string(field.name_string())] = std::string(field.value());
    }
    return reply;
  }

  // Ends what the client sends (TCP half-close); it can still read.
  void shutdownSend() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  }

  // True when the server closes the connection (EOF or reset) within `timeout`.
  bool closedByServer(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    char byte;
    const auto ec = runFor(timeout, [&](auto handler) {
      socket_.async_read_some(boost::asio::buffer(&byte, 1), handler);
    });
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

 private:
  // Runs one asynchronous operation to completion or until `timeout` (then: timed_out).
  template <typename Start>
  boost::system::error_code runFor(std::chrono::milliseconds timeout, Start start) {
    std::optional<boost::system::error_code> result;
    ioc_.restart();
    start([&result](boost::system::error_code ec, std::size_t) { result = ec; });
    ioc_.run_for(timeout);
    if (result) return *result;
    boost::system::error_code ignored;
    socket_.cancel(ignored);
    ioc_.run();
    return boost::asio::error::timed_out;
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace gpufair::api::testsupport
