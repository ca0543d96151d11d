#!/usr/bin/env bash
# Crash test (issue 13; RocksDB's db_crashtest.py is the model): runs `augur stress` with
# options randomized per run, SIGKILLs it at a random moment, and repeats; every run starts by
# verifying the whole key space against the expected-state oracle the killed run left
# (`<db>.expected`): an acknowledged write that was lost, a value never written or a
# resurrected delete fails the test. The database and the compaction style persist across
# all runs; the other options change every run.
#
# Usage: scripts/crash_test.sh [KILLS] [SECONDS]   (defaults 20 kills in 60 seconds)
# Env:   AUGUR (binary, built with `--features stress`; default: builds target/release/augur
#        with it), DB (default: a temp dir),
#        KEYS (20000), THREADS (4), KEEP=1 keeps the database.
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS="${1:-20}"
BUDGET="${2:-60}"
KEYS="${KEYS:-20000}"
THREADS="${THREADS:-4}"
if [ -z "${AUGUR:-}" ]; then
  # `augur stress` is behind the CLI's cargo feature `stress` (the shipped binary leaves out
  # the engine's test utilities it needs).
  cargo build --release -q -p augur-cli --features stress
  AUGUR=target/release/augur
fi
work="$(mktemp -d)"
DB="${DB:-$work/db}"
log="$work/stress.log"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# Mean life of a run before its kill; each run lives 0.2 s .. 2 x mean (uniform).
mean_ms=$(( BUDGET * 1000 / KILLS ))
[ "$mean_ms" -ge 300 ] || mean_ms=300
kills=0
verified=0
in_flight=0
start=$(date +%s)
while [ "$kills" -lt "$KILLS" ]; do
  seed=$(( (RANDOM << 16) | RANDOM ))
  "$AUGUR" --db "$DB" stress --randomize --seed "$seed" --keys "$KEYS" --threads "$THREADS" \
    --seconds 3600 >"$log" 2>&1 &
  pid=$!
  life_ms=$(( 200 + RANDOM * (2 * mean_ms - 200) / 32768 ))
  sleep "$(printf '%d.%03d' $((life_ms / 1000)) $((life_ms % 1000)))"
  if ! kill -0 "$pid" 2>/dev/null; then
    # It ended on its own: only a failure does that (it runs for an hour otherwise).
    set +e; wait "$pid"; rc=$?; set -e
    echo "run with seed $seed exited with status $rc before its kill:" >&2
    cat "$log" >&2
    exit 1
  fi
  kill -9 "$pid"
  set +e; wait "$pid" 2>/dev/null; set -e
  line=$(grep -E '^verified [0-9]+ keys' "$log" || true)
  if [ -n "$line" ]; then
    verified=$(( verified + $(echo "$line" | awk '{print $2}') ))
    in_flight=$(( in_flight + $(echo "$line" | sed -E 's/.*\(([0-9]+) writes.*/\1/') ))
  fi
  kills=$(( kills + 1 ))
done
# A last run that only verifies what the last kill left.
"$AUGUR" --db "$DB" stress --randomize --keys "$KEYS" --verify-only >"$log" 2>&1 || {
  echo "final verification failed:" >&2; cat "$log" >&2; exit 1; }
line=$(grep -E '^verified [0-9]+ keys' "$log")
verified=$(( verified + $(echo "$line" | awk '{print $2}') ))
echo "crash test: $kills kills survived, $verified keys verified against the oracle" \
  "($in_flight writes in flight at a kill, each found old or new), 0 lost, 0 wrong," \
  "$(( $(date +%s) - start )) s"
