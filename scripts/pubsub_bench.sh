#!/usr/bin/env bash
# PUBLISH throughput of augur-server against redis-server, with 1 and 10 subscribers, in the
# same run (docs/benchmarks/server.md, "Pub/Sub"). Every process (both servers, the
# subscribers, redis-benchmark) runs under `chrt -f 50` (SCHED_FIFO; root or CAP_SYS_NICE)
# unless REALTIME=0: the machine is shared, and real-time priority keeps other builds from
# skewing one side.
#
#   scripts/pubsub_bench.sh [AUGUR_BINARY]      (default target/release/augur-server)
#
# Environment: ROUNDS (3; the servers alternate within each round, the median is reported),
# N (requests per benchmark, 300000), CLIENTS (10), PIPELINE (16), MSG (the message, 16
# bytes). Subscribers are `redis-cli subscribe ch` processes writing to /dev/null; each run
# checks that all of them are still subscribed at its end (a subscriber that fell more than
# the output buffer limit behind would have been disconnected, on either server).
set -euo pipefail
AUGUR=${1:-target/release/augur-server}
ROUNDS=${ROUNDS:-3}
N=${N:-300000}
CLIENTS=${CLIENTS:-10}
PIPELINE=${PIPELINE:-16}
MSG=${MSG:-0123456789abcdef}
RUN=()
[ "${REALTIME:-1}" = 1 ] && RUN=(chrt -f 50)
TMP=$(mktemp -d)
REDIS_PORT=16479
AUGUR_PORT=16480
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

"${RUN[@]}" redis-server --port $REDIS_PORT --save "" --appendonly no --dir "$TMP" >/dev/null &
"${RUN[@]}" "$AUGUR" --db "$TMP/augur" --port $AUGUR_PORT >/dev/null 2>&1 &
for port in $REDIS_PORT $AUGUR_PORT; do
    until redis-cli -p $port ping >/dev/null 2>&1; do sleep 0.1; done
done

# One benchmark: PUBLISH on `port` with `subs` subscribers; prints requests per second.
publish_rate() {
    local port=$1 subs=$2 pids=() i
    for ((i = 0; i < subs; i++)); do
        "${RUN[@]}" redis-cli -p "$port" subscribe ch >/dev/null &
        pids+=($!)
    done
    until [ "$(redis-cli -p "$port" pubsub numsub ch | tail -1)" = "$subs" ]; do sleep 0.05; done
    local rate
    rate=$("${RUN[@]}" redis-benchmark -p "$port" -n "$N" -c "$CLIENTS" -P "$PIPELINE" -q \
        PUBLISH ch "$MSG" | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 |
        cut -d' ' -f1)
    local left
    left=$(redis-cli -p "$port" pubsub numsub ch | tail -1)
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    until [ "$(redis-cli -p "$port" pubsub numsub ch | tail -1)" = 0 ]; do sleep 0.05; done
    [ "$left" = "$subs" ] || echo "WARNING: port $port: $left of $subs subscribers left" >&2
    echo "$rate"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "augur $AUGUR; N=$N CLIENTS=$CLIENTS PIPELINE=$PIPELINE MSG=${#MSG} bytes; realtime ${REALTIME:-1}"
printf '%-12s %14s %14s %8s   %s\n' subscribers redis augur ratio 'per round (redis/augur)'
for subs in 1 10; do
    : >"$TMP/redis.$subs"
    : >"$TMP/augur.$subs"
    for ((r = 0; r < ROUNDS; r++)); do
        publish_rate $REDIS_PORT $subs >>"$TMP/redis.$subs"
        publish_rate $AUGUR_PORT $subs >>"$TMP/augur.$subs"
    done
    redis_rate=$(median <"$TMP/redis.$subs")
    augur_rate=$(median <"$TMP/augur.$subs")
    printf '%-12s %14s %14s %8s   %s\n' "$subs" "$redis_rate" "$augur_rate" \
        "$(awk -v a="$augur_rate" -v b="$redis_rate" 'BEGIN {printf "%.2f", a / b}')" \
        "$(paste -d/ "$TMP/redis.$subs" "$TMP/augur.$subs" | cut -c1-40 | tr '\n' ' ')"
done
