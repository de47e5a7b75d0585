#!/usr/bin/env bash
# http_filter.sh: HTTP load on `gpufair serve` POST /filter, next to the limit server (the local upper
# bound for an extender webhook: Boost.Beast, 2 threads, same JSON work without policy) on the same
# machine, same body, same wrk settings. Loopback only; every process it starts is killed on exit.
#
#   bench/http_filter.sh [GPUFAIR_BIN]
#
# Environment (defaults in brackets):
#   GPUFAIR_BIN    the gpufair binary [first of: $1, build/src/app/gpufair, build/gpufair,
#                  /tmp/build-bench/src/app/gpufair]
#   SHARED_DIR     directory holding bench/limit-server.cpp [<repo>/../shared]
#   WORK_DIR       where the limit server binary, cluster file, body and logs go [<repo>/build/bench-http]
#   NODES [1000]  PODS_PER_NODE [20]  GPUS [1] (GPUs the /filter pod requests)
#   DURATION [10] seconds per wrk run   WARMUP [2] seconds   THREADS [1]   CONNECTIONS [16]
#   LIMIT_MODES ["simdjson fixed nlohmann"]  limit-server modes to measure ("simdjson" is the reference)
#   STARTUP_TIMEOUT [120] seconds to wait for the servers to answer
#
# Output: the wrk report of each run, then one table: requests/s, latency p50/p90/p99, non-2xx and
# socket errors per target, and gpufair's requests/s as a fraction of each limit-server mode.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

GPUFAIR_BIN="${1:-${GPUFAIR_BIN:-}}"
if [[ -z "$GPUFAIR_BIN" ]]; then
  for candidate in "$repo/build/src/app/gpufair" "$repo/build/gpufair" /tmp/build-bench/src/app/gpufair; do
    if [[ -x "$candidate" ]]; then GPUFAIR_BIN="$candidate"; break; fi
  done
fi
if [[ -z "$GPUFAIR_BIN" || ! -x "$GPUFAIR_BIN" ]]; then
  echo "http_filter.sh: no gpufair binary; pass its path or set GPUFAIR_BIN (build target 'gpufair')" >&2
  exit 2
fi
SHARED_DIR="${SHARED_DIR:-$repo/../shared}"
WORK_DIR="${WORK_DIR:-$repo/build/bench-http}"
NODES="${NODES:-1000}"
PODS_PER_NODE="${PODS_PER_NODE:-20}"
GPUS="${GPUS:-1}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-2}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-16}"
LIMIT_MODES="${LIMIT_MODES:-simdjson fixed nlohmann}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-120}"

for tool in wrk curl python3 g++; do
  command -v "$tool" >/dev/null || { echo "http_filter.sh: $tool is not installed" >&2; exit 2; }
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

# --- limit server ------------------------------------------------------------------------------
limit_bin="$WORK_DIR/limit-server"
"$here/build_limit_server.sh" "$SHARED_DIR" "$limit_bin"

# --- inputs ----------------------------------------------------------------------------------
cluster="$WORK_DIR/cluster-${NODES}n-${PODS_PER_NODE}p.yaml"
body="$WORK_DIR/filter-${NODES}n-${GPUS}gpu.json"
[[ -f "$cluster" && "$cluster" -nt "$here/gen_cluster.py" ]] || python3 "$here/gen_cluster.py" --nodes "$NODES" --pods-per-node "$PODS_PER_NODE" --cluster "$cluster"
[[ -f "$body" && "$body" -nt "$here/gen_cluster.py" ]] || python3 "$here/gen_cluster.py" --nodes "$NODES" --gpus "$GPUS" --body "$body"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# post URL OUT: POSTs the body, writes the response to OUT, prints the HTTP status ("000": no answer).
post() {
  curl -s -o "$2" -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
    --data-binary "@$body" "$1" 2>/dev/null || true
}

