// Fluent builders for tests, after kube-scheduler's MakePod()/MakeNode() wrappers:
//   MakePod("team-a", "train-1").gpus(3).on("node-1").obj()
//   MakeNode("node-1").gpus(10).obj()
//   MakeQueue("team-a").deserved(20).limit(30).obj()
//   MakePod("team-a", "notebook").share(0.5).gpuIndex(1).models({"V100"}).cpu(4).memGi(16)
//   MakeNode("node-1").gpus(8).model("V100").cpu(96).memGi(512)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpufair/common/clock.h"
#include "gpufair/common/labels.h"
#include "gpufair/common/quota.h"
#include "gpufair/policy/model.h"

namespace gpufair::testing {

inline MilliGpu gpus(double n) {
  return static_cast<MilliGpu>(n * kMilliPerGpu);
}

class MakePod {
 public:
  MakePod(std::string ns, std::string name) {
    pod_.ns = std::move(ns);
    pod_.name = std::move(name);
    pod_.uid = "uid-" + pod_.ns + "-" + pod_.name;
  }
  MakePod& uid(std::string u) {
    pod_.uid = std::move(u);
    return *this;
  }
  MakePod& gpus(double n) {
    pod_.gpus = testing::gpus(n);
    return *this;
  }
  // Part of one GPU: share(0.5) is half a GPU (gpufair.io/gpu-fraction: "0.5").
  MakePod& share(double fraction) {
    pod_.setGpuShare(testing::gpus(fraction));
    return *this;
  }
  MakePod& gpuIndex(int index) {
    pod_.gpuIndex = index;
    return *this;
  }
  MakePod& models(std::vector<std::string> m) {
    pod_.gpuModels = std::move(m);
    return *this;
  }
  MakePod& cpu(double cores) {
    pod_.cpuMilli = static_cast<std::int64_t>(cores * 1000);
    return *this;
  }
  MakePod& memGi(double gi) {
    pod_.memoryBytes = static_cast<std::int64_t>(gi * 1024 * 1024 * 1024);
    return *this;
  }
  MakePod& annotation(std::string k, std::string v) {
    pod_.annotations[std::move(k)] = std::move(v);
    return *this;
  }
  MakePod& on(std::string node) {
    pod_.nodeName = std::move(node);
    pod_.phase = policy::PodPhase::kRunning;
    return *this;
  }
  MakePod& phase(policy::PodPhase p) {
    pod_.phase = p;
    return *this;
  }
  MakePod& label(std::string k, std::string v) {
    pod_.labels[std::move(k)] = std::move(v);
    return *this;
  }
  MakePod& queue(std::string q) { return label(kQueueLabel, std::move(q)); }
  // A member of gang `name` of `size` pods (label and annotation, as the codec reads them).
  MakePod& gang(std::string name, int size) {
    label(kGangLabel, std::move(name));
    annotation(kGangSizeAnnotation, std::to_string(size));
    policy::applyGangLabels(pod_);
    return *this;
  }
  MakePod& overQuota() {
    pod_.overQuota = true;
    return label(kOverQuotaLabel, "true");
  }
  // Created by controller `uid` (ownerReferences, controller: true), e.g. a Job.
  MakePod& controller(std::string uid) {
    pod_.controller = std::move(uid);
    return *this;
  }
  // Consolidation may move it (label gpufair.io/movable=true).
  MakePod& movable() { return label(kMovableLabel, "true"); }
  MakePod& scheduler(std::string name) {
    pod_.schedulerName = std::move(name);
    return *this;
  }
  MakePod& terminating() {
    pod_.terminating = true;
    return *this;
  }
  policy::Pod obj() const { return pod_; }
  operator policy::Pod() const { return pod_; }  // NOLINT(google-explicit-constructor)

 private:
  policy::Pod pod_;
};

class MakeNode {
 public:
  explicit MakeNode(std::string name) { node_.name = std::move(name); }
  MakeNode& gpus(double n) {
    node_.allocatable = testing::gpus(n);
    return *this;
  }
  MakeNode& model(std::string m) {
    node_.gpuModel = std::move(m);
    return *this;
  }
  MakeNode& cpu(double cores) {
    node_.cpuMilli = static_cast<std::int64_t>(cores * 1000);
    return *this;
  }
  MakeNode& memGi(double gi) {
    node_.memoryBytes = static_cast<std::int64_t>(gi * 1024 * 1024 * 1024);
    return *this;
  }
  MakeNode& unschedulable() {
    node_.unschedulable = true;
    return *this;
  }
  MakeNode& deleting() {
    node_.deleting = true;
    return *this;
  }
  policy::Node obj() const { return node_; }
  operator policy::Node() const { return node_; }  // NOLINT(google-explicit-constructor)

 private:
  policy::Node node_;
};

class MakeQueue {
 public:
  explicit MakeQueue(std::string name) {
    q_.name = name;
    q_.namespaces = {std::move(name)};
  }
  MakeQueue& namespaces(std::vector<std::string> ns) {
    q_.namespaces = std::move(ns);
    return *this;
  }
  MakeQueue& deserved(double n) {
    q_.gpu.deserved = testing::gpus(n);
    return *this;
  }
  MakeQueue& limit(double n) {
    q_.gpu.limit = testing::gpus(n);
    return *this;
  }
  MakeQueue& weight(double w) {
    q_.gpu.overQuotaWeight = w;
    return *this;
  }
  // A child of `name` (a tree); a parent queue is made with namespaces({}).
  MakeQueue& parent(std::string name) {
    q_.parent = std::move(name);
    return *this;
  }
  MakeQueue& priority(int p) {
    q_.priority = p;
    return *this;
  }
  QueueQuota obj() const { return q_; }
  operator QueueQuota() const { return q_; }  // NOLINT(google-explicit-constructor)

 private:
  QueueQuota q_;
};

// A clock tests move by hand.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = Timestamp{std::chrono::seconds{1'800'000'000}})
      : now_(start) {}
  Timestamp now() const override { return now_; }
  void advance(std::chrono::seconds d) { now_ += d; }

 private:
  Timestamp now_;
};

}  // namespace gpufair::testing
