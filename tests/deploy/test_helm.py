"""The chart through real Helm 3 (fetch_helm.py): lint and template under every checked value set,
a publishable package, and values.schema.json refusing bad values with the value's name."""
import os
import tarfile
import tempfile
import unittest

import yaml

from deploy_support import CHART, VALUE_VARIANTS, helm, rel, render, variant_args


class LintTest(unittest.TestCase):
    def test_lint_passes_under_every_value_set(self):
        for variant in VALUE_VARIANTS:
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
        for variant in VALUE_VARIANTS:
            with self.subTest(variant):
                release, namespace, values = variant_args(variant)
                done = helm("template", release, CHART, "--namespace", namespace, values=values)
                self.assertEqual(done.returncode, 0, "%s: %s" % (rel(CHART), done.stderr))


if __name__ == "__main__":
    unittest.main()
