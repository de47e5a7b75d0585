#include "gpufair/policy/gang.h"

#include <algorithm>
#include <map>

#include "gpufair/policy/undo_log.h"

namespace gpufair::policy {
namespace {

// What one member takes in a plan: whole GPUs (a fractional member takes one), CPU and memory.
struct Need {
  int whole = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  bool operator==(const Need&) const = default;
};

Need needOf(const Pod& pod, bool cpuMemory) {
  return {pod.isFractional() ? 1 : pod.gpuCount(), cpuMemory ? pod.cpuMilli : 0,
          cpuMemory ? pod.memoryBytes : 0};
}

// A pod taking exactly `need` (a fractional member reserves a whole GPU).
PodPtr shapeOf(const Need& need) {
  auto pod = std::make_shared<Pod>();
  pod->setWholeGpus(need.whole);
  pod->cpuMilli = need.cpu;
  pod->memoryBytes = need.memory;
  return pod;
}

// A node's room for the gang: what its members may still take (CPU and memory only when checked).
struct Room {
  int whole = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};

struct Member {
  const Pod* pod;
  Need need;
  std::string uid;  // empty: not offered yet
  PodPtr shape;     // what the plan places: need.whole whole GPUs, need.cpu, need.memory
};

// Free room on the undo log's copy of the snapshot's nodes, for `holder` (the gang's reservations
// are its own).
class Rooms {
 public:
  Rooms(UndoLog& log, const Pod& holder, bool cpuMemory)
      : log_(log), holder_(holder), cpuMemory_(cpuMemory) {}
  Room room(std::size_t node) const {
    return {log_.wholeGpusFor(node, holder_), cpuMemory_ ? log_.cpuFree(node) : 0,
            cpuMemory_ ? log_.memoryFree(node) : 0};
  }
  bool fits(std::size_t node, const Need& need) const {
    const Room r = room(node);
    return r.whole >= need.whole && r.cpu >= need.cpu && r.memory >= need.memory;
  }
  UndoLog& log() { return log_; }

 private:
  UndoLog& log_;
  const Pod& holder_;
  bool cpuMemory_;
};

// Depth-first search over members (largest first), nodes best fit first. Greedy: the first
// candidate only, which usually succeeds and keeps large blocks whole. Exhaustive: members of the
// same shape take nodes in ascending index order, and nodes in the same state are tried once per
// level; both only cut placements that are permutations of ones already tried.
class GangSearch {
 public:
  GangSearch(const ClusterSnapshot& snapshot, std::vector<Member>& members, Rooms& rooms,
             int maxSteps, bool greedy)
      : snapshot_(snapshot),
        members_(members),
        rooms_(rooms),
        maxSteps_(maxSteps),
        greedy_(greedy) {
    chosen_.assign(members.size(), 0);
  }

  bool run() { return place(0); }
  bool exhausted() const { return steps_ > maxSteps_; }

 private:
  bool eligible(std::size_t node, const Member& m) const {
    const NodeState& n = *snapshot_.nodes()[node];
    return n.node().takesNewPods() && m.pod->allowsModel(n.node().gpuModel) &&
           n.allocatable() >= static_cast<MilliGpu>(m.need.whole) * kMilliPerGpu;
  }

  bool place(std::size_t k) {
    if (k == members_.size()) return true;
    const Member& m = members_[k];
    const bool sameAsPrevious = k > 0 && members_[k - 1].need == m.need &&
                                members_[k - 1].pod->gpuModels == m.pod->gpuModels;
    const std::size_t from = sameAsPrevious && !greedy_ ? chosen_[k - 1] : 0;
    std::vector<std::size_t> candidates;
    for (std::size_t i = from; i < snapshot_.nodes().size(); ++i) {
      if (rooms_.fits(i, m.need) && eligible(i, m)) candidates.push_back(i);
    }
    std::stable_sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
      return rooms_.room(a).whole < rooms_.room(b).whole;
    });
    std::vector<std::pair<const NodeState*, Room>> tried;
    for (std::size_t i : candidates) {
      const NodeState& n = *snapshot_.nodes()[i];
      const Room r = rooms_.room(i);
      const bool same = std::any_of(tried.begin(), tried.end(), [&](const auto& t) {
        return t.second.whole == r.whole && t.second.cpu == r.cpu && t.second.memory == r.memory &&
               t.first->node().gpuModel == n.node().gpuModel &&
               t.first->allocatable() == n.allocatable();
      });
      if (same) continue;
      if (++steps_ > maxSteps_) return false;
      tried.emplace_back(&n, r);
      const UndoLog::Mark mark = rooms_.log().checkpoint();
      rooms_.log().place(i, m.shape);
      chosen_[k] = i;
      if (place(k + 1)) return true;
      rooms_.log().rollback(mark);
      if (greedy_ || exhausted()) return false;
    }
    return false;
  }

