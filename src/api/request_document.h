// RequestDocument: parses one request body with simdjson's DOM parser. Ordinary bodies reuse this
// thread's parser and padded buffer (no allocation once warm); bodies over kReusedBodyLimit get
// their own, released after the request, so one huge request does not pin memory in every io
// thread. Thread-safety: one instance per request on one thread; not reentrant on a thread
// (handlers are synchronous, so it never is).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "gpufair/api/http.h"
#include "gpufair/api/wire.h"
#include "gpufair/common/status.h"

#include "node_names_memo.h"

namespace gpufair::api::detail {

class RequestDocument {
 public:
  static constexpr std::size_t kReusedBodyLimit = 4u << 20;

  explicit RequestDocument(std::string_view body);
  // An ExtenderArgs body whose top-level NodeNames array `names` can read (NodeNamesMemo::take)
  // is parsed with that array replaced by `[]`; namesTaken() says so, and names.names() are the
  // array's. Otherwise the body is parsed whole, as by the constructor above.
  RequestDocument(std::string_view body, NodeNamesMemo& names);
  RequestDocument(const RequestDocument&) = delete;
  RequestDocument& operator=(const RequestDocument&) = delete;

  // The root element, or why the body is not JSON.
  const Status& status() const { return status_; }
  simdjson::dom::element root() const { return root_; }
  // A reusable ExtenderArgs for this thread (or this request, when large); views into root().
  ExtenderArgs& extenderArgs() { return *args_; }
  // Whether the NodeNames array was cut out of the parsed body (see the constructor).
  bool namesTaken() const { return namesTaken_; }

 private:
  struct Scratch {
    simdjson::dom::parser parser;
    std::string buffer;
    ExtenderArgs args;
  };
  static Scratch& threadScratch();
  // Parses head + middle + tail (one copy into the padded buffer).
  void parse(std::string_view head, std::string_view middle = {}, std::string_view tail = {});

  Scratch own_;  // used for large bodies only; default construction allocates nothing
  Scratch* scratch_;
  ExtenderArgs* args_;
  simdjson::dom::element root_;
  Status status_;
  bool namesTaken_ = false;
};

// The 400 answer to a request body that cannot be read (not JSON, or not the verb's arguments),
// with the reason, logged at info under the verb's name.
Response badRequest(std::string_view verb, std::string_view message);

}  // namespace gpufair::api::detail
