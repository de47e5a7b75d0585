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
         "blockfit", "binpack", "spread"]
TRACE_ORDER = ["default", "cpu050", "cpu100", "cpu200", "cpu250", "gpushare20", "gpushare40",
               "gpushare60", "gpushare80", "gpushare100"]


def trace_name(doc, path):
    m = re.search(r"openb_pod_list_(\w+)\.csv", doc["scenario"]["source"])
    return m.group(1) if m else path


def fmt(v):
    return "-" if v is None else f"{v:.2f}"


def ranked(names):
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def main(paths):
    docs = {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        docs[trace_name(d, p)] = d
    traces = sorted(docs, key=lambda t: (TRACE_ORDER.index(t) if t in TRACE_ORDER else 99, t))

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
    for name in names:
        cells = []
        for t in traces:
            by = {p["policy"]: p for p in docs[t]["policies"]}
            cells.append(fmt(by[name]["allocation_at_arrived"].get("100")) if name in by else "")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()

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
