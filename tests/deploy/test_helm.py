"""The chart through real Helm 3 (fetch_helm.py): lint and template under every checked value set,
a publishable package, values.schema.json refusing bad values with the value's name, and both
layouts (gpufair beside kube-scheduler, or in its own Deployment behind a Service)."""
import os
import tarfile
import tempfile
import unittest

import yaml

from deploy_support import (CHART, SEPARATE_VARIANTS, VALUE_VARIANTS, helm, rel, render,
                            variant_args)

ALL_VARIANTS = {**VALUE_VARIANTS, **SEPARATE_VARIANTS}


class LintTest(unittest.TestCase):
    def test_lint_passes_under_every_value_set(self):
        for variant in ALL_VARIANTS:
            with self.subTest(variant):
                release, namespace, values = variant_args(variant)
                done = helm("lint", CHART, "--strict", "--namespace", namespace, values=values)
                self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                self.assertIn("0 chart(s) failed", done.stdout)


class TemplateTest(unittest.TestCase):
    def test_value_sets_change_what_they_should(self):
        def deployment(variant):
            return [o for _, o in render(variant) if o["kind"] == "Deployment"][0]

        def kinds(variant):
            return {o["kind"] for _, o in render(variant)}

        self.assertEqual(deployment("defaults")["spec"]["replicas"], 2)
        self.assertEqual(deployment("ha")["spec"]["replicas"], 3)
        self.assertEqual(deployment("single-replica")["spec"]["replicas"], 1)
        self.assertNotIn("PodDisruptionBudget", kinds("single-replica"))
        self.assertIn("Service", kinds("defaults"))
        self.assertNotIn("Service", kinds("metrics-off"))
        self.assertIn("ServiceMonitor", kinds("everything-on"))
        self.assertNotIn("ServiceMonitor", kinds("defaults"))
        self.assertIn("PrometheusRule", kinds("everything-on"))
        self.assertNotIn("PrometheusRule", kinds("defaults"))
        args = [c for c in deployment("everything-on")["spec"]["template"]["spec"]["containers"]
                if c["name"] == "gpufair"][0]["args"]
        self.assertTrue(any(a.startswith("--tls-cert=") for a in args), args)
        self.assertTrue(any(a.startswith("--client-ca=") for a in args), args)
        args = [c for c in deployment("defaults")["spec"]["template"]["spec"]["containers"]
                if c["name"] == "gpufair"][0]["args"]
        self.assertFalse(any(a.startswith("--tls-cert=") for a in args), args)

    def test_template_fails_when_a_service_monitor_has_no_service(self):
        done = helm("template", "gpufair", CHART, values={"metrics": {
            "service": {"enabled": False}, "serviceMonitor": {"enabled": True}}})
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("metrics.serviceMonitor.enabled needs metrics.service.enabled",
                      done.stderr)


class PackageTest(unittest.TestCase):
    def test_package_holds_the_chart_and_its_schema(self):
        with open(os.path.join(CHART, "Chart.yaml")) as f:
            chart = yaml.safe_load(f)
        with tempfile.TemporaryDirectory() as out:
            done = helm("package", CHART, "--destination", out)
            self.assertEqual(done.returncode, 0, done.stderr)
            archive = os.path.join(out, "%s-%s.tgz" % (chart["name"], chart["version"]))
            self.assertTrue(os.path.isfile(archive), done.stdout)
            with tarfile.open(archive) as tar:
                names = set(tar.getnames())
            for path in ("Chart.yaml", "values.yaml", "values.schema.json",
                         "templates/deployment.yaml", "templates/NOTES.txt"):
                self.assertIn("gpufair/" + path, names)
            # The packaged chart renders as the directory does.
            done = helm("template", "gpufair", archive, "--namespace", "gpufair-system")
            self.assertEqual(done.returncode, 0, done.stderr)
            direct = helm("template", "gpufair", CHART, "--namespace", "gpufair-system")
            self.assertEqual(done.stdout, direct.stdout)


