#!/usr/bin/env bash
# build_limit_server.sh SHARED_DIR OUT: builds the shared limit server
# (SHARED_DIR/bench/limit-server.cpp, the bare-webhook reference the benches compare gpufair with)
# into OUT with its own build line, unless OUT is newer than the source. Used by http_filter.sh
# and load_driver.sh.
set -euo pipefail
src="$1/bench/limit-server.cpp"
out="$2"
[[ -f "$src" ]] || { echo "$(basename "$0"): $src not found (set SHARED_DIR)" >&2; exit 2; }
if [[ ! -x "$out" || "$src" -nt "$out" ]]; then
  echo "building $out" >&2
  g++ -O2 -std=c++17 "$src" -o "$out" -lsimdjson -lpthread
fi
