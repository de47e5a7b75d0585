// The boundary between the HTTP transport (ExtenderServer) and request handling (ExtenderService):
// plain request and response values, so handlers are tested without sockets.
// Thread-safety: Request and Response are value types; RequestHandler implementations must be safe
// to call from several io threads at once.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufair::api {

// Views into the transport's buffers, valid for the duration of one handle() call.
struct Request {
  std::string_view method;  // "GET", "POST", ...
  std::string_view target;  // "/filter", possibly with "?query"
  std::string_view body;
};

struct Response {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, e.g. Allow
};

// Takes a request's answer, once, on any thread.
using Reply = std::function<void(Response)>;

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Never throws for bad input: every problem is a 4xx or 5xx Response with a JSON body.
  virtual Response handle(const Request& request) = 0;
  // What the transport calls: like handle(), but a request that waits on something slow (/bind's
  // Binding) may be answered later, from another thread, so that it holds no io thread while it
  // waits. `reply` is called exactly once: before handleAsync returns, or later on any thread.
  // The request's views are valid only until handleAsync returns. Default: reply(handle()).
  virtual void handleAsync(const Request& request, Reply reply) { reply(handle(request)); }
};

// {"Error":"<message>"} with the given HTTP status; the shape every gpufair error body has.
Response errorResponse(int status, std::string_view message);

}  // namespace gpufair::api
