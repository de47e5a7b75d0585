"""A real gpufair and a real Prometheus for the metric checks: `gpufair serve` on a cluster file,
Debian's prometheus scraping it every second from a temporary data dir, and their HTTP APIs."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import unittest

import yaml

from deploy_support import ROOT

BINARY = os.environ.get("GPUFAIR_BINARY")
RULES = os.path.join(ROOT, "deploy", "prometheus", "gpufair-rules.yaml")
RULE_TESTS = os.path.join(ROOT, "deploy", "prometheus", "gpufair-rules.test.yaml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "gpufair-dashboard.json")


def tool(name):
    """The path of a tool from Debian's prometheus package; skips the test when it is missing."""
    path = shutil.which(name)
    if path is None:
        raise unittest.SkipTest("%s is not installed (Debian package prometheus; `make deps` "
                                "installs it)" % name)
    return path


def free_port():
    """A loopback port free now, for a program that can't be told to pick one (prometheus)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def post_json(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def wait_for(what, check, deadline):
    """Polls CHECK (returns a true value when done) every 0.2 s until DEADLINE (time.time())."""
    last = None
    while time.time() < deadline:
        try:
            result = check()
            if result:
                return result
        except OSError as e:  # not listening yet
            last = e
        time.sleep(0.2)
    raise AssertionError("timed out waiting for %s%s" % (what, " (%s)" % last if last else ""))


class Gpufair:
    """`gpufair serve --cluster FILE` on free loopback ports: .url (webhooks), .metrics_url.
    With --filter-mode all, so /filter lists every node that fits (the default, best, answers
    only the one gpufair would choose) and the example bind request's node is among them."""

    def __init__(self, cluster_file, deadline):
        self.process = subprocess.Popen(
            [BINARY, "serve", "--cluster", cluster_file, "--listen", "127.0.0.1:0",
             "--metrics-listen", "127.0.0.1:0", "--filter-mode", "all"], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        self.url = self.metrics_url = None
        self.output = []
        while time.time() < deadline and not (self.url and self.metrics_url):
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                break
            self.output.append(line)
            m = re.search(r"serving the extender webhooks on (http://127\.0\.0\.1:\d+)", line)
            if m:
                self.url = m.group(1)
            m = re.search(r"metrics on (http://127\.0\.0\.1:\d+)/metrics", line)
            if m:
                self.metrics_url = m.group(1)
        if not (self.url and self.metrics_url):
            self.stop()
            raise AssertionError("gpufair serve did not say where it listens:\n" +
                                 "".join(self.output))
        # Keep reading so a full pipe never blocks gpufair's logging.
        self.drain = subprocess.Popen(["cat"], stdin=self.process.stdout,
                                      stdout=subprocess.DEVNULL)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if getattr(self, "drain", None):
            self.drain.wait(timeout=15)
        self.process.stdout.close()


class Prometheus:
    """prometheus scraping TARGET (host:port) every second as job "gpufair", with the rules."""

    def __init__(self, target, rule_files, workdir):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "scrape_timeout": "1s"},
            "rule_files": rule_files,
            "scrape_configs": [{"job_name": "gpufair", "static_configs": [
                {"targets": [target]}]}],
        }
        path = os.path.join(workdir, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        self.log = open(os.path.join(workdir, "prometheus.log"), "w+")
        self.process = subprocess.Popen(
            [tool("prometheus"), "--config.file=" + path,
             "--storage.tsdb.path=" + os.path.join(workdir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)

    def api(self, path, **params):
        query = urllib.parse.urlencode(params)
        body = get_json("%s/api/v1/%s%s" % (self.url, path, "?" + query if query else ""))
        if body.get("status") != "success":
            raise AssertionError("prometheus %s %s: %s" % (path, params, body))
        return body["data"]

    def query(self, expr):
        """An instant vector query: [(labels, float value)]."""
        data = self.api("query", query=expr)
        if data["resultType"] != "vector":
            raise AssertionError("%s: a %s, not a vector" % (expr, data["resultType"]))
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def alive(self):
        if self.process.poll() is not None:
            self.log.seek(0)
            raise AssertionError("prometheus exited:\n" + self.log.read())
        return True

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def dashboard_queries():
    """[(panel title, expression)] for every target of the Grafana dashboard, and the template
    variables' label_values(METRIC, LABEL) queries as (name, (metric, label))."""
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = []

    def walk(obj, title):
        if isinstance(obj, dict):
            title = obj.get("title", title)
            if isinstance(obj.get("expr"), str):
                exprs.append((title, obj["expr"]))
            for v in obj.values():
                walk(v, title)
        elif isinstance(obj, list):
            for v in obj:
                walk(v, title)

    walk(dashboard.get("panels", []), None)
    variables = []
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", var["definition"])
            if not m:
                raise AssertionError("variable %s: not label_values(M, L)" % var["name"])
            variables.append((var["name"], (m.group(1), m.group(2))))
    return exprs, variables


def rule_expressions():
    """[(alert name, expr)] of gpufair-rules.yaml."""
    with open(RULES) as f:
        groups = yaml.safe_load(f)["groups"]
    return [(r.get("alert") or r.get("record"), r["expr"]) for g in groups for r in g["rules"]]


def family(name):
    """The metric family of a series name (a histogram's _bucket, _sum and _count series)."""
    return re.sub(r"_seconds_(bucket|sum|count)$", "_seconds", name)


def metric_names(expr):
    """The series names an expression reads."""
    text = re.sub(r"\{[^}]*\}", " ", expr)       # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)      # range durations
    text = re.sub(r'"[^"]*"', " ", text)         # strings
    names = set()
    for word in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        if word.startswith("gpufair_") or word == "up":
            names.add(word)
    return names


def with_tempdir():
    return tempfile.TemporaryDirectory(prefix="gpufair-prometheus-")
