#!/usr/bin/env python3
"""Tests of families.py on a small node and pod list: same arguments, same bytes; what each
family changes (cpuheavy: the GPU pods kept, CPU-only pods multiplied, a share given more CPU
capped by the nodes; the older families' files unchanged by its addition).

ctest: bench_families.

    python3 bench/sim/families_test.py
"""
import csv
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "families.py")

NODES = [("n1", 64000, 262144, 8, "V100M32"), ("n2", 96000, 786432, 8, "G3"),
         ("n3", 32000, 131072, 2, "T4"), ("n4", 48000, 196608, 4, "V100M16")]


def pods():
    """40 pods: 30 GPU pods (1, 2, 4, 8 GPUs; whole and shared), 10 CPU-only pods."""
    out = []
    for i in range(30):
        gpus = [1, 1, 1, 2, 4, 8][i % 6]
        milli = 1000 if gpus > 1 or i % 2 else 250 + 50 * (i % 5)
        out.append(("p%02d" % i, 4000 + 1000 * (i % 7), 16384, gpus, milli))
    for i in range(10):
        out.append(("c%02d" % i, [8000, 12500, 32000][i % 3], 32768, 0, 0))
    return out


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class FamiliesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.nodes = os.path.join(d, "nodes.csv")
        self.pods = os.path.join(d, "pods.csv")
        with open(self.nodes, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
            w.writerows(NODES)
        with open(self.pods, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"])
            w.writerows([p + ("",) for p in pods()])

    def tearDown(self):
        self.tmp.cleanup()

    def generate(self, out, *extra):
        subprocess.run([sys.executable, SCRIPT, "--nodes", self.nodes, "--pods", self.pods,
                        "--out", out] + list(extra), check=True, stdout=subprocess.DEVNULL)
        return out

    def digests(self, out):
        result = {}
        for name in sorted(os.listdir(out)):
            if name.endswith(".csv"):
                with open(os.path.join(out, name), "rb") as f:
                    result[name] = hashlib.sha256(f.read()).hexdigest()
        return result

    def test_same_arguments_same_bytes(self):
        a = self.generate(os.path.join(self.tmp.name, "a"), "--instances", "2", "--seed", "5")
        b = self.generate(os.path.join(self.tmp.name, "b"), "--instances", "2", "--seed", "5")
        c = self.generate(os.path.join(self.tmp.name, "c"), "--instances", "2", "--seed", "6")
        da, db, dc = self.digests(a), self.digests(b), self.digests(c)
        self.assertEqual(sorted(da), ["%s-%d.csv" % (f, i) for f in
                                      ("cpuheavy", "mix", "multigpu", "restricted")
                                      for i in (1, 2)])
        self.assertEqual(da, db)
        self.assertNotEqual(da["cpuheavy-1.csv"], dc["cpuheavy-1.csv"])
        self.assertNotEqual(da["cpuheavy-1.csv"], da["cpuheavy-2.csv"])

    def test_cpuheavy_keeps_gpu_pods_and_multiplies_cpu_only_pods(self):
        out = self.generate(os.path.join(self.tmp.name, "h"), "--family", "cpuheavy",
                            "--cpu-only", "2.5", "--share", "0.5", "--factor", "2", "--seed", "3")
        rows = read(os.path.join(out, "cpuheavy-s3.csv"))
        source = read(self.pods)
        gpu_in = [p for p in source if p["num_gpu"] != "0"]
        gpu_out = [p for p in rows if p["num_gpu"] != "0"]
        cpu_out = [p for p in rows if p["num_gpu"] == "0"]
        self.assertEqual(len(cpu_out), 25)  # 2.5 x the 10 CPU-only pods
        self.assertTrue({p["cpu_milli"] for p in cpu_out} <= {"8000", "12500", "32000"})
        self.assertEqual(len(rows), len({p["name"] for p in rows}))  # names renumbered, unique
        self.assertEqual([(p["num_gpu"], p["gpu_milli"], p["memory_mib"]) for p in gpu_out],
                         [(p["num_gpu"], p["gpu_milli"], p["memory_mib"]) for p in gpu_in])
        scaled = 0
        for before, after in zip(gpu_in, gpu_out):
            cpu_before, cpu_after = int(before["cpu_milli"]), int(after["cpu_milli"])
            gpus = int(before["num_gpu"])
            cap = max(n[1] for n in NODES if n[3] >= gpus)  # memory fits every node here
            if cpu_after != cpu_before:
                scaled += 1
                self.assertEqual(cpu_after, min(2 * cpu_before, cap))
        self.assertEqual(scaled, 15)  # half of the 30 GPU pods (none already at its cap)

    def test_cpuheavy_caps_cpu_by_the_nodes_that_hold_the_pod(self):
        out = self.generate(os.path.join(self.tmp.name, "cap"), "--family", "cpuheavy",
                            "--cpu-only", "1", "--share", "1", "--factor", "20", "--seed", "1")
        rows = read(os.path.join(out, "cpuheavy-s1.csv"))
        for p in rows:
            gpus = int(p["num_gpu"])
            if gpus == 0:
                continue
            cap = max(n[1] for n in NODES if n[3] >= gpus)
            self.assertLessEqual(int(p["cpu_milli"]), cap)
        eight = {int(p["cpu_milli"]) for p in rows if p["num_gpu"] == "8"}
        self.assertEqual(eight, {96000})  # every 8-GPU pod scaled 20x, capped at n2's 96 CPUs


if __name__ == "__main__":
    unittest.main()
