// WATCH for FakeApiServer: a chunked stream of {"type":...,"object":...} lines. As kube-apiserver
// writes them (WatchServer.HandleHTTP: each event encoded into net/http's buffered writer, flushed
// only once no further event is queued): the events that are there when the stream wakes up leave
// in one write, as one chunk, not one write per event.
#include <charconv>
#include <chrono>

#include "k8s/fake_server_state.h"

namespace gpufair::k8s::fake {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t toNumber(const std::string& text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::string eventLine(std::string_view type, std::string_view objectText) {
  std::string line;
  line.reserve(objectText.size() + 32);
  line += R"({"type":")";
  line += type;
  line += R"(","object":)";
  line += objectText;
  line += "}\n";
  return line;
}

std::string goneMessage(std::uint64_t requested, std::uint64_t oldest) {
  return "too old resource version: " + std::to_string(requested) + " (" + std::to_string(oldest) +
         ")";
}

// The type a client sees for a store event, given the selector: objects entering the selection
// are ADDED, objects leaving it DELETED. Empty: not visible.
std::string visibleType(const StoreEvent& event, const Selector& selector) {
  bool now = selector.matches(event.object->value);
  if (event.type == "ADDED") return now ? "ADDED" : "";
  if (event.type == "DELETED") return now ? "DELETED" : "";
  bool before = event.previous != nullptr && selector.matches(event.previous->value);
  if (now && before) return "MODIFIED";
  if (now) return "ADDED";
  if (before) return "DELETED";
  return "";
}

struct WatchCount {
  explicit WatchCount(std::atomic<std::size_t>& n) : count(n) { ++count; }
  ~WatchCount() { --count; }
  std::atomic<std::size_t>& count;
};

}  // namespace

bool serveWatch(FakeApiServer::State& state, const HttpRequest& request, ResponseWriter& out) {
  auto where = parseResourcePath(request.path);
  if (!where || !where->name.empty()) {
    return out.respond(statusResponse(405, "MethodNotAllowed", "watch needs a collection"));
  }
  Selector selector;
  try {
    selector =
        Selector::parse(request.queryValue("labelSelector"), request.queryValue("fieldSelector"));
  } catch (const std::exception& e) {
    return out.respond(statusResponse(400, "BadRequest", e.what()));
  }
  auto bookmarksAllowed = request.queryValue("allowWatchBookmarks");
  bool bookmarks = bookmarksAllowed == "true" || bookmarksAllowed == "1";
  auto timeoutSeconds = toNumber(request.queryValue("timeoutSeconds"));
  auto deadline = timeoutSeconds > 0 ? Clock::now() + std::chrono::seconds(timeoutSeconds)
                                     : Clock::time_point::max();
  auto rvText = request.queryValue("resourceVersion");

  std::uint64_t cursor = 0;
  std::vector<std::string> initial;
  if (rvText.empty() || rvText == "0") {
    auto snapshot = state.store.snapshot(*where);
    cursor = snapshot.rv;
    for (const auto& object : snapshot.items) {
      if (selector.matches(object->value)) initial.push_back(eventLine("ADDED", object->text));
    }
  } else {
    cursor = toNumber(rvText);
  }
  if (state.store.eventsAfter(cursor, where->collection, where->ns) == std::nullopt &&
      state.options.goneAsHttpStatus) {
    return out.respond(statusResponse(410, "Expired",
                                      goneMessage(cursor, state.store.compactedResourceVersion())));
  }

  WatchCount counted(state.activeWatches);
  auto dropGeneration = state.dropGeneration.load();
  auto bookmarkGeneration = state.bookmarkGeneration.load();
  auto expireGeneration = state.expireGeneration.load();
  auto interval = state.options.bookmarkInterval;
  auto nextBookmark = interval.count() > 0 ? Clock::now() + interval : Clock::time_point::max();
  auto kind = kindOf(where->resource);
  auto apiVersion = where->collection.substr(0, where->collection.rfind('/'));  // "/apis/g/v"
  apiVersion = apiVersion.substr(apiVersion.find('/', 1) + 1);                  // "g/v"
  if (!out.beginChunked(200)) return false;
  // What one wake-up sends: every event there is, then one flush.
  std::string batch;
  for (const auto& line : initial) batch += line;
  if (!batch.empty() && !out.chunk(batch)) return false;
  for (;;) {
    batch.clear();
    auto wakeGeneration = state.store.wakeGeneration();
    if (state.stopping || state.dropGeneration != dropGeneration) return false;  // break it
    auto current = state.store.resourceVersion();
    auto events = state.store.eventsAfter(cursor, where->collection, where->ns);
    if (!events || state.expireGeneration != expireGeneration) {
      auto status = statusResponse(410, "Expired",
                                   goneMessage(cursor, state.store.compactedResourceVersion()));
      return out.chunk(eventLine("ERROR", status.body)) && out.endChunked();
    }
    for (const auto& event : *events) {
      if (event.rv > current) break;
      auto type = visibleType(event, selector);
      if (!type.empty()) batch += eventLine(type, event.object->text);
    }
    cursor = std::max(cursor, current);
    auto now = Clock::now();
    bool bookmarkNow = state.bookmarkGeneration != bookmarkGeneration || now >= nextBookmark;
    if (bookmarks && bookmarkNow) {
      nlohmann::json object = {{"kind", kind},
                               {"apiVersion", apiVersion},
                               {"metadata", {{"resourceVersion", std::to_string(cursor)}}}};
      batch += eventLine("BOOKMARK", object.dump());
    }
    if (!batch.empty() && !out.chunk(batch)) return false;
    if (bookmarkNow) {
      bookmarkGeneration = state.bookmarkGeneration;
      if (interval.count() > 0) nextBookmark = now + interval;
    }
    if (now >= deadline) return out.endChunked();
    if (out.peerClosed()) return false;
    auto wakeAt = std::min({now + std::chrono::milliseconds(100), deadline, nextBookmark});
    state.store.waitForChange(cursor, wakeGeneration, wakeAt);
  }
}

}  // namespace gpufair::k8s::fake
