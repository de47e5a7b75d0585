// Pods: metadata, requests as kube-scheduler adds them up (containers, init containers,
// overhead), the GPU annotations, phase and times.
#include <algorithm>
#include <charconv>
#include <limits>

#include "gpufair/codec/pod_conditions.h"

#include "decode_support.h"

namespace gpufair::codec {
namespace {

using detail::ContainerResources;
using detail::containers;
using detail::element;
using detail::fail;
using detail::object;
using detail::optObject;
using detail::optString;
using detail::parseThen;
using detail::resourceList;
using detail::Resources;
using detail::stringMap;
using detail::timestamp;
using detail::trim;

// The fractional-GPU, GPU-index and GPU-model annotations, applied to a pod whose requests are
// decoded; resourceMilli: the pod's effective gpufair.io/gpu-milli request (0: none), the same as
// the gpu-milli annotation. Errors name the annotation or resource.
Result<bool> gpuAnnotations(policy::Pod& pod, MilliGpu resourceMilli) {
  using R = Result<bool>;
  const auto fraction = pod.annotations.find(kGpuFractionAnnotation);
  const auto milli = pod.annotations.find(kGpuMilliAnnotation);
  const bool hasFraction = fraction != pod.annotations.end();
  const bool hasMilli = milli != pod.annotations.end();
  if (hasFraction && hasMilli) {
    return R::failure("annotations " + std::string(kGpuFractionAnnotation) + " and " +
                      kGpuMilliAnnotation + " are both set; use one");
  }
  if (resourceMilli > 0) {
    const std::string name = std::string("resource ") + kGpuMilliResource;
    if (pod.gpus > 0) {
      return R::failure(name + " asks for part of a GPU but the pod also requests " +
                        formatGpus(pod.gpus) + " nvidia.com/gpu; use one or the other");
    }
    if (resourceMilli > kMilliPerGpu) {
      return R::failure(name + ": " + std::to_string(resourceMilli) +
                        " is out of range (0, 1000]: it is a share of one GPU; ask for whole "
                        "GPUs with nvidia.com/gpu");
    }
  }
  if (hasFraction || hasMilli) {
    const std::string name = hasFraction ? kGpuFractionAnnotation : kGpuMilliAnnotation;
    const std::string& text = hasFraction ? fraction->second : milli->second;
    if (pod.gpus > 0) {
      return R::failure("annotation " + name +
                        " asks for part of a GPU but the pod also requests " +
                        formatGpus(pod.gpus) + " nvidia.com/gpu; use one or the other");
    }
    MilliGpu share = 0;
    if (hasFraction) {
      Result<Quantity> q = Quantity::parse(trim(text));
      if (!q) return R::failure("annotation " + name + ": " + q.error());
      share = q->isNegative() ? -1 : q->milliValue();
    } else {
      const std::string_view t = trim(text);
      long long v = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec != std::errc() || end != t.data() + t.size() || t.empty()) {
        return R::failure("annotation " + name + ": \"" + text + "\" is not a whole number");
      }
      share = v;
    }
    if (share <= 0 || share > kMilliPerGpu) {
      return R::failure("annotation " + name + ": \"" + text + "\" is out of range (" +
                        (hasFraction ? "0, 1]" : "0, 1000]") + ")");
    }
    if (resourceMilli > 0 && share != resourceMilli) {
      return R::failure("annotation " + name + " (" + text + ") and resource " + kGpuMilliResource +
                        " (" + std::to_string(resourceMilli) + ") disagree; set one");
    }
    pod.setGpuShare(share);
  } else if (resourceMilli > 0) {
    pod.setGpuShare(resourceMilli);
  }
  if (auto it = pod.annotations.find(kGpuIndexAnnotation); it != pod.annotations.end()) {
    // Written by gpufair's binder; anything unreadable means "unknown" (the node places it).
    const std::string_view t = trim(it->second);
    int v = -1;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    pod.gpuIndex = (ec == std::errc() && end == t.data() + t.size() && v >= 0) ? v : -1;
  }
  if (auto it = pod.annotations.find(kGpuModelsAnnotation); it != pod.annotations.end()) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      const std::string_view part = trim(rest.substr(0, bar));
      if (!part.empty()) pod.gpuModels.emplace_back(part);
      rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
    }
  }
  return true;
}

