#!/usr/bin/env bash
# redis-benchmark's default suite against augur-server and redis-server in the same run
# (issue 43): every test of the suite whose command augur-server supports runs to the end;
# the others are listed as skipped, with the command that is missing (redis-benchmark stops
# at the first error reply, so an unsupported test cannot simply be run and ignored).
#
# Usage: scripts/redis_benchmark_suite.sh [OUT]   (OUT: a directory, default
# target/redis-benchmark-suite; it gets augur.csv, redis.csv and summary.md)
# Knobs (environment): AUGUR_SERVER (default target/release/augur-server, built when
# missing), REQUESTS (100000), PIPELINE (1), CLIENTS (50), REALTIME=1 (servers and the
# benchmark under `chrt -f 50`: steadier ratios on a busy machine; root only).
# Needs redis-server and redis-benchmark (apt-get install redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/redis-benchmark-suite}
AUGUR_SERVER=${AUGUR_SERVER:-target/release/augur-server}
REQUESTS=${REQUESTS:-100000}
PIPELINE=${PIPELINE:-1}
CLIENTS=${CLIENTS:-50}
AUGUR_PORT=${AUGUR_PORT:-6396}
REDIS_PORT=${REDIS_PORT:-6397}
RUN=()
[ "${REALTIME:-0}" = 1 ] && RUN=(chrt -f 50)
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install redis-server redis-tools)" >&2; exit 1; }
done
[ -x "$AUGUR_SERVER" ] || cargo build --release -q -p augur-server
mkdir -p "$OUT"
WORK=$(mktemp -d)
cleanup() {
  redis-cli -p "$AUGUR_PORT" shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# The default suite's tests (redis-benchmark 7.0, in its order) and the commands each sends.
TESTS="ping_inline:PING ping_mbulk:PING set:SET get:GET incr:INCR lpush:LPUSH rpush:RPUSH
lpop:LPOP rpop:RPOP sadd:SADD hset:HSET spop:SPOP zadd:ZADD zpopmin:ZPOPMIN
lrange_100:LPUSH,LRANGE lrange_300:LPUSH,LRANGE lrange_500:LPUSH,LRANGE
lrange_600:LPUSH,LRANGE mset:MSET"

"${RUN[@]}" "$AUGUR_SERVER" --db "$WORK/augur" --port "$AUGUR_PORT" --sync everysec \
  >"$WORK/augur.log" 2>&1 &
"${RUN[@]}" redis-server --port "$REDIS_PORT" --dir "$WORK" \
  --appendonly yes --appendfsync everysec --save "" --daemonize no \
  --logfile "$WORK/redis.log" &
for port in "$AUGUR_PORT" "$REDIS_PORT"; do
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
    sleep 0.1
  done
done

supported=()
skipped=()
for entry in $TESTS; do
  test=${entry%%:*}
  missing=""
  IFS=, read -r -a cmds <<<"${entry#*:}"
  for cmd in "${cmds[@]}"; do
    # COMMAND INFO answers a nil for a command the server does not know.
    if [ -z "$(redis-cli -p "$AUGUR_PORT" --no-raw command info "$cmd" | grep -v '(nil)' | head -1)" ]; then
      missing="$missing $cmd"
    fi
  done
  if [ -z "$missing" ]; then supported+=("$test"); else skipped+=("$test (no$missing)"); fi
done
list=$(IFS=,; echo "${supported[*]}")

for server in augur redis; do
  port=$AUGUR_PORT
  [ "$server" = redis ] && port=$REDIS_PORT
  "${RUN[@]}" redis-benchmark -p "$port" -t "$list" -n "$REQUESTS" -c "$CLIENTS" \
    -P "$PIPELINE" --csv >"$OUT/$server.csv"
done

python3 - "$OUT" "$PIPELINE" "${skipped[@]}" <<'EOF'
import csv, sys
out, pipeline, skipped = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = {s: {r["test"]: float(r["rps"]) for r in csv.DictReader(open(f"{out}/{s}.csv"))}
        for s in ("augur", "redis")}
lines = [f"redis-benchmark default suite, -P {pipeline}: requests per second",
         "", "| test | augur-server | redis-server | augur / redis |", "|---|---|---|---|"]
for test, rps in rows["augur"].items():
    redis = rows["redis"].get(test)
    ratio = f"{rps / redis:.2f}" if redis else "-"
    lines.append(f"| {test} | {rps:,.0f} | {redis:,.0f} | {ratio} |")
lines += ["", "Skipped (commands augur-server does not support): "
          + (", ".join(skipped) if skipped else "none")]
text = "\n".join(lines) + "\n"
open(f"{out}/summary.md", "w").write(text)
print(text, end="")
EOF
