#!/usr/bin/env python3
"""Derived openb workload families: pod lists written outside the repository.

From one openb pod list and its node list, writes seeded, deterministic variants:

  restricted  a share (5-35 %) of the GPU pods get a gpu_spec: one or more GPU models present in
              the node list ("V100M16|V100M32", "T4", ...), as the trace's authors did for their
              gpuspec lists. Only groups whose nodes can hold the pod (GPUs per node, CPU, memory)
              are chosen; a group is drawn with probability proportional to its GPU supply times a
              seeded skew in [0.5, 2], so some instances over-ask one model.
  multigpu    the same number of pods drawn with replacement, pods of 2 or more GPUs weighted
              by a factor (2-5): 2/4/8-GPU pods become 2-5x as frequent.
  mix         multigpu, then restricted.

Usage (Python 3 standard library only):
  bench/sim/families.py --nodes NODES.csv --pods PODS.csv --out /tmp/families \
      [--instances 3] [--seed 1]
writes, for each instance i = 1..N:
  restricted-i.csv (share drawn in 5-35 %), multigpu-i.csv (factor drawn in 2-5),
  mix-i.csv (both), and families.txt recording each file's parameters.
One variant with fixed parameters:
  bench/sim/families.py --nodes N --pods P --out DIR --family restricted --share 0.3 --seed 7
The same arguments always give byte-identical files.
"""

import argparse
import csv
import os
import random
import sys

# Model groups a pod may be restricted to, beyond each single model: the trace's own example.
PAIRS = [("V100M16", "V100M32")]


def read_csv(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def num(value, default=0):
    if value in (None, "", "nan", "NaN"):
        return default
    return int(float(value))


def model_groups(nodes):
    """Each GPU model present, and the pairs of PAIRS present, with what their nodes offer."""
    by_model = {}
    for n in nodes:
        model, gpus = n.get("model", ""), num(n.get("gpu") or n.get("num_gpu"))
        if gpus <= 0 or model in ("", "nan"):
            continue
        by_model.setdefault(model, []).append(
            (gpus, num(n.get("cpu_milli")), num(n.get("memory_mib"))))
    groups = [(m,) for m in sorted(by_model)]
    groups += [p for p in PAIRS if all(m in by_model for m in p)]
    out = []
    for g in groups:
        members = [x for m in g for x in by_model[m]]
        out.append({"spec": "|".join(g), "supply": sum(x[0] for x in members), "nodes": members})
    return out


def fits(group, pod):
    gpus, cpu, mem = num(pod["num_gpu"]), num(pod.get("cpu_milli")), num(pod.get("memory_mib"))
    return any(g >= gpus and c >= cpu and m >= mem for g, c, m in group["nodes"])


def restrict(pods, groups, share, rng):
    skew = {g["spec"]: rng.uniform(0.5, 2.0) for g in groups}
    gpu_pods = [i for i, p in enumerate(pods) if num(p["num_gpu"]) > 0]
    chosen = rng.sample(gpu_pods, round(share * len(gpu_pods)))
    out = [dict(p) for p in pods]
    for i in sorted(chosen):
        options = [g for g in groups if fits(g, out[i])]
        if not options:
            continue
        weights = [g["supply"] * skew[g["spec"]] for g in options]
        out[i]["gpu_spec"] = rng.choices(options, weights)[0]["spec"]
    return out


def multigpu(pods, factor, rng):
    weights = [factor if num(p["num_gpu"]) >= 2 else 1.0 for p in pods]
    drawn = rng.choices(range(len(pods)), weights, k=len(pods))
    out = []
    for k, i in enumerate(drawn):
        p = dict(pods[i])
        p["name"] = "%s-r%05d" % (pods[i]["name"], k)
        out.append(p)
    return out


def write(path, fields, pods):
    if "gpu_spec" not in fields:
        fields = fields + ["gpu_spec"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for p in pods:
            w.writerow({k: p.get(k, "") for k in fields})


def make(family, pods, groups, rng, share, factor):
    if family in ("multigpu", "mix"):
        pods = multigpu(pods, factor, rng)
    if family in ("restricted", "mix"):
        pods = restrict(pods, groups, share, rng)
    return pods


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--pods", required=True)
    ap.add_argument("--out", required=True, help="directory (created); keep it outside the repo")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--family", choices=["restricted", "multigpu", "mix"])
    ap.add_argument("--share", type=float, help="restricted share of GPU pods (0.05-0.35)")
    ap.add_argument("--factor", type=float, help="multi-GPU frequency factor (2-5)")
    args = ap.parse_args()

    _, nodes = read_csv(args.nodes)
    fields, pods = read_csv(args.pods)
    groups = model_groups(nodes)
    os.makedirs(args.out, exist_ok=True)
    plan = []
    if args.family:
        rng = random.Random(args.seed)
        share = args.share if args.share is not None else 0.2
        factor = args.factor if args.factor is not None else 3.0
        plan.append((args.family, "%s-s%d" % (args.family, args.seed), share, factor, rng))
    else:
        for i in range(1, args.instances + 1):
            for family in ("restricted", "multigpu", "mix"):
                rng = random.Random("%d/%s/%d" % (args.seed, family, i))
                share = round(rng.uniform(0.05, 0.35), 3)
                factor = round(rng.uniform(2.0, 5.0), 2)
                plan.append((family, "%s-%d" % (family, i), share, factor, rng))
    with open(os.path.join(args.out, "families.txt"), "a") as log:
        for family, name, share, factor, rng in plan:
            out = make(family, pods, groups, rng, share, factor)
            path = os.path.join(args.out, name + ".csv")
            write(path, fields, out)
            restricted = sum(1 for p in out if p.get("gpu_spec", "") not in ("", "nan"))
            heavy = sum(1 for p in out if num(p["num_gpu"]) >= 2)
            line = "%s family=%s seed=%d share=%s factor=%s pods=%d restricted=%d multigpu=%d" % (
                name, family, args.seed, share if family != "multigpu" else "-",
                factor if family != "restricted" else "-", len(out), restricted, heavy)
            log.write(line + "\n")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