# wait_ready NAME PID URL
wait_ready() {
  local name="$1" pid="$2" url="$3" code deadline=$((SECONDS + STARTUP_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "http_filter.sh: $name exited before answering; its log:" >&2
      tail -n 30 "$WORK_DIR/$name.log" >&2 || true
      exit 1
    fi
    code="$(post "$url" "$WORK_DIR/$name.response.json")"
    if [[ "$code" == 2* ]]; then
      echo "$name ready after $((SECONDS - deadline + STARTUP_TIMEOUT)) s: HTTP $code, $(summarize "$WORK_DIR/$name.response.json")" >&2
      return 0
    fi
    sleep 0.2
  done
  echo "http_filter.sh: $name did not answer 2xx within ${STARTUP_TIMEOUT}s (last HTTP $code); log:" >&2
  tail -n 30 "$WORK_DIR/$name.log" >&2 || true
  exit 1
}

summarize() {
  python3 - "$1" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
try:
    r = json.loads(raw)
except ValueError:
    print(f"{len(raw)} bytes, not JSON"); sys.exit()
def get(key):
    return next((v for k, v in r.items() if k.lower() == key.lower()), None)
names, failed, unres, err = get("NodeNames"), get("FailedNodes"), get("FailedAndUnresolvableNodes"), get("Error")
print(f"{len(raw)} bytes, {len(names or [])} feasible, {len(failed or {})} failed, "
      f"{len(unres or {})} unresolvable, Error={err!r}")
PY
}

# --- servers ----------------------------------------------------------------------------------
gpufair_port="$(free_port)"
echo "starting $GPUFAIR_BIN serve --cluster $cluster --listen 127.0.0.1:$gpufair_port" >&2
"$GPUFAIR_BIN" serve --cluster "$cluster" --listen "127.0.0.1:$gpufair_port" >"$WORK_DIR/gpufair.log" 2>&1 &
pids+=($!)
gpufair_pid=$!
targets=("gpufair|http://127.0.0.1:$gpufair_port/filter")
started=$SECONDS
wait_ready gpufair "$gpufair_pid" "http://127.0.0.1:$gpufair_port/filter"
echo "gpufair load + first answer: $((SECONDS - started)) s" >&2

for mode in $LIMIT_MODES; do
  port="$(free_port)"
  "$limit_bin" "$port" "$mode" >"$WORK_DIR/limit-$mode.log" 2>&1 &
  pids+=($!)
  wait_ready "limit-$mode" "$!" "http://127.0.0.1:$port/filter"
  targets+=("limit-$mode|http://127.0.0.1:$port/filter")
done

# --- load -------------------------------------------------------------------------------------
echo "wrk: $THREADS thread(s), $CONNECTIONS connections, ${DURATION}s per target (after ${WARMUP}s warm-up);" \
     "body $(wc -c <"$body") bytes, $NODES NodeNames, ${GPUS}-GPU pod; $(nproc) CPUs shared by wrk and the server" >&2
declare -A result
for t in "${targets[@]}"; do
  name="${t%%|*}" url="${t#*|}"
  if ((WARMUP > 0)); then
    BODY_FILE="$body" timeout $((WARMUP + 30)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${WARMUP}s" \
      -s "$here/filter.lua" "$url" >/dev/null 2>&1 || true
  fi
  echo "=== $name ($url)"
  out="$WORK_DIR/wrk-$name.txt"
  BODY_FILE="$body" timeout $((DURATION + 60)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" \
    --latency -s "$here/filter.lua" "$url" >"$out" 2>&1 || true
  grep -v '^RESULT' "$out" || true
  result[$name]="$(grep '^RESULT' "$out" | tail -n 1 || true)"
  if [[ "$name" == gpufair ]]; then
    echo "gpufair RSS after load: $(ps -o rss= -p "$gpufair_pid" 2>/dev/null | awk '{printf "%.0f MiB", $1/1024}')"
  fi
done

field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"${result[$1]:-}"; }
echo
printf '%-16s %10s %9s %9s %9s %8s %7s\n' target "req/s" "p50 ms" "p90 ms" "p99 ms" non-2xx errors
for t in "${targets[@]}"; do
  name="${t%%|*}"
  if [[ -z "${result[$name]:-}" ]]; then printf '%-16s %10s\n' "$name" "(no result; see $WORK_DIR/wrk-$name.txt)"; continue; fi
  printf '%-16s %10s %9s %9s %9s %8s %7s\n' "$name" "$(field "$name" rps)" "$(field "$name" p50_ms)" \
    "$(field "$name" p90_ms)" "$(field "$name" p99_ms)" "$(field "$name" non2xx)" "$(field "$name" errors)"
done
g="$(field gpufair rps)"
for mode in $LIMIT_MODES; do
  l="$(field "limit-$mode" rps)"
  if [[ -n "$g" && -n "$l" ]]; then
    awk -v g="$g" -v l="$l" -v m="$mode" 'BEGIN { printf "ratio gpufair / limit-%s: %.3f\n", m, (l > 0 ? g / l : 0) }'
  fi
done
echo "logs and wrk reports: $WORK_DIR"
