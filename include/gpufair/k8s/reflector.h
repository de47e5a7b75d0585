// Reflector: keeps a local copy of one resource in step with the API server, as client-go's
// reflector does: paginated LIST (limit/continue), then WATCH from the list's resourceVersion with
// allowWatchBookmarks; resume from the last seen resourceVersion when the stream drops; on 410 Gone
// (or an ERROR event with code 410) LIST again and reconcile, so deletions that happened while away
// are seen; jittered exponential backoff on errors.
// Thread-safety: run() on one thread; stop(), synced() and the accessors from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// Declared only: the full simdjson header is heavy and only the reflector and the sinks that
// override changed() with the parsed object need it (they include it in their .cc).
namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

#include "gpufair/common/clock.h"
#include "gpufair/k8s/client.h"

namespace gpufair::k8s {

// What a reflector feeds. Objects arrive as their raw JSON text (the "object" of a watch event, or
// an item of a list); the sink decodes what it needs.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A complete LIST: the sink replaces everything it holds of this resource with `items`
  // (objects absent from it were deleted while we were away).
  virtual void replace(const std::vector<std::string>& items) = 0;

  // How the reflector delivers a LIST: beginList(), then listPage() for each page as it arrives
  // (the page's items; the sink may move them out), then endList() once the list is complete. A
  // list that must start over (its continue token expired) or fails gets a new beginList() later;
  // what was gathered is then dropped. The defaults gather the items' text and call replace() at
  // the end; a sink of a large resource overrides them to decode each page at once and keep only
  // what it needs (a LIST of 150,000 pods is over half a gigabyte of JSON).
  virtual void beginList();
  virtual void listPage(std::vector<std::string>& items);
  virtual void endList();
  virtual void added(std::string_view object) = 0;
  virtual void modified(std::string_view object) = 0;
  virtual void deleted(std::string_view object) = 0;

  // A watch event, whose object the reflector has parsed already (to check it and read its
  // resourceVersion): `parsed` is that object, valid during the call only, `object` its text. The
  // default passes the text on to added(), modified() or deleted(); a sink that decodes
  // simdjson's DOM overrides it so that the object is not parsed a second time.
  enum class Change { kAdded, kModified, kDeleted };
  virtual void changed(Change change, std::string_view object, simdjson::dom::element parsed);

 private:
  std::vector<std::string> gathered_;  // the default listPage()'s items until endList()
};

struct ReflectorOptions {
  std::string name;           // "pods", for logs and metrics
  std::string listPath;       // "/api/v1/pods" or "/api/v1/namespaces/NS/configmaps"
  std::string labelSelector;  // optional
  std::string fieldSelector;  // optional
  int pageSize = 500;
  std::chrono::seconds watchTimeout{300};  // timeoutSeconds of each watch (server ends it cleanly)
  std::chrono::milliseconds backoffInitial{800};
  std::chrono::milliseconds backoffMax{30'000};
  // The watch's ApiRequest::batchWindow: while events keep coming, they are read and handed to
  // the sink in batches up to this far apart (a quiet stream's event at once).
  std::chrono::microseconds batchWindow{2'000};
};

struct ReflectorStats {
  std::uint64_t lists = 0;
  std::uint64_t watchRestarts = 0;
  std::uint64_t events = 0;
  std::uint64_t gone = 0;  // 410s answered by a relist
  std::string resourceVersion;
};

class Reflector {
 public:
  Reflector(KubeClientPtr client, ReflectorOptions options, ReflectorSink& sink, ClockPtr clock);
  ~Reflector();

  // Lists and watches until stop(). Never throws; errors are logged and retried with backoff.
  void run();
  void stop();
  bool synced() const;  // a first complete LIST has reached the sink
  // Synced, and no relist under way: after a 410 (or an error that needs a new LIST) the sink
  // still holds the last complete list, which misses what changed meanwhile, until the new LIST
  // reaches it. Decisions wait for this (ExtenderService's decision gate).
  bool consistent() const;
  // When the reflector last had a working stream (or finished a list); for readiness.
  Timestamp lastHealthy() const;
  ReflectorStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpufair::k8s