class SchemaTest(unittest.TestCase):
    # (what is wrong, values, what helm's error names)
    CASES = [
        ("unknown top-level key", {"replica": 3}, "Additional property replica is not allowed"),
        ("scorer not in the registry", {"gpufair": {"scorer": "fastest"}},
         "gpufair.scorer must be one of"),
        ("reclaim mode", {"reclaim": {"mode": "sometimes"}}, "reclaim.mode must be one of"),
        ("TLS without a Secret", {"tls": {"enabled": True}}, "tls.secretName"),
        ("duration", {"reclaim": {"period": "30 seconds"}}, "reclaim.period: Does not match"),
        ("kube-scheduler version", {"kubeScheduler": {"version": "1.33"}},
         "kubeScheduler.version: Does not match"),
        ("zero replicas", {"replicas": 0}, "replicas: Must be greater than or equal to 1"),
        ("replicas as a string", {"replicas": "two"}, "replicas: Invalid type"),
        ("metrics port out of range", {"metrics": {"port": 70000}}, "metrics.port"),
        ("alert toggle not a boolean", {"metrics": {"prometheusRule": {"enabled": "yes"}}},
         "metrics.prometheusRule.enabled: Invalid type"),
        ("unknown layout", {"layout": "both"}, "layout must be one of"),
        ("client names with a comma", {"tls": {"clientNames": ["a,b"]}},
         "tls.clientNames.0: Does not match"),
    ]

    def test_template_and_lint_refuse_bad_values(self):
        for name, values, message in self.CASES:
            for verb in ("template", "lint"):
                with self.subTest(name, verb=verb):
                    done = helm(verb, *(["gpufair"] if verb == "template" else []), CHART,
                                values=values)
                    self.assertNotEqual(done.returncode, 0, "%s accepted %s" % (verb, values))
                    self.assertIn(message, done.stdout + done.stderr)

    def test_set_on_the_command_line_is_checked_too(self):
        done = helm("template", "gpufair", CHART, "--set", "reclaim.mode=sometimes")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("reclaim.mode must be one of", done.stderr)

    def test_every_checked_value_set_is_accepted(self):
        for variant in ALL_VARIANTS:
            with self.subTest(variant):
                release, namespace, values = variant_args(variant)
                done = helm("template", release, CHART, "--namespace", namespace, values=values)
                self.assertEqual(done.returncode, 0, "%s: %s" % (rel(CHART), done.stderr))


def objects_of(variant, **overrides):
    release, namespace, values = variant_args(variant)
    for k, v in overrides.items():
        values[k] = v
    return [o for _, o in render(variant, overrides=values)]


def find(objects, kind, name):
    return next((o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name), None)


def containers(deployment):
    return {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}


def flags(container):
    return dict(a[2:].split("=", 1) for a in container["args"][1:])


def extender_config(objects):
    config_map = find(objects, "ConfigMap", "gpufair-scheduler-config")
    [extender] = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])["extenders"]
    return extender


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


