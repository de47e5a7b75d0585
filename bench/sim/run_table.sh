#!/usr/bin/env bash
# The issue-14 table of bench/RESULTS.md: every policy on every shared openb pod list and every
# derived family instance (families.py --instances 3 --seed 1), through the paper protocol and
# the service path (what `serve` runs); one JSON per (list, path, policy, seed), then the tables
# (results_table.py, which merges the seeds) and the plots (plot_json.py).
#
#   bench/sim/run_table.sh [GPUFAIR_BIN]
#   LISTS="default restricted-1" POLICIES=fgd,fgdm PATHS=service bench/sim/run_table.sh
#
# Env: OUT (default /tmp/gpufair-table: JSON in $OUT/json, families in $OUT/families, tables in
#      $OUT/table.md), TRACE_DIR (default ../shared/traces/openb beside the repo), LISTS (default:
#      the 15 shared lists, then the 12 family instances), POLICIES (default: every policy, then
#      hindsight, then the default fgdm), PATHS (default "service paper"), PAPER_SEEDS (default
#      42-51), SERVICE_SEEDS (default 42-44), DEFAULT_BIN (the binary for fgdm's rows, default
#      GPUFAIR_BIN), THREADS (default 1), NICE (default 10).
# hindsight is offline: paper path only. A JSON file that exists is kept, so an interrupted batch
# resumes where it stopped (delete a file to run it again).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
BIN="${1:-${GPUFAIR_BIN:-$repo/build-rel/src/app/gpufair}}"
DEFAULT_BIN="${DEFAULT_BIN:-$BIN}"
TRACE_DIR="${TRACE_DIR:-$repo/../shared/traces/openb}"
OUT="${OUT:-/tmp/gpufair-table}"
SHARED="default cpu0 cpu037 cpu050 cpu072 cpu100 cpu200 cpu235 cpu250 cpu300 gpushare20"
SHARED+=" gpushare40 gpushare60 gpushare80 gpushare100"
FAMILIES="restricted-1 restricted-2 restricted-3 multigpu-1 multigpu-2 multigpu-3"
FAMILIES+=" mix-1 mix-2 mix-3 cpuheavy-1 cpuheavy-2 cpuheavy-3"
LISTS="${LISTS:-$SHARED $FAMILIES}"
ALL=random,dotprod,clustering,packing,bestfit,fgd,fgdplus,blockfit,binpack,spread,hindsight,fgdm
POLICIES="${POLICIES:-$ALL}"
PATHS="${PATHS:-service paper}"
PAPER_SEEDS="${PAPER_SEEDS:-42-51}"
SERVICE_SEEDS="${SERVICE_SEEDS:-42-44}"
THREADS="${THREADS:-1}"
NICE="${NICE:-10}"

for b in "$BIN" "$DEFAULT_BIN"; do
  [[ -x "$b" ]] || { echo "no gpufair binary at $b (build it, or pass its path)" >&2; exit 2; }
done
nodes="$TRACE_DIR/openb_node_list_gpu_node.csv"
[[ -f "$nodes" ]] || { echo "no openb trace in $TRACE_DIR" >&2; exit 2; }
mkdir -p "$OUT/json"
missing=0  # (re)written when one is missing: the same arguments give the same bytes
for f in $FAMILIES; do [[ -f "$OUT/families/$f.csv" ]] || missing=1; done
if ((missing)); then
  python3 "$here/families.py" --nodes "$nodes" --pods "$TRACE_DIR/openb_pod_list_default.csv" \
    --out "$OUT/families" --instances 3 --seed 1 > /dev/null
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Seed by seed (one JSON each), so that each pass covers every cell: cut short, the batch still
# gives the whole table on fewer seeds.
seed_list() {  # "42-44" or "42,45" -> 42 43 44
  local part out=()
  for part in ${1//,/ }; do
    if [[ "$part" == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
  done
  echo "${out[@]}"
}
paper_seeds=($(seed_list "$PAPER_SEEDS"))
service_seeds=($(seed_list "$SERVICE_SEEDS"))
passes=$((${#paper_seeds[@]} > ${#service_seeds[@]} ? ${#paper_seeds[@]} : ${#service_seeds[@]}))
for ((i = 0; i < passes; ++i)); do
  for path in $PATHS; do
    seed="${service_seeds[i]:-}"
    [[ "$path" == paper ]] && seed="${paper_seeds[i]:-}"
    [[ -n "$seed" ]] || continue
    for policy in ${POLICIES//,/ }; do
      [[ "$policy" == hindsight && "$path" != paper ]] && continue
      bin="$BIN"
      [[ "$policy" == fgdm ]] && bin="$DEFAULT_BIN"
      for list in $LISTS; do
        pods="$TRACE_DIR/openb_pod_list_$list.csv"
        [[ -f "$pods" ]] || pods="$OUT/families/$list.csv"
        json="$OUT/json/${list}__${path}__${policy}__s${seed}.json"
        [[ -f "$json" ]] && continue
        /usr/bin/time -f "$list $path $policy $seed: %e s wall, %U s user, %M KB max RSS" \
          nice -n "$NICE" "$bin" simulate --quiet --no-fragmentation --nodes "$nodes" \
            --pods "$pods" --policy "$policy" --path "$path" --seeds "$seed" \
            --threads "$THREADS" --json "$json.tmp"
        mv "$json.tmp" "$json"
      done
    done
  done
done
python3 "$here/results_table.py" "$OUT"/json/*.json > "$OUT/table.md"
for list in default restricted-1; do
  ls "$OUT/json/${list}"__*.json > /dev/null 2>&1 || continue
  python3 "$here/plot_json.py" --out "$OUT/openb-$list.svg" \
    --title "openb $list: GPU allocation, paper protocol and service path (median over seeds)" \
    "$OUT/json/${list}"__*.json
done
echo "tables: $OUT/table.md, plots: $OUT/openb-*.svg"
