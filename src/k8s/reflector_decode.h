// Decoding of LIST pages and WATCH event lines for the reflector, with simdjson: items stay the
// server's JSON text (no DOM is kept), so a LIST of 150,000 pods costs one pass over its pages.
// Thread-safety: a decoder is used by one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "gpufair/common/status.h"

namespace gpufair::k8s {

struct ListPage {
  std::string resourceVersion;  // metadata.resourceVersion of the list
  std::string continueToken;    // metadata.continue; empty on the last page
};

// The views and the parsed object are valid until the decoder's next decode(), and the views only
// while the line decoded lives.
struct WatchEvent {
  std::string type;               // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  std::string_view object;        // the object as JSON text (empty for BOOKMARK and ERROR)
  simdjson::dom::element parsed;  // the object, parsed once for the reflector and its sink
  std::string resourceVersion;    // object.metadata.resourceVersion, if any
  std::int64_t code = 0;          // ERROR: the Status code (410: the resourceVersion is gone)
  std::string message;            // ERROR: the Status message
};

class ListDecoder {
 public:
  // Appends the text of each of body's items to `items`. `body` gains simdjson's padding.
  Result<ListPage> decode(std::string& body, std::vector<std::string>& items);

 private:
  simdjson::ondemand::parser parser_;
};

class WatchDecoder {
 public:
  Result<WatchEvent> decode(std::string_view line);

 private:
  simdjson::dom::parser parser_;
  std::string minified_;  // the object's text of a line that is not in the server's own shape
};

}  // namespace gpufair::k8s