class LayoutTest(unittest.TestCase):
    """layout: sidecar (kube-scheduler calls gpufair on 127.0.0.1 in its own pod) and layout:
    separate (gpufair's own Deployment and Service, called over mutual TLS by its name)."""

    def test_sidecar_is_the_default_and_has_no_webhook_service(self):
        for variant in ("defaults", "everything-on"):
            with self.subTest(variant):
                objects = objects_of(variant)
                self.assertIsNone(find(objects, "Service", "gpufair-webhook"))
                self.assertIsNone(find(objects, "Deployment", "gpufair-extender"))
                self.assertEqual(set(containers(find(objects, "Deployment", "gpufair"))),
                                 {"kube-scheduler", "gpufair"})
                extender = extender_config(objects)
                self.assertRegex(extender["urlPrefix"], r"^https?://127\.0\.0\.1:8888$")
                self.assertNotIn("serverName", extender.get("tlsConfig", {}))

    def test_separate_runs_gpufair_behind_a_service_called_by_its_name_over_mtls(self):
        objects = objects_of("separate")
        scheduler = find(objects, "Deployment", "gpufair")
        gpufair = find(objects, "Deployment", "gpufair-extender")
        service = find(objects, "Service", "gpufair-webhook")
        self.assertEqual(set(containers(scheduler)), {"kube-scheduler"})
        self.assertEqual(set(containers(gpufair)), {"gpufair"})
        self.assertIsNotNone(service)
        # The Service reaches gpufair's pods only, on the port gpufair listens on.
        gpufair_labels = gpufair["spec"]["template"]["metadata"]["labels"]
        scheduler_labels = scheduler["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(selects(service["spec"]["selector"], gpufair_labels))
        self.assertFalse(selects(service["spec"]["selector"], scheduler_labels))
        self.assertFalse(selects(scheduler["spec"]["selector"]["matchLabels"], gpufair_labels))
        self.assertFalse(selects(gpufair["spec"]["selector"]["matchLabels"], scheduler_labels))
        container = containers(gpufair)["gpufair"]
        args = flags(container)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        [port] = service["spec"]["ports"]
        self.assertEqual(ports[port["targetPort"]], port["port"])
        self.assertEqual(args["listen"], "0.0.0.0:%d" % port["port"])
        # kube-scheduler: https to the Service's DNS name, which it checks in the certificate.
        extender = extender_config(objects)
        host = "gpufair-webhook.gpufair-system.svc"
        self.assertEqual(extender["urlPrefix"], "https://%s:%d" % (host, port["port"]))
        self.assertIs(extender["enableHTTPS"], True)
        tls = extender["tlsConfig"]
        self.assertEqual(tls["serverName"], host)
        mounts = {m["name"]: m["mountPath"]
                  for m in containers(scheduler)["kube-scheduler"]["volumeMounts"]}
        for field in ("caFile", "certFile", "keyFile"):
            self.assertTrue(tls[field].startswith(mounts["tls"] + "/"), tls)
        volumes = {v["name"]: v for v in scheduler["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(volumes["tls"]["secret"]["secretName"], "gpufair-scheduler-tls")
        # gpufair: mutual TLS on by default, the scheduler's certificate name allowed, and its own
        # (its probes present it); its own Lease, which the Role lets it update.
        self.assertEqual(args["client-ca"], "/etc/gpufair/tls/ca.crt")
        self.assertEqual(args["client-allowed-names"].split(","), ["gpufair-scheduler", host])
        self.assertNotIn("follow-scheduler-lease", args)
        role = find(objects, "Role", "gpufair")
        lease_names = next(r["resourceNames"] for r in role["rules"] if "resourceNames" in r)
        self.assertIn(args["lease-name"], lease_names)
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            self.assertEqual(container[probe]["exec"]["command"],
                             ["gpufair-probe", "https://127.0.0.1:8888" + path, "/etc/gpufair/tls",
                              host])
        # Metrics from gpufair's pods; the disruption budget keeps a scheduler running.
        metrics = find(objects, "Service", "gpufair-metrics")
        self.assertTrue(selects(metrics["spec"]["selector"], gpufair_labels))
        self.assertFalse(selects(metrics["spec"]["selector"], scheduler_labels))
        budget = find(objects, "PodDisruptionBudget", "gpufair")
        self.assertTrue(selects(budget["spec"]["selector"]["matchLabels"], scheduler_labels))
        self.assertFalse(selects(budget["spec"]["selector"]["matchLabels"], gpufair_labels))

    def test_separate_beside_an_existing_scheduler(self):
        objects = objects_of("separate-own-scheduler")
        self.assertIsNone(find(objects, "Deployment", "gpufair"))
        self.assertIsNone(find(objects, "PodDisruptionBudget", "gpufair"))
        gpufair = find(objects, "Deployment", "gpufair-extender")
        self.assertEqual(gpufair["spec"]["replicas"], 2)
        self.assertEqual(flags(containers(gpufair)["gpufair"])["client-allowed-names"],
                         "my-scheduler,my-scheduler.example")
        # The extender block to give that scheduler is still rendered.
        self.assertEqual(extender_config(objects)["urlPrefix"],
                         "https://gpufair-webhook.gpufair-system.svc:8888")

    def test_client_names_and_their_absence_in_the_sidecar_layout(self):
        tls = {"enabled": True, "secretName": "s", "clientNames": ["kube-scheduler"]}
        args = flags(containers(find(objects_of("defaults", tls=tls), "Deployment",
                                     "gpufair"))["gpufair"])
        self.assertEqual(args["client-allowed-names"], "kube-scheduler")
        args = flags(containers(find(objects_of("everything-on"), "Deployment",
                                     "gpufair"))["gpufair"])
        self.assertIn("client-ca", args)
        self.assertNotIn("client-allowed-names", args)

    def test_separate_needs_tls(self):
        done = helm("template", "gpufair", CHART, values={"layout": "separate"})
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("layout separate needs tls.enabled", done.stderr)

    def test_pods_of_the_separate_layout_stay_restricted(self):
        for variant in SEPARATE_VARIANTS:
            for deployment in (o for o in objects_of(variant) if o["kind"] == "Deployment"):
                with self.subTest(variant, deployment=deployment["metadata"]["name"]):
                    spec = deployment["spec"]["template"]["spec"]
                    self.assertIs(spec["securityContext"]["runAsNonRoot"], True)
                    for c in spec["containers"]:
                        self.assertIs(c["securityContext"]["readOnlyRootFilesystem"], True)
                        self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])


if __name__ == "__main__":
    unittest.main()
