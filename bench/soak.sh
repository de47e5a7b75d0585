#!/usr/bin/env bash
# soak.sh: sustained load on `gpufair serve` (not run in CI). For DURATION seconds, at the same time:
#   - wrk POSTs /filter        (a 1-GPU pod against all NODES node names),
#   - wrk POSTs /prioritize    (the same ExtenderArgs),
#   - a bind loop offers fresh CPU-only pods to /filter and binds each to the node it was given,
#     BIND_RATE per second (each bind changes the mirror and publishes a new snapshot under the
#     readers' feet).
# It samples gpufair's resident memory every SAMPLE seconds and prints throughput, latency
# percentiles, errors (wrk socket errors, non-2xx answers, failed binds: all must be 0) and RSS at
# start (after the warm-up) and end. Exits 1 when any error was seen. Loopback only; every process it
# starts is killed on exit.
#
#   bench/soak.sh [GPUFAIR_BIN]
#
# Environment (defaults in brackets):
#   GPUFAIR_BIN   the gpufair binary [$1, else build/src/app/gpufair, build-dev/src/app/gpufair]
#   WORK_DIR      cluster file, bodies, logs [<repo>/build/bench-soak]
#   DURATION [600] seconds of load   WARMUP [10] seconds before the start RSS   SAMPLE [10] seconds
#   NODES [1000]  PODS_PER_NODE [20]  THREADS [1] per wrk  CONNECTIONS [8] per wrk  BIND_RATE [5]
#   (BIND_RATE=0: no binds, a control run that tells the memory of added pods from the requests')
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

GPUFAIR_BIN="${1:-${GPUFAIR_BIN:-}}"
if [[ -z "$GPUFAIR_BIN" ]]; then
  for candidate in "$repo/build/src/app/gpufair" "$repo/build-dev/src/app/gpufair"; do
    if [[ -x "$candidate" ]]; then GPUFAIR_BIN="$candidate"; break; fi
  done
fi
if [[ -z "$GPUFAIR_BIN" || ! -x "$GPUFAIR_BIN" ]]; then
  echo "soak.sh: no gpufair binary; pass its path or set GPUFAIR_BIN (build target 'gpufair')" >&2
  exit 2
fi
WORK_DIR="${WORK_DIR:-$repo/build/bench-soak}"
DURATION="${DURATION:-600}"
WARMUP="${WARMUP:-10}"
SAMPLE="${SAMPLE:-10}"
NODES="${NODES:-1000}"
PODS_PER_NODE="${PODS_PER_NODE:-20}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-8}"
BIND_RATE="${BIND_RATE:-5}"

for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "soak.sh: $tool is not installed" >&2; exit 2; }
done
mkdir -p "$WORK_DIR"
WORK_DIR="$(cd "$WORK_DIR" && pwd)"

pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cluster="$WORK_DIR/cluster-${NODES}n-${PODS_PER_NODE}p.yaml"
body="$WORK_DIR/filter-${NODES}n-1gpu.json"
[[ -f "$cluster" && "$cluster" -nt "$here/gen_cluster.py" ]] ||
  python3 "$here/gen_cluster.py" --nodes "$NODES" --pods-per-node "$PODS_PER_NODE" --cluster "$cluster"
[[ -f "$body" && "$body" -nt "$here/gen_cluster.py" ]] ||
  python3 "$here/gen_cluster.py" --nodes "$NODES" --gpus 1 --body "$body"
