#!/usr/bin/env bash
# load_driver.sh: the load driver's matrix, cluster sizes x filter modes, one gpufair per run.
#   bench/load_driver.sh                          # BUILD_DIR=build, sizes 500 2000 5000
#   SIZES="500 2000" MODES="best" REPEAT=3 bench/load_driver.sh
#   SCALE=1 bench/load_driver.sh                  # also 5,000 nodes with 150,000 running pods
#   LIMIT="fixed simdjson" MODES=best bench/load_driver.sh  # + the limit server, same calls per pod
# Each run prints the driver's RESULT line; the table at the end has one row per (mode, size):
# the median run by gpufair CPU per pod. Knobs (environment): BUILD_DIR, SIZES, MODES, PODS (pods
# scheduled per run; default min(2 x nodes, 5000)), REPEAT, QUOTA (true: a quota ConfigMap gives
# the pods' namespace every GPU, so no pod borrows; false: a new user's cluster without quotas),
# SCALE, EXTRA (more load_driver flags), LIMIT (limit-server modes to drive after gpufair at each
# size: the shared limit server, ../shared/bench/limit-server.cpp or $SHARED_DIR/bench/..., built
# with g++ into $BUILD_DIR/bench; its rows' CPU per pod is the limit server's). The machine's load
# average is printed before each run: on a shared machine compare rows measured back to back.
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

results=()
run() {  # run NODES MODE [flags...]
  local nodes=$1 mode=$2
  shift 2
  local pods="${PODS:-$(( nodes * 2 < 5000 ? nodes * 2 : 5000 ))}"
  local best=""
  local lines=()
  for ((r = 0; r < REPEAT; r++)); do
    echo "== nodes=$nodes mode=$mode pods=$pods $* (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    local line
    line="$(nice "$driver" --nodes="$nodes" --pods="$pods" --mode="$mode" --quota="$QUOTA" \
            ${EXTRA:-} "$@" | grep '^RESULT')"
    echo "$line"
    lines+=("$line")
  done
  # The median run by CPU per pod.
  best="$(printf '%s\n' "${lines[@]}" |
          awk '{for (i = 1; i <= NF; i++) if ($i ~ /^cpu_us_per_pod=/) {split($i, a, "="); print a[2], $0}}' |
          sort -n | awk -v n="${#lines[@]}" 'NR == int((n + 1) / 2) {$1 = ""; print}')"
  results+=("$best")
}

for nodes in $SIZES; do
  for mode in $MODES; do run "$nodes" "$mode"; done
  for limit in ${LIMIT:-}; do
    run "$nodes" best --limit-server="$limit_bin" --limit-server-mode="$limit"
  done
done
if [[ -n "${SCALE:-}" ]]; then
  for mode in $MODES; do
    PODS=5000 run 5000 "$mode" --existing-pods=150000 --existing-gpu-pods=10000
  done
fi

field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2}'; }
echo
echo "| extender | mode | nodes | running pods | pods | pods/s | extender p50 (µs) | p99 (µs) | CPU/pod (µs) | RSS (MiB) | /prioritize calls |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for line in "${results[@]}"; do
  echo "| $(field "$line" extender) | $(field "$line" mode) | $(field "$line" nodes) | $(field "$line" existing_pods) |" \
       "$(field "$line" pods) | $(field "$line" pods_per_s) | $(field "$line" extender_us_p50) |" \
       "$(field "$line" extender_us_p99) | $(field "$line" cpu_us_per_pod) |" \
       "$(field "$line" rss_mib) | $(field "$line" prioritized) |"
done
