// The JSON of k8s.io/kube-scheduler/extender/v1 (types.go). The Go types carry no json tags, so the
// envelope keys are PascalCase ("Pod", "NodeNames", "FailedNodes", ...); Go decodes keys in any
// case and null as absent, and so do we. Embedded Kubernetes objects (Pod, NodeList) keep their own
// camelCase keys. Decoders read only what gpufair needs; encoders append hand-built JSON to a
// string (no DOM) and always emit PascalCase. Thread-safety: free functions over caller-owned
// values. Views in the decoded structs point into the parsed simdjson document (or into the struct
// itself) and are valid while both are.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "gpufair/common/json.h"
#include "gpufair/common/status.h"
#include "gpufair/policy/candidate_positions.h"
#include "gpufair/policy/filter.h"
#include "gpufair/policy/model.h"

namespace gpufair::api {

// ExtenderArgs {Pod, Nodes *v1.NodeList, NodeNames *[]string}: /filter and /prioritize.
struct ExtenderArgs {
  policy::Pod pod;
  // true: the scheduler sent full Nodes (nodeCacheCapable: false) and wants Nodes back.
  bool nodesMode = false;
  std::vector<policy::Node> nodes;                  // Nodes mode: the decoded items
  std::vector<simdjson::dom::element> nodeObjects;  // Nodes mode: the items as sent, to echo back
  // Candidate node names in request order: views into the document (NodeNames) or into `nodes`.
  std::vector<std::string_view> candidates;
  // What /filter knows of the names without reading them, when they are NodeNamesMemo's (the
  // same as an earlier list, or its head and tail): CandidatePositions::resolve uses it.
  policy::CandidateList candidatesKnown;

  void clear();  // keeps capacity, so one instance can serve many requests
};

// Errors say which field is wrong ("NodeNames[2]: expected a string, got number").
Status decodeExtenderArgs(simdjson::dom::element root, ExtenderArgs& out);

// MetaVictims {Pods []*MetaPod{UID}, NumPDBViolations int64}.
struct MetaVictims {
  std::vector<std::string> podUids;
  std::int64_t numPdbViolations = 0;
};

// ExtenderPreemptionArgs {Pod, NodeNameToVictims, NodeNameToMetaVictims}. Full victim pods are
// reduced to their UIDs; when both maps are present, NodeNameToMetaVictims wins (it is what a
// nodeCacheCapable scheduler sends).
struct PreemptionArgs {
  policy::Pod pod;
  std::vector<std::pair<std::string, MetaVictims>> victims;  // by node, in request order
};
Status decodePreemptionArgs(simdjson::dom::element root, PreemptionArgs& out);

// ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}.
struct BindingArgs {
  std::string podName;
  std::string podNamespace;
  std::string podUid;
  std::string node;
};
Status decodeBindingArgs(simdjson::dom::element root, BindingArgs& out);

// ExtenderFilterResult in the request's mode: NodeNames, or Nodes {"items":[...]} echoing the
// feasible node objects as sent. `result` views must point at `args.candidates` names.
void encodeFilterResult(const ExtenderArgs& args, const policy::FilterResult& result,
                        std::string_view error, std::string& out);
// ExtenderFilterResult carrying only an error.
void encodeFilterError(std::string_view error, std::string& out);
// HostPriorityList: [{"Host":"n1","Score":10}, ...].
void encodeHostPriorityList(std::span<const policy::NodeScore> scores, std::string& out);
// ExtenderPreemptionResult {NodeNameToMetaVictims}, whichever map the request carried:
// kube-scheduler's HTTPExtender.ProcessPreemption reads only NodeNameToMetaVictims and finds each
// UID among the pods of that node in its own cache (an unknown UID fails the whole preemption,
// and so does a node with no victims unless the extender is ignorable).
void encodePreemptionResult(std::span<const std::pair<std::string, MetaVictims>> victims,
                            std::string& out);
// {"Error":"..."}: ExtenderBindingResult, and the body of every other error.
void encodeErrorResult(std::string_view error, std::string& out);

// appendJsonString lives in gpufair/common/json.h.
using gpufair::appendJsonString;
// A JSON type name for messages: "object", "array", "string", "number", "boolean", "null".
const char* jsonTypeName(simdjson::dom::element element);

}  // namespace gpufair::api