# The bind loop offers each pod to a few nodes (as kube-scheduler does after its own filtering).
bind_nodes="$(python3 -c '
import json, sys
names = json.load(open(sys.argv[1]))["NodeNames"]
print(json.dumps(names[:: max(1, len(names) // 8)][:8]))' "$body")"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
base="http://127.0.0.1:$port"
"$GPUFAIR_BIN" serve --cluster "$cluster" --listen "127.0.0.1:$port" --log-level warn \
  >"$WORK_DIR/gpufair.log" 2>&1 &
pids+=($!)
gpufair_pid=$!
deadline=$((SECONDS + 300))
until curl -sf -o /dev/null "$base/readyz"; do
  if ! kill -0 "$gpufair_pid" 2>/dev/null || ((SECONDS > deadline)); then
    echo "soak.sh: gpufair did not become ready; its log:" >&2
    tail -n 30 "$WORK_DIR/gpufair.log" >&2
    exit 1
  fi
  sleep 0.5
done

rss_mib() { ps -o rss= -p "$gpufair_pid" | awk '{printf "%.1f", $1 / 1024}'; }

# Warm-up: the io threads' parsers and buffers reach their working size.
BODY_FILE="$body" wrk -t"$THREADS" -c"$CONNECTIONS" -d"${WARMUP}s" -s "$here/filter.lua" \
  "$base/filter" >/dev/null 2>&1 || true
rss_start="$(rss_mib)"
echo "gpufair $(basename "$GPUFAIR_BIN") pid $gpufair_pid: $NODES nodes, $((NODES * PODS_PER_NODE)) pods;" \
  "RSS after ${WARMUP}s warm-up: $rss_start MiB" >&2
echo "load: ${DURATION}s of wrk /filter and wrk /prioritize (each -t$THREADS -c$CONNECTIONS) and" \
  "$BIND_RATE binds/s; $(nproc) CPUs shared by everything" >&2

# bind_loop: offer a fresh CPU-only pod to /filter, bind it to the first feasible node; counts
# successes and failures (a non-200 answer, no feasible node, or a non-empty Error).
bind_loop() {
  local i=0 ok=0 failed=0 pod node answer period
  if [[ "$BIND_RATE" == 0 ]]; then  # the control run: request load only, the mirror unchanged
    sleep "$DURATION"
    echo "BINDS ok=0 failed=0" >"$WORK_DIR/binds.txt"
    return
  fi
  period="$(awk -v r="$BIND_RATE" 'BEGIN { printf "%.3f", 1 / r }')"
  local end=$((SECONDS + DURATION))
  while ((SECONDS < end)); do
    i=$((i + 1))
    pod="{\"metadata\":{\"name\":\"soak-$i\",\"namespace\":\"research\",\"uid\":\"soak-uid-$i\"},\"spec\":{\"schedulerName\":\"gpufair\",\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]},\"status\":{\"phase\":\"Pending\"}}"
    answer="$(curl -s --max-time 10 -H 'Content-Type: application/json' \
      -d "{\"Pod\":$pod,\"NodeNames\":$bind_nodes,\"Nodes\":null}" "$base/filter" || true)"
    node="$(sed -n 's/.*"NodeNames":\["\([^"]*\)".*/\1/p' <<<"$answer")"
    if [[ -z "$node" ]]; then
      failed=$((failed + 1))
      echo "filter soak-$i: $answer" >>"$WORK_DIR/bind-errors.log"
    else
      answer="$(curl -s --max-time 10 -H 'Content-Type: application/json' \
        -d "{\"PodName\":\"soak-$i\",\"PodNamespace\":\"research\",\"PodUID\":\"soak-uid-$i\",\"Node\":\"$node\"}" \
        "$base/bind" || true)"
      if [[ "$answer" == '{"Error":""}' ]]; then
        ok=$((ok + 1))
      else
        failed=$((failed + 1))
        echo "bind soak-$i to $node: $answer" >>"$WORK_DIR/bind-errors.log"
      fi
    fi
    sleep "$period"
  done
  echo "BINDS ok=$ok failed=$failed" >"$WORK_DIR/binds.txt"
}

rm -f "$WORK_DIR/bind-errors.log" "$WORK_DIR/binds.txt" "$WORK_DIR/rss.txt"
for verb in filter prioritize; do
  BODY_FILE="$body" timeout $((DURATION + 60)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" \
    --latency -s "$here/filter.lua" "$base/$verb" >"$WORK_DIR/wrk-$verb.txt" 2>&1 &
  pids+=($!)
done
bind_loop &
pids+=($!)
bind_pid=$!
started=$SECONDS
while ((SECONDS - started < DURATION)); do
  sleep "$SAMPLE"
  echo "$((SECONDS - started)) $(rss_mib)" >>"$WORK_DIR/rss.txt"
done
wait "$bind_pid" || true
for pid in "${pids[@]:1}"; do wait "$pid" 2>/dev/null || true; done
rss_end="$(rss_mib)"
rss_max="$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$WORK_DIR/rss.txt")"
pods_now="$(curl -s "$base/debug/snapshot" | python3 -c '
import json, sys
print(sum(len(n.get("pods", [])) for n in json.load(sys.stdin).get("nodes", [])))' || echo '?')"

field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$WORK_DIR/wrk-$1.txt" | tail -n 1; }
errors=0
echo
printf '%-11s %9s %9s %9s %9s %9s %8s %7s\n' verb requests "req/s" "p50 ms" "p99 ms" "max ms" non-2xx errors
for verb in filter prioritize; do
  if ! grep -q '^RESULT' "$WORK_DIR/wrk-$verb.txt"; then
    echo "$verb: no wrk result; see $WORK_DIR/wrk-$verb.txt"
    errors=$((errors + 1))
    continue
  fi
  printf '%-11s %9s %9s %9s %9s %9s %8s %7s\n' "$verb" "$(field "$verb" requests)" \
    "$(field "$verb" rps)" "$(field "$verb" p50_ms)" "$(field "$verb" p99_ms)" \
    "$(field "$verb" max_ms)" "$(field "$verb" non2xx)" "$(field "$verb" errors)"
  errors=$((errors + $(field "$verb" non2xx) + $(field "$verb" errors)))
done
binds="$(cat "$WORK_DIR/binds.txt" 2>/dev/null || echo 'BINDS ok=0 failed=?')"
echo "binds: ${binds#BINDS }   (bound pods on nodes now: $pods_now)"
failed_binds="$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' <<<"$binds")"
errors=$((errors + ${failed_binds:-1}))
echo "RSS MiB: start $rss_start, end $rss_end, max $rss_max (samples every ${SAMPLE}s: $WORK_DIR/rss.txt)"
echo "errors: $errors   logs: $WORK_DIR"
((errors == 0))
