// Test helpers: a blocking HTTP GET, and a reader of Prometheus' text exposition format that keys
// each sample by its series ("name{a=\"x\",b=\"y\"}", labels sorted as exposed).
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace gpufair::metrics::testsupport {

struct HttpReply {
  int status = 0;
  std::string body;
};

inline HttpReply httpRequest(const std::string& method, const std::string& host, int port,
                             const std::string& target, const std::string& body = "") {
  namespace http = boost::beast::http;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  boost::asio::ip::tcp::socket socket(io);
  boost::asio::connect(socket, resolver.resolve(host, std::to_string(port)));
  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, host);
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return {static_cast<int>(response.result_int()), response.body()};
}

inline HttpReply httpGet(const std::string& host, int port, const std::string& target) {
  return httpRequest("GET", host, port, target);
}

struct Exposition {
  std::map<std::string, double> samples;    // series -> value
  std::map<std::string, std::string> help;  // family -> HELP text
  std::map<std::string, std::string> type;  // family -> TYPE

  std::optional<double> value(const std::string& series) const {
    auto it = samples.find(series);
    if (it == samples.end()) return std::nullopt;
    return it->second;
  }
  // Every series of one metric name.
  std::set<std::string> series(const std::string& name) const {
    std::set<std::string> out;
    for (const auto& [key, v] : samples) {
      if (key == name || key.rfind(name + "{", 0) == 0) out.insert(key);
    }
    return out;
  }
};

// "name{b=\"1\",a=\"2\"}" -> "name{a=\"2\",b=\"1\"}" (values hold no commas here).
inline std::string sortedLabels(const std::string& series) {
  const std::size_t open = series.find('{');
  if (open == std::string::npos) return series;
  std::vector<std::string> labels;
  std::string inner = series.substr(open + 1, series.size() - open - 2);
  std::size_t start = 0;
  while (start <= inner.size()) {
    const std::size_t comma = inner.find("\",", start);
    const std::size_t end = comma == std::string::npos ? inner.size() : comma + 1;
    labels.push_back(inner.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  std::sort(labels.begin(), labels.end());
  std::string out = series.substr(0, open + 1);
  for (std::size_t i = 0; i < labels.size(); ++i) out += (i ? "," : "") + labels[i];
  return out + "}";
}

inline Exposition parseExposition(const std::string& text) {
  Exposition out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const std::string rest = line.substr(7);
      const std::size_t space = rest.find(' ');
      auto& into = line[2] == 'H' ? out.help : out.type;
      into[rest.substr(0, space)] = space == std::string::npos ? "" : rest.substr(space + 1);
      continue;
    }
    if (line[0] == '#') continue;
    const std::size_t close = line.rfind('}');
    const std::size_t space = line.find(' ', close == std::string::npos ? 0 : close);
    if (space == std::string::npos) continue;
    const std::string value = line.substr(space + 1);
    out.samples[sortedLabels(line.substr(0, space))] =
        value == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(value);
  }
  return out;
}

}  // namespace gpufair::metrics::testsupport