  const ClusterSnapshot& snapshot_;
  std::vector<Member>& members_;
  Rooms& rooms_;
  int maxSteps_;
  bool greedy_;
  int steps_ = 0;
  std::vector<std::size_t> chosen_;
};

std::string gpuText(MilliGpu m) {
  return formatGpus(m) + (m <= kMilliPerGpu ? " GPU" : " GPUs");
}

// "4 × 8 GPUs", "2 × 8 GPUs + 1 × 1 GPU".
std::string shapes(const std::vector<Member>& members) {
  std::map<MilliGpu, int, std::greater<>> count;
  for (const auto& m : members) {
    if (m.pod->gpus > 0) ++count[m.pod->gpus];  // members without GPUs need no room
  }
  std::string out;
  for (const auto& [gpus, n] : count) {
    out += (out.empty() ? "" : " + ") + std::to_string(n) + " × " + gpuText(gpus);
  }
  return out;
}

std::string nodesWith(int nodes, int whole) {
  const std::string free = " " + std::to_string(whole) + " free";
  if (nodes == 0) return "no node has" + free;
  return std::to_string(nodes) + (nodes == 1 ? " node has" : " nodes have") + free;
}

void reject(FilterResult& r, std::string_view node, const Status& status) {
  auto& verdicts = status.code() == Code::kUnschedulableAndUnresolvable ? r.unresolvable : r.failed;
  verdicts.push_back({node, status.reason()});
}

}  // namespace

std::vector<Reservation> GangPlan::reservations() const {
  std::map<std::string, MilliGpu> byNode;
  for (const auto& slot : slots) {
    const MilliGpu whole = (slot.gpus + kMilliPerGpu - 1) / kMilliPerGpu * kMilliPerGpu;
    byNode[slot.node] += whole;
  }
  std::map<MilliGpu, int, std::greater<>> count;
  for (const auto& slot : slots) ++count[slot.gpus];
  std::string shape;
  for (const auto& [gpus, n] : count) {
    shape += (shape.empty() ? "" : " + ") + std::to_string(n) + " × " + gpuText(gpus);
  }
  std::vector<Reservation> out;
  const std::string name = key.substr(kGangHolderPrefix.size());
  for (const auto& [node, gpus] : byNode) {
    out.push_back({node, gpus, key, admission.queue, "gang of " + shape, "gang " + name});
  }
  return out;
}

GangPlan planGang(const ClusterSnapshot& snapshot, const Pod& member,
                  const GangPlanOptions& options) {
  GangPlan plan;
  plan.key = member.gangKey();
  plan.admission.queue = member.queue;
  const GangState* gang = snapshot.findGang(plan.key);
  plan.size = std::max(member.gangSize, gang != nullptr ? gang->size : 0);
  plan.placed = gang != nullptr ? gang->placed : 0;
  const int missing = plan.size - plan.placed;
  if (missing <= 0) return plan;

  // The members still to place: this one, the others offered so far, then ones like this.
  const bool cpuMemory = snapshot.fitOptions().checkCpuMemory;
  std::vector<Member> members;
  members.push_back({&member, needOf(member, cpuMemory), member.uid, nullptr});
  auto known = [&](const PodPtr& p) {
    if (static_cast<int>(members.size()) < missing && p->uid != member.uid) {
      members.push_back({p.get(), needOf(*p, cpuMemory), p->uid, nullptr});
    }
  };
  if (gang != nullptr) std::for_each(gang->pending.begin(), gang->pending.end(), known);
  std::for_each(options.unplacedWithoutGpus.begin(), options.unplacedWithoutGpus.end(), known);
  while (static_cast<int>(members.size()) < missing) {
    members.push_back({&member, needOf(member, cpuMemory), "", nullptr});
  }

  MilliGpu total = 0;
  for (const auto& m : members) total += m.pod->gpus;
  const std::string more = plan.placed > 0 ? " more" : "";
  const std::string needs = "gang " + member.gang + " needs " + std::to_string(missing) + more +
                            " pods (" + shapes(members) + ")";
  if (total > 0) {
    Pod whole = member;
    whole.gpus = total;
    whole.gpuShare = 0;
    plan.admission = admit(snapshot, whole);
    if (!plan.admission.status.isOk()) {
      plan.status =
          Status(plan.admission.status.code(),
                 needs + ", " + gpuText(total) + " in all: " + plan.admission.status.reason());
      return plan;
    }
  }

  std::erase_if(members, [](const Member& m) { return m.pod->gpus <= 0; });
  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    if (a.need.whole != b.need.whole) return a.need.whole > b.need.whole;
    if (a.need.cpu != b.need.cpu) return a.need.cpu > b.need.cpu;
    return a.need.memory > b.need.memory;
  });
  for (auto& m : members) m.shape = shapeOf(m.need);
  UndoLog log(snapshot);
  Rooms rooms(log, member, cpuMemory);
  GangSearch greedy(snapshot, members, rooms, options.maxSteps, true);
  const bool greedyFound = greedy.run();
  GangSearch exhaustive(snapshot, members, rooms, options.maxSteps, false);
  if (!greedyFound) log.rollback(0);
  GangSearch& search = greedyFound ? greedy : exhaustive;
  if (!greedyFound && !exhaustive.run()) {
    const Member& largest = members.front();
    int nodes = 0;
    for (const auto& n : snapshot.nodes()) {
      if (n->node().takesNewPods() && largest.pod->allowsModel(n->node().gpuModel) &&
          n->wholeGpusFor(member) >= largest.need.whole) {
        ++nodes;
      }
    }
    const auto alike = std::count_if(members.begin(), members.end(),
                                     [&](const Member& m) { return m.need == largest.need; });
    std::string reason = "gang " + member.gang + " needs " + shapes(members) + more;
    if (plan.placed > 0) {
      reason +=
          " (" + std::to_string(plan.placed) + " of " + std::to_string(plan.size) + " placed)";
    }
    reason += "; " + nodesWith(nodes, largest.need.whole);
    if (search.exhausted()) {
      reason += "; no placement found within " + std::to_string(options.maxSteps) + " tries";
    } else if (nodes >= alike) {
      reason += ", not enough for every member at once";
    }
    plan.status = Status::unschedulable(std::move(reason));
    return plan;
  }
  // The search placed member k as the k-th change.
  const std::vector<Change> placed = log.commit();
  for (std::size_t k = 0; k < members.size(); ++k) {
    plan.slots.push_back(
        {snapshot.nodes()[placed[k].node]->name(), members[k].pod->gpus, members[k].uid});
  }
  return plan;
}

