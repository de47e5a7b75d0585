#!/usr/bin/env bash
# load_driver.sh: the load driver's matrix, cluster sizes x filter modes, one gpufair per run.
#   bench/load_driver.sh                          # BUILD_DIR=build, sizes 500 2000 5000
#   SIZES="500 2000" MODES="best" REPEAT=3 bench/load_driver.sh
#   SCALE=1 bench/load_driver.sh                  # also 5,000 nodes with 150,000 running pods
#   ALTERNATE=1 REPEAT=5 SIZES=2000 MODES=best EXTRA=--api-tls=true bench/load_driver.sh
#   LIMIT="fixed simdjson" MODES=best bench/load_driver.sh  # + the limit server, same calls per pod
# Each run prints the driver's RESULT line; the table at the end has one row per (mode, size):
# the median run by gpufair CPU per pod, and the range of CPU per pod over the runs. Knobs
# (environment): BUILD_DIR, SIZES, MODES, PODS (pods scheduled per run; default
# min(2 x nodes, 5000)), REPEAT, QUOTA (true: a quota ConfigMap gives the pods' namespace every
# GPU, so no pod borrows; false: a new user's cluster without quotas), SCALE, EXTRA (more
# load_driver flags), ALTERNATE (set: REPEAT rounds of every configuration in turn, instead of
# REPEAT runs of one configuration after another), LIMIT (limit-server modes to drive after gpufair
# at each size: the shared limit server, ../shared/bench/limit-server.cpp or $SHARED_DIR/bench/...,
# built with g++ into $BUILD_DIR/bench; its rows' CPU per pod is the limit server's). The machine's
# load average is printed before each run: on a shared machine compare rows measured back to back.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$repo/build}"
SIZES="${SIZES:-500 2000 5000}"
MODES="${MODES:-all top-3 best}"
REPEAT="${REPEAT:-1}"
QUOTA="${QUOTA:-true}"
driver="$BUILD_DIR/bench/load_driver"
if [[ ! -x "$driver" ]]; then
  echo "load_driver.sh: $driver not built: configure with -DGPUFAIR_BUILD_BENCH=ON and build" \
       "the targets load_driver and gpufair" >&2
  exit 1
fi

limit_bin=""
if [[ -n "${LIMIT:-}" ]]; then
  limit_bin="$BUILD_DIR/bench/limit-server"
  "$here/build_limit_server.sh" "${SHARED_DIR:-$repo/../shared}" "$limit_bin"
fi

# The runs to make, one line each: NODES MODE PODS [flags...].
configs=()
add() {  # add NODES MODE [flags...]
  local nodes=$1 mode=$2
  shift 2
  configs+=("$nodes $mode ${PODS:-$(( nodes * 2 < 5000 ? nodes * 2 : 5000 ))} $*")
}
for nodes in $SIZES; do
  for mode in $MODES; do add "$nodes" "$mode"; done
  for limit in ${LIMIT:-}; do
    add "$nodes" best --limit-server="$limit_bin" --limit-server-mode="$limit"
  done
done
if [[ -n "${SCALE:-}" ]]; then
  for mode in $MODES; do
    PODS=5000 add 5000 "$mode" --existing-pods=150000 --existing-gpu-pods=10000
  done
fi

runs=()  # by config: its RESULT lines
once() {  # once INDEX: one run of configs[INDEX]
  local -a c
  read -r -a c <<<"${configs[$1]}"
  echo "== nodes=${c[0]} mode=${c[1]} pods=${c[2]} ${c[*]:3} (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  local line
  line="$(nice "$driver" --nodes="${c[0]}" --pods="${c[2]}" --mode="${c[1]}" --quota="$QUOTA" \
          ${EXTRA:-} "${c[@]:3}" | grep '^RESULT')"
  echo "$line"
  runs[$1]+="$line"$'\n'
}
if [[ -n "${ALTERNATE:-}" ]]; then
  # Round after round, each configuration once a round: a slow spell of a shared machine falls on
  # every configuration alike, not on one.
  for ((r = 0; r < REPEAT; r++)); do
    for i in "${!configs[@]}"; do once "$i"; done
  done
else
  for i in "${!configs[@]}"; do
    for ((r = 0; r < REPEAT; r++)); do once "$i"; done
  done
fi

results=()  # by config: its median run by CPU per pod, then the range "min–max"
for i in "${!configs[@]}"; do
  sorted="$(printf '%s' "${runs[$i]}" |
            awk '{for (f = 1; f <= NF; f++) if ($f ~ /^cpu_us_per_pod=/) {split($f, a, "="); print a[2], $0}}' |
            sort -n)"
  n="$(wc -l <<<"$sorted")"
  median="$(awk -v n="$n" 'NR == int((n + 1) / 2) {$1 = ""; print}' <<<"$sorted")"
  range="$(awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "–" hi}' <<<"$sorted")"
  results+=("$median cpu_range=$range")
done

field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2}'; }
echo
echo "| extender | mode | nodes | running pods | pods | pods/s | extender p50 (µs) | p99 (µs) | CPU/pod (µs) | CPU/pod min–max | RSS (MiB) | /prioritize calls |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
for line in "${results[@]}"; do
  echo "| $(field "$line" extender) | $(field "$line" mode) | $(field "$line" nodes) | $(field "$line" existing_pods) |" \
       "$(field "$line" pods) | $(field "$line" pods_per_s) | $(field "$line" extender_us_p50) |" \
       "$(field "$line" extender_us_p99) | $(field "$line" cpu_us_per_pod) |" \
       "$(field "$line" cpu_range) | $(field "$line" rss_mib) | $(field "$line" prioritized) |"
done
