"""The RBAC objects grant every Kubernetes API call gpufair and its kube-scheduler make, and no
wildcard. gpufair's calls are listed below; a scan of src/ fails when the code gains an API path
or HTTP method this list doesn't know, so a new call can't ship without its permission."""
import glob
import os
import re
import unittest

import yaml

from deploy_support import ROOT, manifest_objects, render

# Path pieces found as string literals in files that build API requests, per file. A new one
# means a new API call: add it here, describe the call in GPUFAIR_CALLS, and grant it in
# deploy/manifests/10-rbac.yaml and deploy/helm/gpufair/templates/rbac.yaml.
CODE_PATH_LITERALS = {
    "src/app/kube_source.cc": {"/api/v1/nodes", "/api/v1/pods"},
    "src/k8s/api.cc": {"/api/v1/namespaces/", "/pods/", "/binding", "/eviction", "/events",
                       "/events/"},
    "src/k8s/api_lease.cc": {"/apis/coordination.k8s.io/v1/namespaces/", "/leases"},
    "src/k8s/quota_watcher.cc": {"/api/v1/namespaces/", "/configmaps"},
}
# HTTP methods set explicitly (ApiRequest defaults to GET), per file.
CODE_METHODS = {
    "src/k8s/api.cc": {"POST", "PATCH"},
    "src/k8s/api_lease.cc": {"POST", "PUT"},
}

# Every call: (what, API group, resource[/subresource], verb, where). "cluster": in any
# namespace or cluster-scoped; "own": in gpufair's namespace; "lease": its own Lease by name.
GPUFAIR_CALLS = [
    ("list and watch nodes (kube_source.cc)", "", "nodes", "list", "cluster"),
    ("", "", "nodes", "watch", "cluster"),
    ("list and watch pods (kube_source.cc)", "", "pods", "list", "cluster"),
    ("", "", "pods", "watch", "cluster"),
    ("list and watch quota ConfigMaps (quota_watcher.cc)", "", "configmaps", "list", "own"),
    ("", "", "configmaps", "watch", "own"),
    ("POST .../pods/NAME/binding (api.cc bindPod)", "", "pods/binding", "create", "cluster"),
    ("PATCH .../pods/NAME labels (api.cc patchPodLabels)", "", "pods", "patch", "cluster"),
    ("POST .../pods/NAME/eviction (api.cc evictPod)", "", "pods/eviction", "create", "cluster"),
    ("POST .../events (api.cc createEvent)", "", "events", "create", "cluster"),
    ("PATCH .../events/NAME (api.cc updateEvent)", "", "events", "patch", "cluster"),
    ("GET the Lease (api_lease.cc getLease)", "coordination.k8s.io", "leases", "get", "lease"),
    ("POST a Lease (api_lease.cc createLease)", "coordination.k8s.io", "leases", "create", "own"),
    ("PUT the Lease (api_lease.cc updateLease)", "coordination.k8s.io", "leases", "update",
     "lease"),
]

# kube-scheduler's calls (its informers, binder, preemption, events, leader election, delegated
# authentication), as the upstream system:kube-scheduler and system:volume-scheduler roles grant.
SCHEDULER_CALLS = [(g, r, v, "cluster") for g, rs, vs in [
    ("", ["nodes", "pods", "namespaces", "services", "replicationcontrollers",
          "persistentvolumes", "persistentvolumeclaims"], ["get", "list", "watch"]),
    ("apps", ["replicasets", "statefulsets"], ["get", "list", "watch"]),
    ("policy", ["poddisruptionbudgets"], ["get", "list", "watch"]),
    ("storage.k8s.io", ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities",
                        "volumeattachments"], ["get", "list", "watch"]),
    ("", ["pods"], ["delete"]),
    ("", ["bindings", "pods/binding"], ["create"]),
    ("", ["pods/status"], ["patch", "update"]),
    ("", ["persistentvolumes", "persistentvolumeclaims"], ["patch", "update"]),
    ("", ["events"], ["create", "patch", "update"]),
    ("events.k8s.io", ["events"], ["create", "patch", "update"]),
    ("authentication.k8s.io", ["tokenreviews"], ["create"]),
    ("authorization.k8s.io", ["subjectaccessreviews"], ["create"]),
] for r in rs for v in vs] + [
    ("coordination.k8s.io", "leases", "create", "own"),
    ("coordination.k8s.io", "leases", "get", "scheduler-lease"),
    ("coordination.k8s.io", "leases", "update", "scheduler-lease"),
]

LITERAL = re.compile(r'"(/[a-z][A-Za-z0-9./-]*)"')
METHOD = re.compile(r'\.method\s*=\s*"([A-Z]+)"')