FilterResult filterGangMember(const ClusterSnapshot& snapshot, const Pod& pod,
                              std::span<const std::string_view> candidates) {
  FilterResult r;
  r.admission.queue = pod.queue;
  if (!pod.gangError.empty()) {
    r.admission.status = Status::unresolvable(pod.gangError);
    for (std::string_view name : candidates) reject(r, name, r.admission.status);
    return r;
  }
  const GangState* gang = snapshot.findGang(pod.gangKey());
  if (pod.gpus <= 0) return filterPod(snapshot, pod, candidates);

  if (gang != nullptr && gang->reserved > 0) {
    std::string reservedOn;
    int listed = 0;
    for (const auto& res : snapshot.reservations()) {
      if (!isHolder(pod, res.holder) || res.gpus <= 0) continue;
      if (listed++ < 5) reservedOn += (reservedOn.empty() ? "" : ", ") + res.node;
    }
    if (listed > 5) reservedOn += ", ...";
    const MilliGpu needs = pod.isFractional() ? kMilliPerGpu : pod.gpuCount() * kMilliPerGpu;
    const FitOptions& options = snapshot.fitOptions();
    for (std::string_view name : candidates) {
      const NodeState* node = snapshot.findNode(name);
      if (node == nullptr) {
        r.failed.push_back(
            {name, "node " + std::string(name) + " is not in gpufair's cluster view yet"});
      } else if (node->reservedFor(pod) < needs) {
        r.failed.push_back(
            {name, "gang " + pod.gang + " has GPUs reserved on " + reservedOn +
                       (node->reservedFor(pod) > 0 ? " (what is left on node " + node->name() +
                                                         " is too small for this pod)"
                                                   : "; its pods go there")});
      } else if (nodeFits(*node, pod, options)) {
        r.feasible.push_back(name);
      } else {
        reject(r, name, fitsNode(*node, pod, options));
      }
    }
    return r;
  }
  if (gang != nullptr && gang->complete()) return filterPod(snapshot, pod, candidates);

  const GangPlan plan = planGang(snapshot, pod);
  r.admission = plan.admission;
  if (!plan.status.isOk()) {
    for (std::string_view name : candidates) reject(r, name, plan.status);
    return r;
  }
  if (plan.slots.empty()) return filterPod(snapshot, pod, candidates);
  // The gang fits but holds nothing (an offline simulation, or the reservation is being made):
  // this member goes where the plan put members of its shape.
  const FitOptions& options = snapshot.fitOptions();
  for (std::string_view name : candidates) {
    const bool planned = std::any_of(plan.slots.begin(), plan.slots.end(), [&](const GangSlot& s) {
      return s.node == name && s.gpus == pod.gpus;
    });
    const NodeState* node = snapshot.findNode(name);
    if (node == nullptr) {
      r.failed.push_back(
          {name, "node " + std::string(name) + " is not in gpufair's cluster view yet"});
    } else if (!planned) {
      r.failed.push_back({name, "gang " + pod.gang + " is planned on other nodes"});
    } else if (nodeFits(*node, pod, options)) {
      r.feasible.push_back(name);
    } else {
      reject(r, name, fitsNode(*node, pod, options));
    }
  }
  return r;
}

}  // namespace gpufair::policy
