#!/usr/bin/env python3
"""Markdown tables for bench/RESULTS.md from `gpufair simulate --json` files.

    bench/sim/results_table.py /tmp/gpufair-table/json/*.json

Each file's pod list comes from its scenario (openb_pod_list_X.csv -> X; a families.py list
restricted-1.csv -> restricted-1). Its path: a policy named "fgd (service)" (several --path in one
run) is on that path; otherwise the file name says it (`<list>__service__<tag>.json`, as
run_table.sh writes them), and without either it is the paper path (the older files). The
hindsight planner is offline: always the paper path. Several files of one (list, path, policy)
are merged seed by seed.

Prints: the default list at 90/95/100/130 % arrived beside the paper's figures; then one table
per path with identical layout (rows: every policy, the default `fgdm` and hindsight; columns:
the shared lists, then the family instances; cells: GPU allocation % at 100 % arrived, median
over seeds, the best online policy of a column in bold; on the paper path, hindsight's headroom
over the best online policy); the difference service - paper on the
seeds both paths ran; the seeds of each table; run times.
"""
import json
import re
import statistics
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
FAMILY_ORDER = ["restricted", "multigpu", "mix", "cpuheavy"]  # families.py's
PATHS = ["paper", "service"]
DEFAULT = "fgdm"
OFFLINE = "hindsight"
LABEL = {DEFAULT: "**fgdm** (default)", OFFLINE: "hindsight (offline)"}


def trace_key(t):
    if t in TRACE_ORDER:
        return (0, TRACE_ORDER.index(t), t)
    family, _, instance = t.rpartition("-")
    rank = FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER)
    return (1, rank, family, int(instance) if instance.isdigit() else 0, t)


def trace_name(doc, path):
    source = doc["scenario"]["source"]
    m = re.search(r"openb_pod_list_(\w+)\.csv", source)
    if m:
        return m.group(1)
    m = re.search(r"([\w-]+)\.csv$", source)  # a families.py list: restricted-1, mix-2, ...
    return m.group(1) if m else path


def split_name(name, file_path):
    """(policy, path) of a report row: "fgd (service)", or "fgd" on the file's path."""
    m = re.fullmatch(r"(.+) \(([\w-]+)\)", name)
    if m:
        return m.group(1), m.group(2)
    if name == OFFLINE:
        return name, "paper"
    m = re.search(r"__(paper|service|service-given)(__|\.json$)", file_path)
    return name, m.group(1) if m else "paper"


def run_at(run, x=100):
    """One run's allocation at x % arrived (the curve's point), or None."""
    c = run["curve"]
    if x not in c["arrived_percent"]:
        return None
    return c["allocated_percent"][c["arrived_percent"].index(x)]


def load(paths):
    """{(list, path, policy): row}: the JSON policy entry, its seeds and summary points.

    Files of one (list, path, policy) are merged seed by seed (a later file wins for a seed it
    repeats; run_table.sh writes one file per seed), and the median at 100 % arrived is then
    taken again over the merged runs."""
    cells = {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        t = trace_name(d, p)
        for q in d["policies"]:
            policy, path = split_name(q["policy"], p)
            key = (t, path, policy)
            row = dict(q, seeds=list(d["protocol"]["seeds"]), points=d["summary_points"])
            if key in cells:
                runs = {r["seed"]: r for r in cells[key]["runs"]}
                runs.update({r["seed"]: r for r in q["runs"]})
                row["runs"] = [runs[s] for s in sorted(runs)]
                row["seeds"] = sorted(runs)
                values = [v for v in (run_at(r) for r in row["runs"]) if v is not None]
                row["allocation_at_arrived"] = {
                    "100": round(statistics.median(values), 3) if values else None}
            cells[key] = row
    return cells


def fmt(v):
    return "-" if v is None else f"{v:.2f}"


def ranked(names):
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def seeds_text(seeds):
    s = sorted(seeds)
    if s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}–{s[-1]}" if len(s) > 1 else str(s[0])
    return ",".join(map(str, s))


def default_list_table(cells):
    by = {pol: q for (t, path, pol), q in cells.items() if t == "default" and path == "paper"}
    if not by:
        return
    points = [str(p) for p in next(iter(by.values()))["points"]]
    print("Paper protocol, default list: GPU allocation (% of 6,212 GPUs), median over seeds:\n")
    print("| policy | seeds | " + " | ".join(f"{p}% arrived" for p in points) +
          " | paper @100% | difference |")
    print("|---|---|" + "---:|" * (len(points) + 2))
    for name in ranked(by):
        at = by[name]["allocation_at_arrived"]
        paper = PAPER.get(name)
        diff = "" if paper is None or at.get("100") is None else f"{at['100'] - paper:+.2f}"
        print(f"| {name} | {seeds_text(by[name]['seeds'])} | " +
              " | ".join(fmt(at.get(p)) for p in points) +
              f" | {fmt(paper) if paper else ''} | {diff} |")
    print()