// Reads spec: the node, the scheduler and the requests, added up as kube-scheduler does
// (containers, init containers, overhead). Returns the pod's gpufair.io/gpu-milli request.
Result<MilliGpu> decodeSpec(object spec, policy::Pod& out) {
  using R = Result<MilliGpu>;
  std::string error;
  // Kept per thread and emptied: a pod's decode allocates none of these lists (nor the columns
  // below) once the thread has seen a pod with as many containers.
  thread_local std::vector<ContainerResources> regularAll;
  thread_local std::vector<ContainerResources> initAll;
  regularAll.clear();
  initAll.clear();
  Resources overheads;
  object overheadList;
  bool hasOverhead = false;
  if (!optString(spec, "nodeName", out.nodeName, error, "spec") ||
      !optString(spec, "schedulerName", out.schedulerName, error, "spec") ||
      !containers(spec, "containers", false, regularAll, error) ||
      !containers(spec, "initContainers", true, initAll, error) ||
      !optObject(spec, "overhead", overheadList, hasOverhead, error, "spec")) {
    return R::failure(error);
  }
  if (hasOverhead && !resourceList(overheadList, "spec.overhead", overheads, error)) {
    return R::failure(error);
  }
  thread_local std::vector<policy::ContainerGpus> regular;
  thread_local std::vector<policy::ContainerGpus> init;
  // One resource's (member's) request as kube-scheduler adds it up: its column of the containers
  // and of the init containers, then the overhead.
  auto request = [](auto member, MilliGpu overhead) {
    regular.clear();
    init.clear();
    for (const auto& c : regularAll) regular.push_back(c.*member);
    for (const auto& c : initAll) init.push_back(c.*member);
    return policy::effectiveRequest(regular, init, overhead);
  };
  // effectiveRequest adds these up; a huge count ("10E" in two containers, each saturating
  // int64) must not wrap around to a negative request.
  for (const auto member : {&ContainerResources::gpus, &ContainerResources::cpu,
                            &ContainerResources::memory, &ContainerResources::gpuMilli}) {
    std::int64_t total = 0;
    for (const auto* list : {&regularAll, &initAll}) {
      for (const auto& c : *list) {
        if (__builtin_add_overflow(total, (c.*member).request, &total)) {
          const char* name = member == &ContainerResources::gpus       ? "nvidia.com/gpu"
                             : member == &ContainerResources::cpu      ? "cpu"
                             : member == &ContainerResources::gpuMilli ? kGpuMilliResource
                                                                       : "memory";
          return R::failure(std::string(name) + " requests add up to more than " +
                            (member == &ContainerResources::gpus
                                 ? formatGpus(std::numeric_limits<MilliGpu>::max()) + " GPUs"
                                 : std::string("the largest quantity")));
        }
      }
    }
  }
  out.gpus = request(&ContainerResources::gpus, std::max<MilliGpu>(overheads.gpus, 0));
  out.cpuMilli = request(&ContainerResources::cpu, std::max<std::int64_t>(overheads.cpuMilli, 0));
  out.memoryBytes =
      request(&ContainerResources::memory, std::max<std::int64_t>(overheads.memory, 0));
  return request(&ContainerResources::gpuMilli, 0);
}

// The uid of metadata.ownerReferences' entry with controller: true (the API server allows at most
// one); empty when none. Malformed entries are skipped: the field is only a hint for consolidation.
std::string controllerUid(object meta) {
  element refs;
  simdjson::dom::array arr;
  if (!field(meta, "ownerReferences", refs) || refs.get_array().get(arr) != simdjson::SUCCESS)
    return {};
  for (element ref : arr) {
    object o;
    element controller;
    element uid;
    bool isController = false;
    std::string_view text;
    if (ref.get_object().get(o) != simdjson::SUCCESS || !field(o, "controller", controller) ||
        controller.get_bool().get(isController) != simdjson::SUCCESS || !isController ||
        !field(o, "uid", uid) || uid.get_string().get(text) != simdjson::SUCCESS) {
      continue;
    }
    return std::string(text);
  }
  return {};
}

}  // namespace

