// QuotaWatcher: turns quota ConfigMaps into the Mirror's quota config while gpufair runs.
//
// Quota ConfigMaps are labelled gpufair.io/quota-config=true and live in gpufair's own namespace;
// the reflector lists and watches only those (reflectorOptions()), and every object is checked
// again here: a labelled ConfigMap in a team's namespace grants nothing (it is ignored and logged).
// Any number of them may exist; each carries a queues.yaml, and they are merged (config module).
//
// On every change the whole config is recomputed:
//   - valid: applied to the Mirror at once (no restart) and summarised in the log;
//   - invalid: the last good config stays in force; the errors are logged line by line, a Warning
//     Event "InvalidQuotaConfig" goes to each offending ConfigMap, and healthy()/lastError() say so
//     until a later change is valid (for /readyz details and metrics);
//   - no quota ConfigMap left: the default config (every namespace in the default queue).
// Thread-safety: the ReflectorSink methods come from one reflector thread; the accessors may be
// called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/codec/objects.h"
#include "gpufair/common/quota.h"
#include "gpufair/k8s/events.h"
#include "gpufair/k8s/reflector.h"
#include "gpufair/state/mirror.h"

namespace gpufair::k8s {

class QuotaWatcher final : public ReflectorSink {
 public:
  // `ns`: gpufair's own namespace. `events` may be null (no Events are written); it must outlive
  // the watcher.
  QuotaWatcher(state::Mirror& mirror, std::string ns, EventRecorder* events = nullptr);

  // What the reflector for quota ConfigMaps needs: name, listPath and labelSelector.
  ReflectorOptions reflectorOptions() const;

  void replace(const std::vector<std::string>& items) override;
  void added(std::string_view object) override;
  void modified(std::string_view object) override;
  void deleted(std::string_view object) override;

  bool healthy() const;                   // the quota ConfigMaps as they are now are in force
  std::string lastError() const;          // why not, one problem per line; empty when healthy
  std::uint64_t rejectedChanges() const;  // changes refused because the result was invalid
  std::uint64_t appliedChanges() const;   // configs applied to the mirror
  std::uint64_t ignoredObjects() const;   // foreign namespace, missing label, undecodable
  std::size_t configMaps() const;         // quota ConfigMaps currently known

 private:
  // Whether `cm` is one of ours; logs why not.
  bool admissible(const codec::ConfigMap& cm);
  void upsert(std::string_view object);
  // Recomputes and applies (or rejects) the config. `changed`: key of the ConfigMap that changed.
  void recomputeLocked(const std::string& changed);

  state::Mirror& mirror_;
  std::string ns_;
  EventRecorder* events_;

  mutable std::mutex mu_;
  std::map<std::string, codec::ConfigMap> configMaps_;  // GUARDED_BY(mu_) by name
  std::optional<QuotaConfig> applied_;                  // GUARDED_BY(mu_) last good, if any
  bool healthy_ = true;                                 // GUARDED_BY(mu_)
  std::string lastError_;                               // GUARDED_BY(mu_)
  std::uint64_t rejected_ = 0;                          // GUARDED_BY(mu_)
  std::uint64_t appliedCount_ = 0;                      // GUARDED_BY(mu_)
  std::uint64_t ignored_ = 0;                           // GUARDED_BY(mu_)
};

// A one-line summary of a quota config for logs: "2 queues: team-a 20/30, team-b 10/-; default 0".
std::string describeQuota(const QuotaConfig& config);

}  // namespace gpufair::k8s
