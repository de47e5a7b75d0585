"""Every manifest, example and chart render is well-formed Kubernetes, and the plain manifests
and the chart's default render describe the same objects."""
import copy
import glob
import os
import re
import unittest

import yaml

from deploy_support import (CHART, CLUSTER_SCOPED, EXAMPLES, NAMESPACE, NAMESPACED,
                            SEPARATE_VARIANTS, VALUE_VARIANTS, key, load_yaml_documents,
                            manifest_objects, rel, render, render_notes)

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# RBAC object names may also hold ':' (system:...), like the upstream ones.
RBAC_NAME = re.compile(r"^[a-z0-9]([-a-z0-9:.]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# examples/ files that are not Kubernetes objects: bare queues.yaml documents (extender request
# bodies are JSON).
NOT_OBJECTS = {"queues.yaml", "queue-tree.yaml"}


def object_problems(where, obj):
    """What is missing or malformed in one object, in words."""
    problems = []
    if not isinstance(obj, dict):
        return ["%s: a document that is not a mapping" % where]
    for field in ("apiVersion", "kind"):
        if not isinstance(obj.get(field), str) or not obj.get(field):
            problems.append("%s: no %s" % (where, field))
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return problems + ["%s: no metadata" % where]
    name = meta.get("name")
    kind = obj.get("kind")
    pattern = RBAC_NAME if str(obj.get("apiVersion", "")).startswith("rbac.") else DNS_SUBDOMAIN
    if not isinstance(name, str) or not name:
        if not meta.get("generateName"):
            problems.append("%s: %s has no metadata.name" % (where, kind))
    elif len(name) > 253 or not pattern.match(name):
        problems.append("%s: %s name %r is not a valid object name" % (where, kind, name))
    if kind in CLUSTER_SCOPED and "namespace" in meta:
        problems.append("%s: %s is cluster-scoped but has a namespace" % (where, kind))
    for field in ("labels", "annotations"):
        for k, v in (meta.get(field) or {}).items():
            if not isinstance(v, str):
                problems.append("%s: %s %s=%r is not a string" % (where, field, k, v))
            elif field == "labels" and (len(v) > 63 or not LABEL_VALUE.match(v)):
                problems.append("%s: label %s=%r is not a valid label value" % (where, k, v))
    if kind == "ConfigMap":
        for k, v in (obj.get("data") or {}).items():
            if not isinstance(v, str):
                problems.append("%s: ConfigMap data %s is not a string" % (where, k))
    if kind in ("ClusterRole", "Role"):
        for i, rule in enumerate(obj.get("rules") or []):
            for field in ("apiGroups", "resources", "verbs"):
                if not rule.get(field):
                    problems.append("%s: rule %d has no %s" % (where, i, field))
    return problems


def chart_templates():
    return sorted(glob.glob(os.path.join(CHART, "templates", "*.yaml")))


class WellFormedTest(unittest.TestCase):
    def test_manifests(self):
        objects = manifest_objects()
        self.assertGreater(len(objects), 15)
        problems = []
        for where, obj in objects:
            problems += object_problems(where, obj)
            kind = obj.get("kind")
            if kind in NAMESPACED and obj["metadata"].get("namespace") is None:
                problems.append("%s: %s %s has no namespace" % (where, kind,
                                                                obj["metadata"].get("name")))
        self.assertEqual(problems, [])

    def test_examples(self):
        paths = sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml")))
        self.assertGreater(len(paths), 5)
        problems = []
        for path in paths:
            docs = load_yaml_documents(path)  # every example parses as YAML
            self.assertTrue(docs, rel(path))
            if os.path.basename(path) in NOT_OBJECTS:
                continue
            for i, obj in docs:
                problems += object_problems("%s#%d" % (rel(path), i), obj)
        self.assertEqual(problems, [])

    def test_every_chart_template_renders_yaml_objects(self):
        produced = set()
        for variant in [*VALUE_VARIANTS, *SEPARATE_VARIANTS]:
            with self.subTest(variant):
                objects = render(variant)  # raises on a template or YAML error
                self.assertGreater(len(objects), 8)
                problems = []
                seen = set()
                for template, obj in objects:
                    produced.add(template)
                    problems += object_problems(template, obj)
                    if key(obj) in seen:
                        problems.append("%s: %s rendered twice" % (template, key(obj)))
                    seen.add(key(obj))
                self.assertEqual(problems, [])
        for path in chart_templates():
            self.assertIn("gpufair/templates/" + os.path.basename(path), produced,
                          "%s renders nothing under any checked values" % rel(path))

    def test_notes_say_how_to_submit_a_pod(self):
        for variant in VALUE_VARIANTS:
            with self.subTest(variant):
                text = render_notes(variant)
                self.assertIn("schedulerName: gpufair", text)
                self.assertIn("nvidia.com/gpu", text)


# Metadata only the chart sets (Helm's bookkeeping, and a checksum that rolls the pods when the
# scheduler configuration changes); everything else must agree.
CHART_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by"}
EMBEDDED_YAML_KEYS = {"queues.yaml", "scheduler-config.yaml"}


def normalize(obj):
    obj = copy.deepcopy(obj)

    def strip(meta):
        labels = meta.get("labels") or {}
        for k in CHART_ONLY_LABELS:
            labels.pop(k, None)
        notes = meta.get("annotations") or {}
        for k in [k for k in notes if k.startswith("checksum/")]:
            del notes[k]
        for field in ("labels", "annotations"):
            if field in meta and not meta[field]:
                del meta[field]

    strip(obj.get("metadata", {}))
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        strip(template.setdefault("metadata", {}))
    if obj.get("kind") == "ConfigMap":
        for k, v in (obj.get("data") or {}).items():
            if k in EMBEDDED_YAML_KEYS:
                obj["data"][k] = yaml.safe_load(v)  # compare content, not layout
    return obj


class AgreementTest(unittest.TestCase):
    def test_default_render_matches_manifests(self):
        manifests = {}
        for where, obj in manifest_objects():
            manifests[key(obj)] = (where, obj)
        # The chart doesn't create its namespace (helm install --create-namespace); the
        # ServiceMonitor and PrometheusRule are opt-in in the chart and separate files in the
        # manifests.
        only_in_manifests = {("v1", "Namespace", None, NAMESPACE)}
        rendered = {key(obj): (t, obj) for t, obj in render("defaults")}
        with_monitor = {key(obj): (t, obj) for t, obj in render(overrides={"metrics": {
            "serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}})}
        for k, v in with_monitor.items():
            if k[1] in ("ServiceMonitor", "PrometheusRule"):
                rendered[k] = v
        self.assertEqual(sorted(set(manifests) - set(rendered) - only_in_manifests,
                                key=str), [], "in deploy/manifests only")
        self.assertEqual(sorted(set(rendered) - set(manifests), key=str), [],
                         "in the chart's default render only")
        for k in sorted(set(manifests) & set(rendered), key=str):
            with self.subTest(k):
                where, want = manifests[k]
                template, got = rendered[k]
                self.assertEqual(normalize(got), normalize(want),
                                 "%s and %s disagree" % (where, template))

    def test_release_name_and_namespace_are_followed(self):
        objects = render("other-release")
        for template, obj in objects:
            meta = obj["metadata"]
            if obj["kind"] in NAMESPACED and not (obj["kind"] == "RoleBinding" and
                                                  meta.get("namespace") == "kube-system"):
                self.assertEqual(meta.get("namespace"), "scheduling", (template, meta))
            if obj["kind"] != "PriorityClass":
                self.assertTrue(meta["name"].startswith("gpu-sched-gpufair"), (template, meta))
        text = yaml.safe_dump([o for _, o in objects])
        self.assertNotIn(NAMESPACE, text)


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


class ConsistencyTest(unittest.TestCase):
    """The objects agree with each other: ports, names, the scheduler configuration."""

    def object_sets(self):
        yield "deploy/manifests", [o for _, o in manifest_objects()]
        for variant in VALUE_VARIANTS:
            yield "chart " + variant, [o for _, o in render(variant)]

    def test_scheduler_and_extender_meet_on_loopback(self):
        for label, objects in self.object_sets():
            with self.subTest(label):
                deployment = by_kind(objects, "Deployment")[0]
                ns = deployment["metadata"]["namespace"]
                spec = deployment["spec"]["template"]["spec"]
                containers = {c["name"]: c for c in spec["containers"]}
                self.assertEqual(set(containers), {"kube-scheduler", "gpufair"})
                args = dict(a[2:].split("=", 1) for a in containers["gpufair"]["args"][1:])
                host, port = args["listen"].rsplit(":", 1)
                self.assertEqual(host, "127.0.0.1", "webhooks on loopback only")
                self.assertEqual(args["namespace"], ns)
                tls = "tls-cert" in args
                config_map = next(o for o in by_kind(objects, "ConfigMap")
                                  if "scheduler-config.yaml" in o["data"])
                config = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])
                self.assertEqual(config["apiVersion"], "kubescheduler.config.k8s.io/v1")
                self.assertEqual(config["kind"], "KubeSchedulerConfiguration")
                self.assertEqual(config["percentageOfNodesToScore"], 100)
                self.assertEqual(config["leaderElection"]["resourceNamespace"], ns)
                self.assertEqual([p["schedulerName"] for p in config["profiles"]], ["gpufair"])
                [extender] = config["extenders"]
                self.assertEqual(extender["urlPrefix"], "%s://127.0.0.1:%s" % (
                    "https" if tls else "http", port))
                self.assertEqual((extender["filterVerb"], extender["prioritizeVerb"],
                                  extender["preemptVerb"], extender["bindVerb"]),
                                 ("filter", "prioritize", "preempt", "bind"))
                self.assertIs(extender["nodeCacheCapable"], True)
                self.assertIs(extender["ignorable"], False)
                self.assertIs(extender["enableHTTPS"], tls)
                # kube-scheduler must still check whole GPUs itself; a GPU share is an extended
                # resource no node advertises, which only gpufair may account for.
                expected = {"nvidia.com/gpu": False, "gpufair.io/gpu-milli": True}
                for resource in extender.get("managedResources", []):
                    self.assertIn(resource["name"], expected, resource)
                    self.assertIs(resource.get("ignoredByScheduler"), expected[resource["name"]],
                                  resource)
                if tls:
                    files = extender["tlsConfig"]
                    self.assertEqual(files["certFile"], args["tls-cert"])
                    self.assertEqual(files["keyFile"], args["tls-key"])
                # kube-scheduler reads the configuration where the ConfigMap is mounted.
                flag = next(a for a in containers["kube-scheduler"]["command"]
                            if a.startswith("--config="))
                mounts = {m["name"]: m["mountPath"]
                          for m in containers["kube-scheduler"]["volumeMounts"]}
                volumes = {v["name"]: v for v in spec["volumes"]}
                self.assertEqual(flag, "--config=%s/scheduler-config.yaml" %
                                 mounts["scheduler-config"])
                self.assertEqual(volumes["scheduler-config"]["configMap"]["name"],
                                 config_map["metadata"]["name"])
                # No mount inside another: a read-only ConfigMap or Secret volume can't take the
                # mount point of a second one.
                for c in containers.values():
                    paths = [m["mountPath"].rstrip("/") + "/" for m in c.get("volumeMounts", [])]
                    for a in paths:
                        for b in paths:
                            self.assertFalse(a != b and b.startswith(a), (c["name"], a, b))
                # The probes ask gpufair's own health endpoints, on its port.
                for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe",
                                                                    "/readyz")):
                    command = containers["gpufair"][probe]["exec"]["command"]
                    self.assertEqual(command[0], "gpufair-probe")
                    self.assertEqual(command[1], "%s://127.0.0.1:%s%s" % (
                        "https" if tls else "http", port, path))

    def test_pods_meet_the_restricted_pod_security_standard(self):
        for label, objects in self.object_sets():
            with self.subTest(label):
                spec = by_kind(objects, "Deployment")[0]["spec"]["template"]["spec"]
                self.assertIs(spec["securityContext"]["runAsNonRoot"], True)
                self.assertNotEqual(spec["securityContext"].get("runAsUser"), 0)
                self.assertEqual(spec["securityContext"]["seccompProfile"]["type"],
                                 "RuntimeDefault")
                for field in ("hostNetwork", "hostPID", "hostIPC"):
                    self.assertFalse(spec.get(field), field)
                for volume in spec["volumes"]:
                    self.assertFalse("hostPath" in volume, volume)
                for c in spec["containers"]:
                    sc = c["securityContext"]
                    self.assertIs(sc["allowPrivilegeEscalation"], False, c["name"])
                    self.assertEqual(sc["capabilities"]["drop"], ["ALL"], c["name"])
                    self.assertFalse(sc.get("privileged"), c["name"])
                    self.assertIs(sc["readOnlyRootFilesystem"], True, c["name"])
                    self.assertIn("memory", c["resources"]["limits"], c["name"])
                    self.assertIn("cpu", c["resources"]["requests"], c["name"])

    def test_metrics_are_reachable_through_the_service(self):
        for label, objects in self.object_sets():
            services = by_kind(objects, "Service")
            if not services:
                continue
            with self.subTest(label):
                deployment = by_kind(objects, "Deployment")[0]
                pod = deployment["spec"]["template"]
                gpufair = next(c for c in pod["spec"]["containers"] if c["name"] == "gpufair")
                ports = {p["name"]: p["containerPort"] for p in gpufair["ports"]}
                args = dict(a[2:].split("=", 1) for a in gpufair["args"][1:])
                self.assertEqual(args["metrics-listen"], "0.0.0.0:%d" % ports["metrics"])
                [service] = services
                [port] = service["spec"]["ports"]
                self.assertEqual((port["name"], port["targetPort"]), ("metrics", "metrics"))
                labels = pod["metadata"]["labels"]
                for k, v in service["spec"]["selector"].items():
                    self.assertEqual(labels.get(k), v)
                for monitor in by_kind(objects, "ServiceMonitor"):
                    for k, v in monitor["spec"]["selector"]["matchLabels"].items():
                        self.assertEqual(service["metadata"]["labels"].get(k), v)
                    self.assertEqual(monitor["spec"]["endpoints"][0]["port"], "metrics")
                for pdb in by_kind(objects, "PodDisruptionBudget"):
                    for k, v in pdb["spec"]["selector"]["matchLabels"].items():
                        self.assertEqual(labels.get(k), v)


if __name__ == "__main__":
    unittest.main()
