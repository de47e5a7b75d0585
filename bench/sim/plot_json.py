#!/usr/bin/env python3
"""SVG plot of GPU allocation vs arrived GPU request from `gpufair simulate --json` files.

    bench/sim/plot_json.py --title T --out plot.svg [--xmin 70] [--ymin 70] [--service fgdm]
        run1.json run2.json ...

Several files of one pod list are merged seed by seed (results_table.load).
One curve per policy: the median over seeds at each arrived percent, solid for the paper
protocol; the service path (a row "fgd (service)", or a file named `<list>__service__*.json` as
run_table.sh writes them) dashed, for the policies named by --service only (default: fgdm, the
default strategy). `hindsight`, which the planner computes at 100 % arrived only, is a marker
there. The legend gives each curve's value at 100 % arrived.
Standard library only; the picture is the same kind as `simulate --plot` draws
(src/sim/svg_plot.cc), zoomed on the range where policies differ.
"""
import argparse
import json
import statistics

from results_table import load

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf", "#000000"]


def curves(paths, service):
    policies = {}
    for (_, on, name), p in load(paths).items():
        if on == "paper":
            policies[name] = p
        elif on == "service" and name in service:
            policies[f"{name} (service)"] = p
    out = {}
    for name, p in policies.items():
        points = {}
        for run in p["runs"]:
            c = run["curve"]
            for x, y in zip(c["arrived_percent"], c["allocated_percent"]):
                if y is not None:
                    points.setdefault(x, []).append(y)
        out[name] = (sorted((x, statistics.median(v)) for x, v in points.items()),
                     p["allocation_at_arrived"].get("100"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--title", default="GPU allocation vs arrived GPU request")
    ap.add_argument("--out", required=True)
    ap.add_argument("--xmin", type=float, default=70)
    ap.add_argument("--xmax", type=float, default=130)
    ap.add_argument("--ymin", type=float, default=70)
    ap.add_argument("--ymax", type=float, default=100)
    ap.add_argument("--service", default="fgdm",
                    help="comma-separated policies whose service-path curve is drawn")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    w, h, left, right, top, bottom = 760, 500, 64, 190, 48, 56
    pw, ph = w - left - right, h - top - bottom

    def sx(x):
        return left + (x - a.xmin) / (a.xmax - a.xmin) * pw

    def sy(y):
        return top + ph - (y - a.ymin) / (a.ymax - a.ymin) * ph

    svg = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" '
           'font-size="12">', f'<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="26" font-size="15" font-weight="bold">{a.title}</text>']
    for x in range(int(a.xmin), int(a.xmax) + 1, 10):
        svg.append(f'<line x1="{sx(x):.1f}" y1="{top}" x2="{sx(x):.1f}" y2="{top + ph}" '
                   'stroke="#e5e5e5"/>')
        svg.append(f'<text x="{sx(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{x}</text>')
    for y in range(int(a.ymin), int(a.ymax) + 1, 5):
        svg.append(f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" '
                   'stroke="#e5e5e5"/>')
        svg.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y}</text>')
    svg.append(f'<text x="{left + pw / 2}" y="{h - 14}" text-anchor="middle">arrived GPU '
               'request (% of capacity)</text>')
    svg.append(f'<text transform="translate(16 {top + ph / 2}) rotate(-90)" '
               'text-anchor="middle">allocated GPUs (% of capacity)</text>')
    y0, y1 = max(a.xmin, a.ymin), min(a.xmax, a.ymax)
    svg.append(f'<line x1="{sx(y0):.1f}" y1="{sy(y0):.1f}" x2="{sx(y1):.1f}" y2="{sy(y1):.1f}" '
               'stroke="#999" stroke-dasharray="4 4"/>')
    data = curves(a.files, set(filter(None, a.service.split(","))))
    order = sorted(data, key=lambda n: -(data[n][1] or 0))
    for i, name in enumerate(order):
        points, at100 = data[name]
        color = COLORS[i % len(COLORS)]
        shown = [(x, y) for x, y in points if a.xmin <= x <= a.xmax and y >= a.ymin]
        if len(shown) > 5:  # hindsight has points around 100 % only: a marker
            d = " ".join(f"{'M' if k == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}"
                         for k, (x, y) in enumerate(shown))
            dash = ' stroke-dasharray="6 3"' if name.endswith("(service)") else ""
            svg.append(f'<path class="curve" d="{d}" fill="none" stroke="{color}" '
                       f'stroke-width="1.6"{dash}/>')
        elif at100 is not None:
            svg.append(f'<circle cx="{sx(100):.1f}" cy="{sy(at100):.1f}" r="4" fill="{color}"/>')
        ly = top + 14 + 18 * i
        dash = ' stroke-dasharray="5 2"' if name.endswith("(service)") else ""
        svg.append(f'<line x1="{left + pw + 12}" y1="{ly - 4}" x2="{left + pw + 32}" '
                   f'y2="{ly - 4}" stroke="{color}" stroke-width="3"{dash}/>')
        value = "" if at100 is None else f" {at100:.2f}"
        svg.append(f'<text x="{left + pw + 38}" y="{ly}">{name}{value}</text>')
    svg.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(svg) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
