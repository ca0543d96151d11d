#!/usr/bin/env bash
# Server CPU per request of one redis-benchmark test, for A/B runs of augur-server builds:
# the process's user+system time is steadier than requests per second on a busy 2-core
# machine (it counts the server's background flushes and compactions too).
#
# Usage: scripts/server_cpu_ab.sh BIN [BIN...]   (each an augur-server binary)
# Knobs: TEST (incr; a redis-benchmark -t name), REQUESTS (3000000), KEYS (5000000 keys
#        key:%012d loaded first, as scripts/server_bench.py loads them), ROUNDS (2: the
#        binaries alternate), RUNS (2 measured runs per server start), PORT (6393).
# Prints one line per run: binary, test, server CPU µs per request, wall kreq/s.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=${TEST:-incr} REQUESTS=${REQUESTS:-3000000} KEYS=${KEYS:-5000000}
ROUNDS=${ROUNDS:-2} RUNS=${RUNS:-2} PORT=${PORT:-6393}
DB=${DB:-/dev/shm/augur-server-cpu-ab}
. scripts/lib/servers.sh  # need, wait_port
need redis-benchmark redis-tools
need redis-cli redis-tools
RT=()
chrt -f 50 true 2>/dev/null && RT=(chrt -f 50)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

for _ in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    rm -rf "$DB"
    "$bin" --db "$DB" --port "$PORT" --sync everysec >/dev/null 2>&1 &
    pid=$!
    wait_port "$PORT"
    python3 -c "import sys; sys.path.insert(0, 'scripts'); import server_bench as s; s.load($PORT, $KEYS)"
    for _ in $(seq "$RUNS"); do
      c0=$(cpu_ticks "$pid"); t0=$(date +%s.%N)
      "${RT[@]}" redis-benchmark -p "$PORT" -t "$TEST" -n "$REQUESTS" -r 10000000 -c 50 -P 16 \
        -d 100 -q >/dev/null 2>&1
      c1=$(cpu_ticks "$pid"); t1=$(date +%s.%N)
      python3 -c "t = $(getconf CLK_TCK); print('$bin $TEST cpu_us_per_req %.3f wall_kreq_s %.0f' % (($c1 - $c0) / t * 1e6 / $REQUESTS, $REQUESTS / ($t1 - $t0) / 1000))"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
rm -rf "$DB"
