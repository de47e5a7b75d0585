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
  cpuheavy    CPU binds: the GPU pods kept, CPU-only pods drawn with replacement from the list's
              own CPU-only pods, a multiple (1-3) of their number, as the trace's cpu050..cpu300
              lists add CPU-only pods to the same GPU pods; and a share (0-30 %) of the GPU pods
              given a multiple (1.25-2.5) of their CPU, capped by the largest node that holds them.

Usage (Python 3 standard library only):
  bench/sim/families.py --nodes NODES.csv --pods PODS.csv --out /tmp/families \
      [--instances 3] [--seed 1]
writes, for each instance i = 1..N:
  restricted-i.csv (share drawn in 5-35 %), multigpu-i.csv (factor drawn in 2-5),
  mix-i.csv (both), cpuheavy-i.csv (CPU-only multiple in 1-3, share in 0-30 %, factor in
  1.25-2.5), and families.txt recording each file's parameters.
One variant with fixed parameters:
  bench/sim/families.py --nodes N --pods P --out DIR --family restricted --share 0.3 --seed 7
  bench/sim/families.py --nodes N --pods P --out DIR --family cpuheavy --cpu-only 2.5 \
      --share 0.1 --factor 2 --seed 7
The same arguments always give byte-identical files.
"""

import argparse
import csv
import os
import random
import sys

# Model groups a pod may be restricted to, beyond each single model: the trace's own example.
PAIRS = [("V100M16", "V100M32")]
FAMILIES = ["restricted", "multigpu", "mix", "cpuheavy"]


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


def max_cpu(nodes, pod):
    """The most CPU a node able to hold the pod's GPUs and memory has (0: none)."""
    gpus, mem = num(pod["num_gpu"]), num(pod.get("memory_mib"))
    best = 0
    for n in nodes:
        if num(n.get("gpu") or n.get("num_gpu")) >= gpus and num(n.get("memory_mib")) >= mem:
            best = max(best, num(n.get("cpu_milli")))
    return best


def cpuheavy(pods, nodes, cpu_only, share, factor, rng):
    """The GPU pods of `pods`, a share of them with `factor` times their CPU (rounded to 100
    milli-CPU, capped by the largest node that holds them), then round(cpu_only x the number of
    CPU-only pods) CPU-only pods drawn with replacement from the list's own. Names are
    renumbered (cpuheavy-NNNNN), as the trace's cpuXXX lists renumber theirs."""
    gpu_pods = [dict(p) for p in pods if num(p["num_gpu"]) > 0]
    cpu_pods = [p for p in pods if num(p["num_gpu"]) == 0]
    for i in sorted(rng.sample(range(len(gpu_pods)), round(share * len(gpu_pods)))):
        p = gpu_pods[i]
        scaled = int(round(num(p["cpu_milli"]) * factor / 100.0)) * 100
        p["cpu_milli"] = str(max(num(p["cpu_milli"]), min(scaled, max_cpu(nodes, p))))
    added = [dict(p) for p in rng.choices(cpu_pods, k=round(cpu_only * len(cpu_pods)))] \
        if cpu_pods else []
    out = added + gpu_pods
    for k, p in enumerate(out):
        p["name"] = "cpuheavy-%05d" % k
    return out


def write(path, fields, pods):
    if "gpu_spec" not in fields:
        fields = fields + ["gpu_spec"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for p in pods:
            w.writerow({k: p.get(k, "") for k in fields})


def make(family, pods, groups, nodes, rng, share, factor, cpu_only):
    if family == "cpuheavy":
        return cpuheavy(pods, nodes, cpu_only, share, factor, rng)
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
    ap.add_argument("--family", choices=FAMILIES)
    ap.add_argument("--share", type=float, help="restricted share of GPU pods (0.05-0.35); "
                    "cpuheavy: share of GPU pods given more CPU (0-0.3)")
    ap.add_argument("--factor", type=float, help="multi-GPU frequency factor (2-5); cpuheavy: "
                    "CPU factor of that share (1.25-2.5)")
    ap.add_argument("--cpu-only", type=float,
                    help="cpuheavy: CPU-only pods, a multiple of the list's own number (1-3)")
    args = ap.parse_args()

    _, nodes = read_csv(args.nodes)
    fields, pods = read_csv(args.pods)
    groups = model_groups(nodes)
    os.makedirs(args.out, exist_ok=True)
    plan = []
    if args.family:
        rng = random.Random(args.seed)
        heavy = args.family == "cpuheavy"
        share = args.share if args.share is not None else (0.1 if heavy else 0.2)
        factor = args.factor if args.factor is not None else (2.0 if heavy else 3.0)
        cpu_only = args.cpu_only if args.cpu_only is not None else 2.0
        plan.append((args.family, "%s-s%d" % (args.family, args.seed), share, factor, cpu_only,
                     rng))
    else:
        for i in range(1, args.instances + 1):
            for family in FAMILIES:
                rng = random.Random("%d/%s/%d" % (args.seed, family, i))
                share = round(rng.uniform(0.05, 0.35), 3)
                factor = round(rng.uniform(2.0, 5.0), 2)
                cpu_only = None
                if family == "cpuheavy":  # its own ranges, drawn after the others' two draws
                    cpu_only = round(rng.uniform(1.0, 3.0), 2)
                    share = round(rng.uniform(0.0, 0.3), 3)
                    factor = round(rng.uniform(1.25, 2.5), 2)
                plan.append((family, "%s-%d" % (family, i), share, factor, cpu_only, rng))
    with open(os.path.join(args.out, "families.txt"), "a") as log:
        for family, name, share, factor, cpu_only, rng in plan:
            out = make(family, pods, groups, nodes, rng, share, factor, cpu_only)
            path = os.path.join(args.out, name + ".csv")
            write(path, fields, out)
            restricted = sum(1 for p in out if p.get("gpu_spec", "") not in ("", "nan"))
            heavy = sum(1 for p in out if num(p["num_gpu"]) >= 2)
            line = "%s family=%s seed=%d share=%s factor=%s pods=%d restricted=%d multigpu=%d" % (
                name, family, args.seed, share if family != "multigpu" else "-",
                factor if family != "restricted" else "-", len(out), restricted, heavy)
            if family == "cpuheavy":
                cpu_only_pods = sum(1 for p in out if num(p["num_gpu"]) == 0)
                line += " cpu_only=%s cpu_only_pods=%d" % (cpu_only, cpu_only_pods)
            log.write(line + "\n")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