def scan_code():
    """{file: (path literals, methods)} for the source files that build API requests."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.*"), recursive=True)):
        if not path.endswith((".cc", ".h")):
            continue
        with open(path, errors="replace") as f:
            text = f.read()
        if not re.search(r"ApiRequest|listPath|\"/apis?/", text):
            continue
        literals = {m for m in LITERAL.findall(text)}
        methods = set(METHOD.findall(text))
        if literals or methods:
            found[os.path.relpath(path, ROOT)] = (literals, methods)
    return found


class Permissions:
    """What one ServiceAccount may do, from a set of RBAC objects."""

    def __init__(self, objects, sa_namespace, sa_name):
        self.ns = sa_namespace
        roles = {}
        for o in objects:
            if o["kind"] in ("ClusterRole", "Role"):
                roles[(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])] = o
        self.grants = []  # (namespace or None for cluster-wide, rule)
        self.unresolved = []
        for o in objects:
            if o["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name and
                       s.get("namespace") == sa_namespace for s in o.get("subjects") or []):
                continue
            ref = o["roleRef"]
            binding_ns = o["metadata"].get("namespace")
            role_ns = binding_ns if ref["kind"] == "Role" else None
            role = roles.get((ref["kind"], role_ns, ref["name"]))
            if role is None:
                self.unresolved.append(ref["name"])  # a built-in role, e.g. in kube-system
                continue
            scope = None if o["kind"] == "ClusterRoleBinding" else binding_ns
            for rule in role.get("rules") or []:
                self.grants.append((scope, rule))

    def allows(self, group, resource, verb, namespace=None, name=None):
        for scope, rule in self.grants:
            if scope is not None and scope != namespace:
                continue
            if group not in rule.get("apiGroups", []) or resource not in rule.get("resources", []):
                continue
            if verb not in rule.get("verbs", []):
                continue
            names = rule.get("resourceNames")
            if names and name not in names:
                continue
            return True
        return False


def scheduler_lease(objects):
    for o in objects:
        if o["kind"] == "ConfigMap" and "scheduler-config.yaml" in (o.get("data") or {}):
            config = yaml.safe_load(o["data"]["scheduler-config.yaml"])
            return config["leaderElection"]["resourceName"]
    raise AssertionError("no KubeSchedulerConfiguration ConfigMap")


def deployment(objects):
    return next(o for o in objects if o["kind"] == "Deployment")


def gpufair_lease(objects):
    spec = deployment(objects)["spec"]["template"]["spec"]
    args = next(c for c in spec["containers"] if c["name"] == "gpufair")["args"]
    # Following kube-scheduler's Lease, gpufair reads that one instead of electing through its own.
    follows = [a.split("=", 1)[1] for a in args if a.startswith("--follow-scheduler-lease=")]
    if follows:
        return follows[0].split("/", 1)[1]
    leases = [a.split("=", 1)[1] for a in args if a.startswith("--lease-name=")]
    return leases[0] if leases else "gpufair"  # the flag's default


OBJECT_SETS = {
    "deploy/manifests": lambda: [o for _, o in manifest_objects()],
    "chart defaults": lambda: [o for _, o in render("defaults")],
    "chart, another release and namespace": lambda: [o for _, o in render("other-release")],
}


class RbacTest(unittest.TestCase):
    def test_code_makes_only_the_listed_calls(self):
        found = scan_code()
        problems = []
        for path, (literals, methods) in sorted(found.items()):
            new = literals - CODE_PATH_LITERALS.get(path, set())
            if new:
                problems.append("%s: API path pieces %s are not in CODE_PATH_LITERALS" %
                                (path, sorted(new)))
            new = methods - CODE_METHODS.get(path, set())
            if new:
                problems.append("%s: HTTP methods %s are not in CODE_METHODS" % (path,
                                                                                sorted(new)))
        for path in sorted(set(CODE_PATH_LITERALS) | set(CODE_METHODS)):
            if path not in found:
                problems.append("%s: listed but makes no API call any more" % path)
        self.assertEqual(problems, [], "update tests/deploy/test_rbac.py and the RBAC objects")

    def check(self, perms, calls, ns, leases):
        missing = []
        for call in calls:
            group, resource, verb, where = call[-4:]
            name = leases.get(where)
            namespace = ns if where != "cluster" else "team-a"  # a namespace of user pods
            if not perms.allows(group, resource, verb, namespace, name):
                missing.append("%s %s %s in %s%s" % (verb, group or "core", resource, namespace,
                                                     " (name %s)" % name if name else ""))
        return missing

    def test_every_call_is_granted(self):
        for label, load in OBJECT_SETS.items():
            with self.subTest(label):
                objects = load()
                sa = next(o for o in objects if o["kind"] == "ServiceAccount")
                ns, name = sa["metadata"]["namespace"], sa["metadata"]["name"]
                self.assertEqual(deployment(objects)["spec"]["template"]["spec"]
                                 ["serviceAccountName"], name)
                perms = Permissions(objects, ns, name)
                self.assertEqual(perms.unresolved, ["extension-apiserver-authentication-reader"])
                leases = {"lease": gpufair_lease(objects),
                          "scheduler-lease": scheduler_lease(objects)}
                self.assertEqual(self.check(perms, GPUFAIR_CALLS, ns, leases), [])
                self.assertEqual(self.check(perms, SCHEDULER_CALLS, ns, leases), [])

    def test_least_privilege(self):
        for label, load in OBJECT_SETS.items():
            with self.subTest(label):
                objects = load()
                sa = next(o for o in objects if o["kind"] == "ServiceAccount")
                ns, name = sa["metadata"]["namespace"], sa["metadata"]["name"]
                perms = Permissions(objects, ns, name)
                for scope, rule in perms.grants:
                    for field in ("apiGroups", "resources", "verbs"):
                        self.assertNotIn("*", rule.get(field, []), rule)
                    self.assertFalse({"secrets", "nodes/proxy", "pods/exec"} &
                                     set(rule.get("resources", [])), rule)
                # Leases: only gpufair's namespace, and never the default scheduler's.
                self.assertFalse(perms.allows("coordination.k8s.io", "leases", "update",
                                              "kube-system", "kube-scheduler"))
                self.assertFalse(perms.allows("coordination.k8s.io", "leases", "update", ns,
                                              "kube-scheduler"))
                self.assertFalse(perms.allows("coordination.k8s.io", "leases", "create",
                                              "kube-system"))
                # Quota ConfigMaps: read in gpufair's namespace only.
                self.assertTrue(perms.allows("", "configmaps", "watch", ns))
                self.assertFalse(perms.allows("", "configmaps", "list", "team-a"))
                self.assertFalse(perms.allows("", "configmaps", "update", ns))


if __name__ == "__main__":
    unittest.main()
