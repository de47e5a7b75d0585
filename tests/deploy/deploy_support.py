"""Shared helpers for the deployment checks: where things are, loading manifests, rendering."""
import copy
import glob
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("GPUFAIR_SOURCE_DIR", os.path.join(HERE, "..", "..")))
CHART = os.path.join(ROOT, "deploy", "helm", "gpufair")
MANIFESTS = os.path.join(ROOT, "deploy", "manifests")
EXAMPLES = os.path.join(ROOT, "examples")
NAMESPACE = "gpufair-system"
RELEASE = "gpufair"

sys.path.insert(0, HERE)
import helmlite  # noqa: E402

# Kinds that live in a namespace (everything else the deployment uses is cluster-scoped).
NAMESPACED = {"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service",
              "PodDisruptionBudget", "ServiceMonitor", "Pod", "Job", "Secret", "Lease"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "Node"}

# Value sets the chart is rendered with in the checks: the defaults and every optional branch.
VALUE_VARIANTS = {
    "defaults": {},
    "everything-on": {
        "tls": {"enabled": True, "secretName": "gpufair-tls", "clientAuth": True},
        "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
        "extender": {"managedResources": [{"name": "nvidia.com/gpu",
                                           "ignoredByScheduler": False}]},
        "imagePullSecrets": [{"name": "regcred"}],
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane",
                         "effect": "NoSchedule"}],
        "gpufair": {"extraArgs": ["--max-connections=2048"], "scorer": "fgd"},
        "reclaim": {"mode": "dry-run", "period": "1m"},
        "image": {"tag": "1.2.3"},
    },
    "everything-off": {
        "tls": {"enabled": True, "secretName": "gpufair-tls", "clientAuth": False},
        "metrics": {"service": {"enabled": False}},
        "queues": {"create": False},
        "priorityClasses": {"create": False},
        "podDisruptionBudget": {"enabled": False},
        "priorityClassName": "",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}},
    },
    "other-release": {},
}


def rel(path):
    return os.path.relpath(path, ROOT)


def load_yaml_documents(path):
    """[(document index, object)] for each non-empty document of a YAML file."""
    with open(path) as f:
        return [(i, d) for i, d in enumerate(yaml.safe_load_all(f)) if d is not None]


def manifest_files(recursive=True):
    pattern = os.path.join(MANIFESTS, "**", "*.yaml") if recursive else os.path.join(MANIFESTS,
                                                                                      "*.yaml")
    return sorted(glob.glob(pattern, recursive=recursive))


def manifest_objects(recursive=True):
    out = []
    for path in manifest_files(recursive):
        for _, doc in load_yaml_documents(path):
            out.append((rel(path), doc))
    return out


def render(variant="defaults", release=RELEASE, namespace=NAMESPACE):
    if variant == "other-release":
        release, namespace = "gpu-sched", "scheduling"
    return helmlite.render_objects(CHART, release=release, namespace=namespace,
                                   overrides=copy.deepcopy(VALUE_VARIANTS[variant]))


def key(obj):
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name"))
