#!/usr/bin/env bash
# run_all.sh: configure a Release build with the benchmarks, run the engine benchmark, then (if the
# gpufair binary builds) the HTTP /filter load test.
#   bench/run_all.sh                 # BUILD_DIR=/tmp/build-bench
#   BUILD_DIR=build-rel REPETITIONS=5 bench/run_all.sh
#   ENGINE_ONLY=1 bench/run_all.sh   # skip the HTTP part
# Extra arguments go to engine_bench, e.g. bench/run_all.sh --benchmark_filter='FilterPrioritize'
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-/tmp/build-bench}"
REPETITIONS="${REPETITIONS:-3}"

cmake -S "$repo" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGPUFAIR_BUILD_BENCH=ON -DGPUFAIR_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target engine_bench

echo "== engine_bench (median of $REPETITIONS; CPU time is the figure to read on a busy machine)"
"$BUILD_DIR/bench/engine_bench" --benchmark_repetitions="$REPETITIONS" \
  --benchmark_report_aggregates_only=true --benchmark_display_aggregates_only=true "$@" 2>&1 \
  | grep -v -e '_mean' -e '_stddev' -e '_cv' -e 'Library was built as DEBUG'

[[ -n "${ENGINE_ONLY:-}" ]] && exit 0
if cmake --build "$BUILD_DIR" -j"$(nproc)" --target gpufair; then
  bin="$BUILD_DIR/src/app/gpufair"
  [[ -x "$bin" ]] || bin="$(find "$BUILD_DIR" -type f -name gpufair -perm -u+x | head -n 1)"
  echo "== http_filter.sh with $bin"
  GPUFAIR_BIN="$bin" WORK_DIR="${WORK_DIR:-$BUILD_DIR/bench-http}" "$here/http_filter.sh"
else
  echo "run_all.sh: target gpufair does not build yet; HTTP benchmark skipped" >&2
  exit 1
fi
