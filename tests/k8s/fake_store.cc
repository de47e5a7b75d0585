#include "k8s/fake_store.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace gpufair::k8s::fake {
namespace {

constexpr std::size_t kMaxSnapshots = 32;

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : path) {
    if (c == '/') {
      if (!current.empty()) parts.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(std::move(current));
  return parts;
}

std::string apiVersionOf(const std::string& collection) {
  // "/api/v1/pods" -> "v1"; "/apis/coordination.k8s.io/v1/leases" -> "coordination.k8s.io/v1"
  auto parts = splitPath(collection);
  if (parts.size() >= 3 && parts[0] == "api") return parts[1];
  if (parts.size() >= 4) return parts[1] + "/" + parts[2];
  return "v1";
}

std::string keyOf(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

}  // namespace

std::optional<ResourcePath> parseResourcePath(const std::string& pathWithQuery) {
  auto path = pathWithQuery.substr(0, pathWithQuery.find('?'));
  auto parts = splitPath(path);
  std::string prefix;
  std::size_t at = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    prefix = "/api/" + parts[1];
    at = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    prefix = "/apis/" + parts[1] + "/" + parts[2];
    at = 3;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
  ResourcePath out;
  if (rest.empty()) return std::nullopt;
  std::size_t r = 0;
  if (rest[0] == "namespaces" && rest.size() >= 3) {
    out.ns = rest[1];
    r = 2;
  }
  if (rest.size() - r > 3) return std::nullopt;
  out.resource = rest[r];
  if (rest.size() > r + 1) out.name = rest[r + 1];
  if (rest.size() > r + 2) out.subresource = rest[r + 2];
  out.collection = prefix + "/" + out.resource;
  return out;
}

std::string kindOf(const std::string& resource) {
  static const std::map<std::string, std::string> kKinds = {
      {"pods", "Pod"},
      {"nodes", "Node"},
      {"configmaps", "ConfigMap"},
      {"leases", "Lease"},
      {"events", "Event"},
      {"namespaces", "Namespace"},
      {"secrets", "Secret"},
      {"services", "Service"},
      {"poddisruptionbudgets", "PodDisruptionBudget"}};
  auto it = kKinds.find(resource);
  if (it != kKinds.end()) return it->second;
  std::string kind = resource;
  if (!kind.empty() && kind.back() == 's') kind.pop_back();
  if (!kind.empty()) kind[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(kind[0])));
  return kind;
}

std::uint64_t FakeStore::resourceVersion() const {
  std::lock_guard lock(mu_);
  return rv_;
}

std::uint64_t FakeStore::compactedResourceVersion() const {
  std::lock_guard lock(mu_);
  return compactedRv_;
}

void FakeStore::compact() {
  std::lock_guard lock(mu_);
  history_.clear();
  compactedRv_ = rv_;
  ++wakeGeneration_;
  changed_.notify_all();
}

void FakeStore::setHistoryLimit(std::size_t limit) {
  std::lock_guard lock(mu_);
  historyLimit_ = limit;
  while (history_.size() > historyLimit_) {
    compactedRv_ = history_.front().rv;
    history_.pop_front();
  }
}

StoreResult FakeStore::create(const ResourcePath& where, nlohmann::json object) {
  std::lock_guard lock(mu_);
  auto& meta = object["metadata"];
  if (!meta.contains("name") || meta["name"].get<std::string>().empty()) {
    if (meta.contains("generateName")) {
      meta["name"] = meta["generateName"].get<std::string>() + std::to_string(rv_ + 1) + "x";
    } else {
      return StoreResult::failure(422, "Invalid", "metadata.name: Required value");
    }
  }
  auto name = meta["name"].get<std::string>();
  auto& objects = collections_[where.collection];
  if (objects.count(keyOf(where.ns, name)) != 0) {
    return StoreResult::failure(409, "AlreadyExists",
                                where.resource + " \"" + name + "\" already exists");
  }
  meta.erase("resourceVersion");
  if (!meta.contains("uid")) meta["uid"] = "uid-" + std::to_string(++uidCounter_);
  if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = "2024-01-01T00:00:00Z";
  auto result = write(where, "ADDED", std::move(object), nullptr);
  result.code = 201;
  return result;
}

StoreResult FakeStore::update(const ResourcePath& where, nlohmann::json object) {
  std::lock_guard lock(mu_);
  auto& objects = collections_[where.collection];
  auto it = objects.find(keyOf(where.ns, where.name));
  if (it == objects.end()) {
    return StoreResult::failure(404, "NotFound",
                                where.resource + " \"" + where.name + "\" not found");
  }
  const auto& current = it->second->value["metadata"];
  auto& meta = object["metadata"];
  if (meta.contains("resourceVersion") && meta["resourceVersion"] != current["resourceVersion"]) {
    return StoreResult::failure(
        409, "Conflict",
        "Operation cannot be fulfilled on " + where.resource + " \"" + where.name +
            "\": the object has been modified; please apply your changes to the latest version "
            "and try again");
  }
  meta["name"] = where.name;
  meta["uid"] = current.value("uid", "");
  meta["creationTimestamp"] = current.value("creationTimestamp", "");
  return write(where, "MODIFIED", std::move(object), it->second);
}

