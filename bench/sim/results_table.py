#!/usr/bin/env python3
"""Markdown tables for bench/RESULTS.md from `gpufair simulate --json` files.

    bench/sim/results_table.py /tmp/gpufair-sim/*.json

The file openb_pod_list_X -> trace X. Prints: the default trace at 90/95/100/130% arrived beside
the paper's figures, then every trace at 100% arrived (policies x traces), then run times.
"""
import json
import re
import sys

# "Beware of Fragmentation" (ATC'23), openb default trace: GPU allocation (%) at 100% arrived,
# median of seeds 42-51.
PAPER = {"random": 86.25, "dotprod": 90.56, "clustering": 91.58, "packing": 91.81,
         "bestfit": 92.91, "fgd": 95.23}
ORDER = ["random", "dotprod", "clustering", "packing", "bestfit", "fgd", "fgdplus",
         "blockfit", "binpack", "spread", "fgdm", "hindsight"]
TRACE_ORDER = ["default", "cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235",
               "cpu250", "cpu300", "gpushare20", "gpushare40", "gpushare60", "gpushare80",
               "gpushare100"]


def trace_key(t):
    if t in TRACE_ORDER:
        return (0, TRACE_ORDER.index(t), t)
    family, _, instance = t.rpartition("-")
    return (1, family, int(instance) if instance.isdigit() else 0, t)


def trace_name(doc, path):
    source = doc["scenario"]["source"]
    m = re.search(r"openb_pod_list_(\w+)\.csv", source)
    if m:
        return m.group(1)
    m = re.search(r"([\w-]+)\.csv$", source)  # a families.py list: restricted-1, mix-2, ...
    return m.group(1) if m else path


def fmt(v):
    return "-" if v is None else f"{v:.2f}"


def ranked(names):
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def main(paths):
    docs = {}
    for p in paths:  # several files of one pod list: their policies are merged, later ones win
        with open(p) as f:
            d = json.load(f)
        t = trace_name(d, p)
        if t in docs:
            have = {q["policy"] for q in d["policies"]}
            d["policies"] = [q for q in docs[t]["policies"] if q["policy"] not in have] + \
                d["policies"]
            d["seconds"] += docs[t]["seconds"]
        docs[t] = d
    traces = sorted(docs, key=trace_key)

    if "default" in docs:
        d = docs["default"]
        points = [str(p) for p in d["summary_points"]]
        print("GPU allocation (% of 6,212 GPUs) on the default trace, median of seeds "
              f"{d['protocol']['seeds'][0]}-{d['protocol']['seeds'][-1]}:\n")
        print("| policy | " + " | ".join(f"{p}% arrived" for p in points) +
              " | paper @100% | difference |")
        print("|---|" + "---:|" * (len(points) + 2))
        by = {p["policy"]: p for p in d["policies"]}
        for name in ranked(by):
            at = by[name]["allocation_at_arrived"]
            paper = PAPER.get(name)
            diff = "" if paper is None or at.get("100") is None else f"{at['100'] - paper:+.2f}"
            print(f"| {name} | " + " | ".join(fmt(at.get(p)) for p in points) +
                  f" | {fmt(paper) if paper else ''} | {diff} |")
        print()

    names = ranked({p["policy"] for d in docs.values() for p in d["policies"]})
    print("GPU allocation (%) at 100% arrived GPU request, median over seeds, per pod list:\n")
    print("| policy | " + " | ".join(traces) + " |")
    print("|---|" + "---:|" * len(traces))
    def at100(t, name):
        by = {p["policy"]: p for p in docs[t]["policies"]}
        return by[name]["allocation_at_arrived"].get("100") if name in by else None

    for name in names:
        cells = [fmt(at100(t, name)) if at100(t, name) is not None else "" for t in traces]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if "fgd" in names and "fgdm" in names:  # the default against fgd; bold: at least +0.5
        cells = []
        for t in traces:
            a, b = at100(t, "fgdm"), at100(t, "fgd")
            d = None if a is None or b is None else a - b
            cells.append("" if d is None else (f"**{d:+.2f}**" if d >= 0.5 else f"{d:+.2f}"))
        print("| fgdm − fgd | " + " | ".join(cells) + " |")
    print()
    print("Seeds per pod list: " + ", ".join(
        f"{t} {len(docs[t]['protocol']['seeds'])}" for t in traces) + "\n")

    print("Run time (wall, all policies and seeds of one pod list):\n")
    print("| pod list | runs | pods per run (median) | wall s | sum of run s |")
    print("|---|---:|---:|---:|---:|")
    for t in traces:
        d = docs[t]
        runs = [r for p in d["policies"] for r in p["runs"]]
        pods = sorted(r["pods"] for r in runs)[len(runs) // 2]
        print(f"| {t} | {len(runs)} | {pods} | {d['seconds']:.1f} | "
              f"{sum(r['seconds'] for r in runs):.1f} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
