#!/usr/bin/env bash
# Scheduling quality on the Alibaba openb trace: `gpufair simulate` for every policy and seed on
# each pod list, one JSON per pod list, the plot of the default one, and the tables of RESULTS.md.
#
#   bench/sim/run_openb.sh [GPUFAIR_BIN]
#   TRACES="default gpushare40" POLICIES=fgd,bestfit SEEDS=42-44 bench/sim/run_openb.sh
#
# Env: TRACE_DIR (default ../shared/traces/openb beside the repo), OUT (default /tmp/gpufair-sim),
#      POLICIES, SEEDS (default 42-51, the paper's), TRACES, THREADS (default 0: all cores).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
BIN="${1:-${GPUFAIR_BIN:-$repo/build/src/app/gpufair}}"
TRACE_DIR="${TRACE_DIR:-$repo/../shared/traces/openb}"
OUT="${OUT:-/tmp/gpufair-sim}"
POLICIES="${POLICIES:-random,dotprod,clustering,packing,bestfit,fgd,fgdplus,blockfit,binpack,spread}"
SEEDS="${SEEDS:-42-51}"
TRACES="${TRACES:-default cpu050 cpu100 cpu200 cpu250 gpushare20 gpushare40 gpushare60 gpushare80 gpushare100}"
THREADS="${THREADS:-0}"

[[ -x "$BIN" ]] || { echo "no gpufair binary at $BIN (build it, or pass its path)" >&2; exit 2; }
[[ -f "$TRACE_DIR/openb_node_list_gpu_node.csv" ]] || { echo "no openb trace in $TRACE_DIR" >&2; exit 2; }
mkdir -p "$OUT"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $TRACES; do
  plot=()
  if [[ "$t" == default ]]; then
    plot=(--plot "$OUT/openb-default.svg" --title "openb default trace, 1,213 nodes / 6,212 GPUs (median of seeds $SEEDS)")
  fi
  echo "== $t"
  /usr/bin/time -f "$t: %e s wall, %U s user, %M KB max RSS" \
    "$BIN" simulate --quiet \
      --nodes "$TRACE_DIR/openb_node_list_gpu_node.csv" \
      --pods "$TRACE_DIR/openb_pod_list_$t.csv" \
      --policy "$POLICIES" --seeds "$SEEDS" --threads "$THREADS" \
      --json "$OUT/$t.json" "${plot[@]}"
done
python3 "$here/results_table.py" "$OUT"/*.json > "$OUT/tables.md"
echo "tables: $OUT/tables.md"
