// FakeStore: the object store behind FakeApiServer. Objects per collection ("/api/v1/pods",
// "/apis/coordination.k8s.io/v1/leases"), keyed by namespace and name, with one global
// resourceVersion incremented on every write, a bounded history of watch events (older
// resourceVersions expire: 410 Gone), and consistent snapshots for paginated LISTs.
// Thread-safety: all members are safe to call from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpufair::k8s::fake {

// Where a request path points: "/api/v1/namespaces/ns/pods/p/binding" is
// {collection "/api/v1/pods", ns "ns", name "p", subresource "binding"}.
struct ResourcePath {
  std::string collection;  // group-version prefix + "/" + resource
  std::string resource;    // "pods"
  std::string ns;          // empty for cluster-scoped resources or all-namespace lists
  std::string name;        // empty for collections
  std::string subresource;
};
std::optional<ResourcePath> parseResourcePath(const std::string& path);
// "Pod" for "pods", "Lease" for "leases", ...
std::string kindOf(const std::string& resource);

struct StoredObject {
  nlohmann::json value;
  std::string text;  // value.dump(), cached for LIST and WATCH bodies
};
using ObjectPtr = std::shared_ptr<const StoredObject>;

struct StoreEvent {
  std::uint64_t rv = 0;
  std::string collection;
  std::string ns;
  std::string type;  // ADDED, MODIFIED, DELETED
  ObjectPtr object;
  ObjectPtr previous;  // the object before a MODIFIED (for selector transitions)
};

// The outcome of a write: an HTTP code and either the stored object or a Status reason/message.
struct StoreResult {
  int code = 200;
  std::string reason;  // NotFound, AlreadyExists, Conflict, ...
  std::string message;
  ObjectPtr object;
  std::string body;  // a complete Status body to answer instead of one made of reason and message
  bool ok() const { return code >= 200 && code < 300; }
  static StoreResult failure(int code, std::string reason, std::string message) {
    return {code, std::move(reason), std::move(message), nullptr, {}};
  }
};

struct ListSnapshot {
  std::uint64_t id = 0;
  std::uint64_t rv = 0;
  std::vector<ObjectPtr> items;  // sorted by namespace/name
};

class FakeStore {
 public:
  explicit FakeStore(std::size_t historyLimit) : historyLimit_(historyLimit) {}

  std::uint64_t resourceVersion() const;
  // Watches may resume from any resourceVersion >= this one; older ones are gone.
  std::uint64_t compactedResourceVersion() const;
  // Forgets all history: watches from any earlier resourceVersion get 410 Gone, and so do
  // continue tokens of lists started earlier.
  void compact();
  void setHistoryLimit(std::size_t limit);

  StoreResult create(const ResourcePath& where, nlohmann::json object);
  // Replaces an object; when `object` carries metadata.resourceVersion it must be the current one.
  StoreResult update(const ResourcePath& where, nlohmann::json object);
  // Read-modify-write under the store lock: `change` edits the object or returns a failure.
  using Mutation = std::function<StoreResult(nlohmann::json& object)>;
  StoreResult mutate(const ResourcePath& where, const Mutation& change);
  StoreResult remove(const ResourcePath& where);
  ObjectPtr get(const ResourcePath& where) const;
  // Every object of a collection (namespace "" = all namespaces), sorted, at the current RV.
  ListSnapshot snapshot(const ResourcePath& where) const;

  // Pagination: keeps a snapshot for continue tokens; nullopt when it expired (compaction).
  std::uint64_t keepSnapshot(ListSnapshot snapshot);
  std::optional<ListSnapshot> findSnapshot(std::uint64_t id) const;

  // Events with rv > `after` in `collection` (and `ns` unless empty); nullopt when `after` is
  // older than the retained history.
  std::optional<std::vector<StoreEvent>> eventsAfter(std::uint64_t after,
                                                     const std::string& collection,
                                                     const std::string& ns) const;
  // Waits until a write happens after `rv`, notifyAll() is called, or `deadline`.
  void waitForChange(std::uint64_t rv, std::uint64_t wakeGeneration,
                     std::chrono::steady_clock::time_point deadline) const;
  std::uint64_t wakeGeneration() const;
  void notifyAll();

 private:
  using Key = std::string;  // "ns/name"
  StoreResult write(const ResourcePath& where, const std::string& type, nlohmann::json object,
                    ObjectPtr previous);  // requires mu_
  void recordLocked(StoreEvent event);

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::size_t historyLimit_;
  std::uint64_t rv_ = 0;
  std::uint64_t compactedRv_ = 0;
  std::uint64_t wakeGeneration_ = 0;
  std::uint64_t uidCounter_ = 0;
  std::map<std::string, std::map<Key, ObjectPtr>> collections_;
  std::deque<StoreEvent> history_;
  std::uint64_t nextSnapshotId_ = 1;
  std::map<std::uint64_t, ListSnapshot> snapshots_;
};

}  // namespace gpufair::k8s::fake
