#!/usr/bin/env bash
# Issue 43's expired-bytes check: how much of a database of expiring keys is still on disk
# after the keys expired and one expiry-compaction cycle ran.
#
# Usage: scripts/expired_bytes.sh [OUT]   (OUT: a directory for the log, default
# target/expired-bytes)
# Knobs (environment): SERVER (target/release/augur-server), REQUESTS (10000000 SETs),
# KEYSPACE (10000000: redis-benchmark's -r, so about 63% of REQUESTS are distinct keys), TTL
# (60 seconds), VALUE (100 bytes), WAIT (seconds to sample after the load, default 300),
# PORT (7391), EXTRA (flags for the server).
#
# Starts augur-server on a fresh database, sends REQUESTS `SET key:<rand> <VALUE bytes> EX
# TTL` with redis-benchmark (-P 64, 4 clients), then samples the database's bytes on disk
# every 5 s for WAIT seconds. The engine checks for tables dense with expired values every
# `expiry_check_interval_ms` (60 s) and rewrites them; the summary prints the peak, the last
# sample and last / peak (the target: at most 5%).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/expired-bytes}
SERVER=${SERVER:-target/release/augur-server}
REQUESTS=${REQUESTS:-10000000}
KEYSPACE=${KEYSPACE:-10000000}
TTL=${TTL:-60}
VALUE=${VALUE:-100}
WAIT=${WAIT:-300}
PORT=${PORT:-7391}
EXTRA=${EXTRA:-}
DB=${DB:-/tmp/augur-expired-bytes-db}
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing (apt-get install redis-tools)" >&2; exit 2; }
[ -x "$SERVER" ] || cargo build --release -q -p augur-server
mkdir -p "$OUT"
rm -rf "$DB"
# shellcheck disable=SC2086
"$SERVER" --db "$DB" --port "$PORT" $EXTRA >"$OUT/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done
value=$(head -c "$VALUE" /dev/zero | tr '\0' 'v')
LOG="$OUT/samples.tsv"
echo -e "seconds\tbytes\tdbsize" >"$LOG"
start=$(date +%s)
sample() {
  local bytes keys
  bytes=$(du -sb "$DB" | cut -f1)
  keys=$(redis-cli -p "$PORT" DBSIZE 2>/dev/null || echo "?")
  echo -e "$(($(date +%s) - start))\t$bytes\t$keys" | tee -a "$LOG"
}
redis-benchmark -p "$PORT" -n "$REQUESTS" -r "$KEYSPACE" -P 64 -c 4 -q \
  SET "key:__rand_int__" "$value" EX "$TTL" | tr '\r' '\n' | tail -1 | sed 's/.*EX [0-9]*: //'
loaded=$(($(date +%s) - start))
echo "loaded in ${loaded}s"
end=$(($(date +%s) + WAIT))
while [ "$(date +%s)" -lt "$end" ]; do
  sample
  sleep 5
done
python3 - "$LOG" "$loaded" "$TTL" <<'PY' | tee "$OUT/summary.txt"
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n")[1:] if l]
peak = max(int(r[1]) for r in rows)
last = int(rows[-1][1])
print(f"load {sys.argv[2]} s, ttl {sys.argv[3]} s; peak {peak / 1e6:.1f} MB, "
      f"last ({rows[-1][0]} s) {last / 1e6:.1f} MB, last / peak {last / peak:.3f}")
PY
