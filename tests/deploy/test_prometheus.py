"""The alerting rules and the Grafana dashboard against real Prometheus (Debian's prometheus
package, with promtool): the rules check and pass their unit tests, every rule and dashboard
expression evaluates on Prometheus scraping a running `gpufair serve`, and the values agree with
gpufair's /debug/snapshot after known scheduling."""
import copy
import json
import math
import os
import subprocess
import time
import unittest
import urllib.request

import yaml

from deploy_support import CHART, EXAMPLES, MANIFESTS, ROOT, load_yaml_documents
from prometheus_support import (BINARY, RULE_TESTS, RULES, Gpufair, Prometheus, dashboard_queries,
                                family, get_json, metric_names, post_json, rule_expressions, tool,
                                wait_for, with_tempdir)

# Series gpufair exports only when it reads the API server (README "Metrics"): a file-mode
# gpufair has the families but no series, so their expressions evaluate to nothing here.
API_SERVER_ONLY = {"gpufair_mirror_events_total", "gpufair_mirror_lists_total",
                   "gpufair_watch_restarts_total", "gpufair_watch_gone_total",
                   "gpufair_quota_config_valid"}
# A pod of team-b that waits (no nodeName) in the cluster the live test serves.
WAITING_POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "eval-waiting", "namespace": "team-b",
                 "uid": "7e2f0a4c-1b3d-4c5e-8f60-718293a4b5c6"},
    "spec": {"schedulerName": "gpufair", "containers": [
        {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
    "status": {"phase": "Pending"},
}


class RulesTest(unittest.TestCase):
    def promtool(self, *args):
        done = subprocess.run([tool("promtool"), *args], capture_output=True, text=True,
                              timeout=60, cwd=os.path.dirname(RULES))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout

    def test_promtool_checks_the_rules(self):
        self.assertIn("SUCCESS: 7 rules found", self.promtool("check", "rules", RULES))

    def test_promtool_unit_tests_fire_and_spare_every_alert(self):
        self.assertIn("SUCCESS", self.promtool("test", "rules", RULE_TESTS))
        with open(RULE_TESTS) as f:
            tests = yaml.safe_load(f)["tests"]
        fired, spared = set(), set()
        for test in tests:
            for case in test["alert_rule_test"]:
                (fired if case.get("exp_alerts") else spared).add(case["alertname"])
        alerts = {name for name, _ in rule_expressions()}
        self.assertEqual(fired, alerts, "an alert without a test that fires it")
        self.assertEqual(spared, alerts, "an alert without a test where it stays silent")

    def test_every_rule_reads_only_metrics_gpufair_exports(self):
        exported = exported_families()
        for name, expr in rule_expressions():
            with self.subTest(name):
                used = {family(n) for n in metric_names(expr)}
                self.assertEqual(used - exported - {"up"}, set())

    def test_operator_and_chart_copies_equal_the_rules_file(self):
        with open(RULES) as f:
            text = f.read()
        with open(os.path.join(CHART, "files", "gpufair-rules.yaml")) as f:
            self.assertEqual(f.read(), text, "the chart's files/gpufair-rules.yaml differs")
        docs = load_yaml_documents(os.path.join(MANIFESTS, "prometheus-operator",
                                                "prometheusrule.yaml"))
        self.assertEqual(len(docs), 1)
        self.assertEqual(docs[0][1]["kind"], "PrometheusRule")
        self.assertEqual(docs[0][1]["spec"], yaml.safe_load(text))


def exported_families():
    """The metric families a file-mode gpufair declares on /metrics, and quota_config_valid,
    which it declares only in API server mode (the collector's source names it)."""
    if not BINARY:
        raise unittest.SkipTest("GPUFAIR_BINARY is not set (ctest sets it)")
    server = Gpufair(os.path.join(EXAMPLES, "cluster-4x10.yaml"), time.time() + 20)
    try:
        with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        server.stop()
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    with open(os.path.join(ROOT, "src", "metrics", "snapshot_collector.cc")) as f:
        if '"quota_config_valid"' in f.read():
            names.add("gpufair_quota_config_valid")
    return names


@unittest.skipUnless(BINARY, "GPUFAIR_BINARY is not set (ctest sets it)")
class LiveTest(unittest.TestCase):
    """One gpufair, one Prometheus, one known scheduling; every check reads their APIs. The whole
    run is bounded by DEADLINE seconds."""
    DEADLINE = 50

    @classmethod
    def setUpClass(cls):
        tool("prometheus")
        cls.deadline = time.time() + cls.DEADLINE
        cls.tmp = with_tempdir()
        workdir = cls.tmp.__enter__()
        cluster = os.path.join(workdir, "cluster.yaml")
        with open(os.path.join(EXAMPLES, "cluster-4x10.yaml")) as src, open(cluster, "w") as f:
            f.write(src.read() + "\n---\n" + yaml.safe_dump(WAITING_POD))
        cls.gpufair = cls.prometheus = None
        try:
            cls.gpufair = Gpufair(cluster, cls.deadline)
            cls.prometheus = Prometheus(cls.gpufair.metrics_url[len("http://"):],
                                        [RULES], workdir)
            cls.schedule_and_scrape()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for process in (cls.prometheus, cls.gpufair):
            if process:
                process.stop()
        cls.tmp.__exit__(None, None, None)

    @classmethod
    def schedule_and_scrape(cls):
        prom = cls.prometheus
        wait_for("the first scrape", lambda: prom.alive() and prom.query(
            'up{job="gpufair"} == 1'), cls.deadline)
        # Known scheduling after the first scrape, so rate() and increase() see it: team-b's
        # 4-GPU train-bert filtered and bound to gpu-node-2, and a 40-GPU pod refused (above
        # team-b's limit of 30).
        with open(os.path.join(EXAMPLES, "filter-request.json")) as f:
            request = json.load(f)
        result = post_json(cls.gpufair.url + "/filter", request)
        assert "gpu-node-2" in result["NodeNames"], result
        with open(os.path.join(EXAMPLES, "bind-request.json")) as f:
            assert post_json(cls.gpufair.url + "/bind", json.load(f)).get("Error", "") == ""
        big = copy.deepcopy(request)
        big["Pod"]["metadata"].update(name="too-big", uid="too-big-uid")
        for c in big["Pod"]["spec"]["containers"]:
            c["resources"] = {"limits": {"nvidia.com/gpu": "40"}}
        assert not post_json(cls.gpufair.url + "/filter", big)["NodeNames"]
        cls.snapshot = get_json(cls.gpufair.url + "/debug/snapshot")
        # Two scrapes with the bind in them, and rules evaluated on them.
        wait_for("scrapes after the bind", lambda: prom.alive() and prom.query(
            'count_over_time(gpufair_extender_requests_total{verb="bind",result="ok"}[1m]) >= 2'
            ' and gpufair_extender_requests_total{verb="bind",result="ok"} == 1'), cls.deadline)
        team_b = [q for q in cls.snapshot["queues"] if q["name"] == "team-b"][0]
        wait_for("the rules' evaluation of those scrapes", lambda: any(
            a["labels"].get("queue") == "team-b" and float(a["value"]) == team_b["pending"]
            for a in prom.api("alerts")["alerts"]), cls.deadline)

    def query(self, expr):
        return self.prometheus.query(expr.replace("$queue", ".*").replace("$node", ".*"))

    def by(self, label, expr):
        return {labels[label]: value for labels, value in self.query(expr)}

    def test_the_known_scheduling_happened(self):
        nodes = {n["name"]: n for n in self.snapshot["nodes"]}
        self.assertEqual(nodes["gpu-node-2"]["free"], 6)
        queues = {q["name"]: q for q in self.snapshot["queues"]}
        self.assertEqual(queues["team-b"]["allocated"], 4)
        # Waiting: the cluster file's 2-GPU pod and the refused 40-GPU pod.
        self.assertEqual(queues["team-b"]["pending"], 42)
        self.assertEqual(queues["team-b"]["pendingPods"], 2)

    def test_every_dashboard_expression_returns_data(self):
        exprs, variables = dashboard_queries()
        self.assertGreater(len(exprs), 15)
        for title, expr in exprs:
            with self.subTest(title, expr=expr):
                result = self.query(expr)
                if metric_names(expr) & API_SERVER_ONLY:
                    self.assertEqual(result, [], "API server mode only, none in file mode")
                else:
                    self.assertTrue(result, "no data")
        for name, (metric, label) in variables:
            with self.subTest(name):
                values = self.prometheus.api("label/%s/values" % label, **{"match[]": metric})
                self.assertTrue(values)

    def test_dashboard_values_match_the_snapshot(self):
        queues = {q["name"]: q for q in self.snapshot["queues"]}
        for metric, field in [("allocated_gpus", "allocated"), ("deserved_gpus", "deserved"),
                              ("fair_share_gpus", "fairShare"), ("over_quota_gpus", "overQuota"),
                              ("pending_gpus", "pending"), ("pending_pods", "pendingPods")]:
            with self.subTest(metric):
                got = self.by("queue", 'gpufair_queue_%s{queue=~"$queue"}' % metric)
                self.assertEqual(got, {n: float(q[field]) for n, q in queues.items()})
        cluster = self.snapshot["cluster"]
        self.assertEqual(self.by("state", "gpufair_cluster_gpus"), {
            "total": cluster["capacity"], "allocated": cluster["allocated"],
            "free": cluster["free"], "reserved": 0})
        self.assertEqual(self.query("gpufair_largest_free_block_gpus")[0][1],
                         cluster["largestFreeBlock"])
        self.assertEqual(self.by("node", 'gpufair_node_free_gpus{node=~"$node"}'),
                         {n["name"]: float(n["free"]) for n in self.snapshot["nodes"]})
        share = self.by("node", 'gpufair_node_free_gpus{node=~"$node"} / '
                                '(gpufair_node_allocatable_gpus{node=~"$node"} > 0)')
        self.assertEqual(share, {n["name"]: n["free"] / n["allocatable"]
                                 for n in self.snapshot["nodes"]})
        ratio = self.query("gpufair_fragmentation_ratio")[0][1]
        self.assertTrue(0 <= ratio <= 1, ratio)

    def test_request_rates_show_the_known_requests(self):
        rates = {(l["verb"], l["result"]): v for l, v in self.query(
            "sum by (verb, result) (rate(gpufair_extender_requests_total[5m]))")}
        self.assertGreater(rates[("bind", "ok")], 0)
        self.assertGreater(rates[("filter", "ok")], 0)
        self.assertEqual(rates[("preempt", "ok")], 0)
        rejections = self.by("reason", "sum by (reason) (rate(gpufair_filter_rejections_total"
                                       "[5m])) > 0")
        self.assertEqual(set(rejections), {"quota_limit"})
        p99 = self.by("verb", "histogram_quantile(0.99, sum by (le, verb) (rate("
                              "gpufair_extender_request_duration_seconds_bucket"
                              '{verb=~"filter|prioritize|preempt|bind"}[5m])))')
        self.assertTrue(0 < p99["bind"] <= 5, p99)
        self.assertTrue(math.isnan(p99["preempt"]), p99)  # no preempt calls: no quantile

    def test_every_rule_evaluates_and_reads_live_series(self):
        rules = {r["name"]: r for g in self.prometheus.api("rules")["groups"] for r in g["rules"]}
        for name, expr in rule_expressions():
            with self.subTest(name):
                self.assertEqual(rules[name]["health"], "ok", rules[name].get("lastError"))
                self.query(expr)  # a valid instant query on live data
                for metric in metric_names(expr) - API_SERVER_ONLY:
                    self.assertTrue(self.query(metric), "%s has no series" % metric)

    def test_only_the_waiting_queue_alerts(self):
        # team-b holds 4 of its 20 deserved GPUs and waits for 42 more: GpufairQueueStarved is
        # pending (it fires after 30 minutes); nothing else is even pending.
        alerts = self.prometheus.api("alerts")["alerts"]
        self.assertEqual([(a["labels"]["alertname"], a["labels"].get("queue"), a["state"])
                          for a in alerts], [("GpufairQueueStarved", "team-b", "pending")])
        self.assertEqual(float(alerts[0]["value"]), 42)


if __name__ == "__main__":
    unittest.main()