StoreResult FakeStore::mutate(const ResourcePath& where, const Mutation& change) {
  std::lock_guard lock(mu_);
  auto& objects = collections_[where.collection];
  auto it = objects.find(keyOf(where.ns, where.name));
  if (it == objects.end()) {
    return StoreResult::failure(404, "NotFound",
                                where.resource + " \"" + where.name + "\" not found");
  }
  auto object = it->second->value;
  auto verdict = change(object);
  if (!verdict.ok()) return verdict;
  auto result = write(where, "MODIFIED", std::move(object), it->second);
  if (result.ok() && verdict.code != 200) result.code = verdict.code;
  return result;
}

StoreResult FakeStore::remove(const ResourcePath& where) {
  std::lock_guard lock(mu_);
  auto& objects = collections_[where.collection];
  auto it = objects.find(keyOf(where.ns, where.name));
  if (it == objects.end()) {
    return StoreResult::failure(404, "NotFound",
                                where.resource + " \"" + where.name + "\" not found");
  }
  auto object = it->second->value;
  auto previous = it->second;
  objects.erase(it);
  return write(where, "DELETED", std::move(object), previous);
}

ObjectPtr FakeStore::get(const ResourcePath& where) const {
  std::lock_guard lock(mu_);
  auto c = collections_.find(where.collection);
  if (c == collections_.end()) return nullptr;
  auto it = c->second.find(keyOf(where.ns, where.name));
  return it == c->second.end() ? nullptr : it->second;
}

ListSnapshot FakeStore::snapshot(const ResourcePath& where) const {
  std::lock_guard lock(mu_);
  ListSnapshot out;
  out.rv = rv_;
  auto c = collections_.find(where.collection);
  if (c == collections_.end()) return out;
  if (where.ns.empty()) {
    out.items.reserve(c->second.size());
    for (const auto& [key, object] : c->second) out.items.push_back(object);
  } else {
    auto prefix = where.ns + "/";
    for (auto it = c->second.lower_bound(prefix);
         it != c->second.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      out.items.push_back(it->second);
    }
  }
  return out;
}

std::uint64_t FakeStore::keepSnapshot(ListSnapshot snapshot) {
  std::lock_guard lock(mu_);
  snapshot.id = nextSnapshotId_++;
  auto id = snapshot.id;
  snapshots_[id] = std::move(snapshot);
  while (snapshots_.size() > kMaxSnapshots) snapshots_.erase(snapshots_.begin());
  return id;
}

std::optional<ListSnapshot> FakeStore::findSnapshot(std::uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = snapshots_.find(id);
  if (it == snapshots_.end() || it->second.rv < compactedRv_) return std::nullopt;
  return it->second;
}

std::optional<std::vector<StoreEvent>> FakeStore::eventsAfter(std::uint64_t after,
                                                              const std::string& collection,
                                                              const std::string& ns) const {
  std::lock_guard lock(mu_);
  if (after < compactedRv_) return std::nullopt;
  auto first = std::upper_bound(history_.begin(), history_.end(), after,
                                [](std::uint64_t rv, const StoreEvent& e) { return rv < e.rv; });
  std::vector<StoreEvent> out;
  for (auto it = first; it != history_.end(); ++it) {
    if (it->collection != collection) continue;
    if (!ns.empty() && it->ns != ns) continue;
    out.push_back(*it);
  }
  return out;
}

void FakeStore::waitForChange(std::uint64_t rv, std::uint64_t wakeGeneration,
                              std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, deadline,
                      [&] { return rv_ > rv || wakeGeneration_ != wakeGeneration; });
}

std::uint64_t FakeStore::wakeGeneration() const {
  std::lock_guard lock(mu_);
  return wakeGeneration_;
}

void FakeStore::notifyAll() {
  std::lock_guard lock(mu_);
  ++wakeGeneration_;
  changed_.notify_all();
}

StoreResult FakeStore::write(const ResourcePath& where, const std::string& type,
                             nlohmann::json object, ObjectPtr previous) {
  auto& meta = object["metadata"];
  if (!where.ns.empty()) meta["namespace"] = where.ns;
  meta["resourceVersion"] = std::to_string(++rv_);
  if (!object.contains("kind")) object["kind"] = kindOf(where.resource);
  if (!object.contains("apiVersion")) object["apiVersion"] = apiVersionOf(where.collection);
  auto stored = std::make_shared<StoredObject>();
  stored->text = object.dump();
  stored->value = std::move(object);
  ObjectPtr ptr = stored;
  auto name = ptr->value["metadata"]["name"].get<std::string>();
  if (type != "DELETED") collections_[where.collection][keyOf(where.ns, name)] = ptr;
  recordLocked({rv_, where.collection, where.ns, type, ptr, std::move(previous)});
  StoreResult result;
  result.object = ptr;
  return result;
}

void FakeStore::recordLocked(StoreEvent event) {
  history_.push_back(std::move(event));
  while (history_.size() > historyLimit_) {
    compactedRv_ = history_.front().rv;
    history_.pop_front();
  }
  changed_.notify_all();
}

}  // namespace gpufair::k8s::fake