def path_table(cells, path, traces, names):
    """Rows: policies; columns: lists; bold: the best online policy of each column."""
    def at100(t, name):
        q = cells.get((t, path, name))
        return None if q is None else q["allocation_at_arrived"].get("100")

    best = {}
    for t in traces:
        online = [at100(t, n) for n in names if n != OFFLINE and at100(t, n) is not None]
        best[t] = max(online) if online else None
    print("| policy | " + " | ".join(traces) + " |")
    print("|---|" + "---:|" * len(traces))
    for name in names:
        if path != "paper" and name == OFFLINE:
            continue
        cells_ = []
        for t in traces:
            v = at100(t, name)
            text = "·" if v is None else fmt(v)
            cells_.append(f"**{text}**" if v is not None and name != OFFLINE and
                          f"{v:.2f}" == f"{best[t]:.2f}" else text)
        print(f"| {LABEL.get(name, name)} | " + " | ".join(cells_) + " |")
    if "fgd" in names and DEFAULT in names:  # the default against fgd
        diffs = []
        for t in traces:
            a, b = at100(t, DEFAULT), at100(t, "fgd")
            diffs.append("·" if a is None or b is None else f"{a - b:+.2f}")
        print(f"| {DEFAULT} − fgd | " + " | ".join(diffs) + " |")
    if path == "paper" and OFFLINE in names:  # the headroom: offline plan over the best online
        diffs = []
        for t in traces:
            a = at100(t, OFFLINE)
            diffs.append("·" if a is None or best[t] is None else f"{a - best[t]:+.2f}")
        print(f"| {OFFLINE} − best online | " + " | ".join(diffs) + " |")
    print()
    print(f"Seeds ({path} path): " + seeds_summary(cells, path, traces) + ".\n")


def seeds_summary(cells, path, traces):
    """The seeds of the cells of one path: "42–46 in every cell", or per seed set the policies
    on every list ("fgd") or on some ("fgd on cpu0, mix-1"), the most frequent set first."""
    groups = {}
    for (t, p, n), q in cells.items():
        if p == path:
            groups.setdefault(seeds_text(q["seeds"]), {}).setdefault(n, []).append(t)
    if len(groups) == 1:
        return f"{next(iter(groups))} in every cell"
    parts = []
    for seeds, by in sorted(groups.items(), key=lambda kv: -sum(map(len, kv[1].values()))):
        what = []
        for n in ranked(by):
            lists = sorted(by[n], key=trace_key)
            what.append(n if len(lists) == len(traces) else f"{n} on {', '.join(lists)}")
        parts.append(f"{seeds}: {'; '.join(what)}")
    return " — ".join(parts)


def difference_table(cells, traces, names):
    """service - paper, medians over the seeds both paths ran (per cell)."""
    print("| policy | " + " | ".join(traces) + " |")
    print("|---|" + "---:|" * len(traces))
    for name in names:
        if name == OFFLINE:
            continue
        row = []
        for t in traces:
            a, b = cells.get((t, "paper", name)), cells.get((t, "service", name))
            if a is None or b is None:
                row.append("·")
                continue
            pa = {r["seed"]: run_at(r) for r in a["runs"]}
            sv = {r["seed"]: run_at(r) for r in b["runs"]}
            common = [s for s in pa if s in sv and pa[s] is not None and sv[s] is not None]
            if not common:
                row.append("·")
                continue
            diff = statistics.median(sv[s] for s in common) - \
                statistics.median(pa[s] for s in common)
            row.append(f"{diff:+.2f}")
        print(f"| {LABEL.get(name, name)} | " + " | ".join(row) + " |")
    print()


def run_times(cells, traces):
    print("| pod list | path | runs | pods per run (median) | sum of run s |")
    print("|---|---|---:|---:|---:|")
    for t in traces:
        for path in PATHS:
            runs = [r for (t2, p, n), q in cells.items() if t2 == t and p == path
                    for r in q["runs"]]
            if runs:
                pods = sorted(r["pods"] for r in runs)[len(runs) // 2]
                print(f"| {t} | {path} | {len(runs)} | {pods} | "
                      f"{sum(r['seconds'] for r in runs):.1f} |")


def main(paths):
    cells = load(paths)
    traces = sorted({t for t, _, _ in cells}, key=trace_key)
    names = ranked({n for _, _, n in cells})
    default_list_table(cells)
    for path in PATHS:
        if any(p == path for _, p, _ in cells):
            what = "paper protocol (workload given)" if path == "paper" else \
                "service path (what `serve` runs, workload learned online)"
            print(f"GPU allocation (%) at 100 % arrived, {what}, median over seeds:\n")
            path_table(cells, path, traces, names)
    if all(any(p == path for _, p, _ in cells) for path in PATHS):
        print("Service − paper (points at 100 % arrived, medians over the seeds both ran):\n")
        difference_table(cells, traces, names)
    print("Run time (CPU of the replays, per list and path):\n")
    run_times(cells, traces)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
