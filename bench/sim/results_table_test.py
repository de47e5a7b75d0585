#!/usr/bin/env python3
"""Tests of results_table.py and plot_json.py on small `simulate --json` fixtures.

ctest: bench_tables.

    python3 bench/sim/results_table_test.py
"""
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import results_table  # noqa: E402


def run(seed, at100):
    """One run whose curve reaches `at100` % allocated at 100 % arrived."""
    return {"seed": seed, "pods": 100, "placed": 90, "failed": 10, "arrived_gpus": 10.0,
            "allocated_gpus": 9.0, "seconds": 0.5,
            "curve": {"arrived_percent": [90, 100], "allocated_percent": [at100 - 5, at100],
                      "fragmented_percent": [None, None],
                      "fragmented_of_free_percent": [None, None]}}


def doc(source, policies, seeds):
    """A report: policies = {name: [value at 100 % per seed]}."""
    return {"schema": "gpufair.simulate/v1",
            "scenario": {"source": "nodes.csv + " + source, "nodes": 2, "gpu_capacity": 16,
                         "pod_templates": 3},
            "protocol": {"load": 1.3, "sampling": "inflate", "seeds": seeds},
            "summary_points": [90, 95, 100, 130],
            "policies": [{"policy": name,
                          "allocation_at_arrived": {"90": None, "95": None,
                                                    "100": statistics.median(v), "130": None},
                          "runs": [run(s, x) for s, x in zip(seeds, v)]}
                         for name, v in policies.items()],
            "seconds": 1.0, "threads": 1}


class Fixture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        files = {
            # paper path: 3 seeds, 4 for fgd; hindsight in its own file
            "default__paper__fgd.json": doc("/t/openb_pod_list_default.csv",
                                            {"fgd": [95.0, 95.2, 95.1, 90.0]},
                                            [42, 43, 44, 45]),
            "default__paper__fgdm.json": doc("/t/openb_pod_list_default.csv",
                                             {"fgdm": [95.0, 95.4, 95.3]}, [42, 43, 44]),
            "default__paper__hindsight.json": doc("/t/openb_pod_list_default.csv",
                                                  {"hindsight": [96.0, 96.1, 96.2]},
                                                  [42, 43, 44]),
            # service path, one file per seed set, merged seed by seed (seed 43 twice: the
            # later file wins)
            "default__service__fgd__a.json": doc("/t/openb_pod_list_default.csv",
                                                 {"fgd": [93.0, 99.0]}, [42, 43]),
            "default__service__fgd__b.json": doc("/t/openb_pod_list_default.csv",
                                                 {"fgd": [93.2, 93.6]}, [43, 44]),
            # a family instance: both paths in one file ("X (path)" names), no fgdm
            "restricted-1__both.json": doc("/tmp/fam/restricted-1.csv",
                                           {"fgd (paper)": [91.0, 92.0, 93.0],
                                            "fgd (service)": [90.0, 90.5, 91.0]},
                                           [42, 43, 44]),
        }
        self.paths = []
        for name, content in files.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                json.dump(content, f)
            self.paths.append(path)

    def tearDown(self):
        self.dir.cleanup()

    def default_list(self):
        return sorted(p for p in self.paths if "/default__" in p)

    def output(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results_table.main(sorted(self.paths))
        return out.getvalue()

    def table(self, text, title):
        """The rows of the table after the line starting with `title`."""
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(title))
        rows = []
        for line in lines[start + 2:]:
            if not line.startswith("|"):
                break
            rows.append([c.strip() for c in line.strip("|").split("|")])
        return rows

    def test_paths_of_rows(self):
        self.assertEqual(results_table.split_name("fgd (service)", "x.json"), ("fgd", "service"))
        self.assertEqual(results_table.split_name("fgd", "/o/a-1__service__fgd.json"),
                         ("fgd", "service"))
        self.assertEqual(results_table.split_name("fgd", "/o/old.json"), ("fgd", "paper"))
        self.assertEqual(results_table.split_name("hindsight", "/o/a__service__h.json"),
                         ("hindsight", "paper"))

    def test_one_table_per_path_with_the_same_layout(self):
        text = self.output()
        paper = self.table(text, "GPU allocation (%) at 100 % arrived, paper")
        service = self.table(text, "GPU allocation (%) at 100 % arrived, service")
        self.assertEqual(paper[0], ["policy", "default", "restricted-1"])
        self.assertEqual(service[0], paper[0])
        by = {r[0]: r[1:] for r in paper[2:]}
        # medians; the best online policy of a column in bold; a cell not run is "·"
        self.assertEqual(by["fgd"], ["95.05", "**92.00**"])
        self.assertEqual(by["**fgdm** (default)"], ["**95.30**", "·"])
        self.assertEqual(by["hindsight (offline)"], ["96.10", "·"])  # offline: never bold
        self.assertEqual(by["fgdm − fgd"], ["+0.25", "·"])
        self.assertEqual(by["hindsight − best online"], ["+0.80", "·"])  # over fgdm's 95.30
        rows = {r[0]: r[1:] for r in service[2:]}
        self.assertNotIn("hindsight (offline)", rows)  # offline: paper path only
        self.assertEqual(rows["fgd"], ["**93.20**", "**90.50**"])  # 93.0, 93.2, 93.6
        self.assertIn("Seeds (service path): 42–44 in every cell", text)
        self.assertIn("Seeds (paper path): 42–44: fgd on restricted-1; fgdm on default; "
                      "hindsight on default — 42–45: fgd on default.", text)

    def test_difference_uses_the_seeds_both_paths_ran(self):
        rows = self.table(self.output(), "Service − paper")
        by = {r[0]: r[1:] for r in rows[2:]}
        # default: service median 93.2 minus paper median 95.1 (seeds 42-44, not 45)
        self.assertEqual(by["fgd"], ["-1.90", "-1.50"])
        self.assertEqual(by["**fgdm** (default)"], ["·", "·"])

    def test_plot_draws_the_service_curve_of_the_named_policies_only(self):
        out = os.path.join(self.dir.name, "plot.svg")
        subprocess.run([sys.executable, os.path.join(HERE, "plot_json.py"), "--out", out,
                        "--service", "fgd", "--xmin", "80"] + self.default_list(), check=True)
        with open(out) as f:
            svg = f.read()
        self.assertIn(">fgd (service) 93.20<", svg)
        self.assertIn(">fgd 95.05<", svg)
        self.assertIn(">hindsight 96.10<", svg)
        self.assertEqual(svg.count('class="curve"'), 0)  # two points per curve: markers only
        subprocess.run([sys.executable, os.path.join(HERE, "plot_json.py"), "--out", out]
                       + self.default_list(), check=True)
        with open(out) as f:
            self.assertNotIn("(service)", f.read())  # default --service fgdm: not run here


if __name__ == "__main__":
    unittest.main()