Result<policy::Pod> decodePod(element root) {
  using R = Result<policy::Pod>;
  object pod;
  if (root.get_object().get(pod) != simdjson::SUCCESS)
    return R::failure("Pod must be a JSON object");
  policy::Pod out;
  std::string error;
  object meta;
  bool present = false;
  if (!optObject(pod, "metadata", meta, present, error, "pod")) return R::failure(error);
  if (!present) return R::failure("pod has no metadata");
  std::optional<Timestamp> deleted;
  if (!optString(meta, "name", out.name, error, "metadata") ||
      !optString(meta, "namespace", out.ns, error, "metadata") ||
      !optString(meta, "uid", out.uid, error, "metadata") ||
      !stringMap(meta, "labels", out.labels, error, "metadata") ||
      !stringMap(meta, "annotations", out.annotations, error, "metadata") ||
      !timestamp(meta, "creationTimestamp", out.created, error, "metadata") ||
      !timestamp(meta, "deletionTimestamp", deleted, error, "metadata")) {
    return fail<policy::Pod>("pod " + out.ns + "/" + out.name, error);
  }
  if (out.name.empty()) return R::failure("pod has no metadata.name");
  if (out.ns.empty()) out.ns = "default";
  out.terminating = deleted.has_value();
  out.controller = controllerUid(meta);
  // "pod NS/NAME", for an error only.
  auto what = [&out] { return "pod " + out.key(); };
  if (auto it = out.labels.find(kOverQuotaLabel); it != out.labels.end()) {
    out.overQuota = it->second == "true";
  }

  object spec;
  MilliGpu gpuMilliRequest = 0;  // gpufair.io/gpu-milli, as Kubernetes adds up requests
  if (!optObject(pod, "spec", spec, present, error, "pod")) return fail<policy::Pod>(what(), error);
  if (present) {
    Result<MilliGpu> milli = decodeSpec(spec, out);
    if (!milli) return fail<policy::Pod>(what(), milli.error());
    gpuMilliRequest = *milli;
  }
  if (Result<bool> r = gpuAnnotations(out, gpuMilliRequest); !r) {
    return fail<policy::Pod>(what(), r.error());
  }
  // A bad gang label or size is not a decode error: the pod still exists (and may hold GPUs);
  // filter refuses it with Pod::gangError.
  policy::applyGangLabels(out);

  object status;
  if (!optObject(pod, "status", status, present, error, "pod"))
    return fail<policy::Pod>(what(), error);
  if (present) {
    std::string phase;
    if (!optString(status, "phase", phase, error, "status") ||
        !timestamp(status, "startTime", out.started, error, "status")) {
      return fail<policy::Pod>(what(), error);
    }
    out.phase = policy::parsePhase(phase);
  }
  return out;
}

Result<policy::Pod> decodePodJson(std::string_view json) {
  return parseThen<policy::Pod>(json, "Pod", [](element e) { return decodePod(e); });
}

bool schedulingFailed(element root) {
  object pod;
  object status;
  element conditions;
  simdjson::dom::array arr;
  if (root.get_object().get(pod) != simdjson::SUCCESS) return false;
  element value;
  if (!field(pod, "status", value) || value.get_object().get(status) != simdjson::SUCCESS ||
      !field(status, "conditions", conditions) ||
      conditions.get_array().get(arr) != simdjson::SUCCESS) {
    return false;
  }
  for (element condition : arr) {
    object o;
    element type;
    std::string_view text;
    if (condition.get_object().get(o) != simdjson::SUCCESS || !field(o, "type", type) ||
        type.get_string().get(text) != simdjson::SUCCESS || text != "PodScheduled") {
      continue;
    }
    return field(o, "status", value) && value.get_string().get(text) == simdjson::SUCCESS &&
           text == "False";
  }
  return false;
}

Result<policy::Pod> decodePodJson(std::string_view json, bool& failed) {
  return parseThen<policy::Pod>(json, "Pod", [&failed](element e) {
    Result<policy::Pod> pod = decodePod(e);
    if (pod) failed = schedulingFailed(e);
    return pod;
  });
}

}  // namespace gpufair::codec
