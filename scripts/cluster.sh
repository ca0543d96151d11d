#!/usr/bin/env bash
# A sharded Augur deployment on this machine: N augur-server processes on loopback ports,
# and twemproxy (Debian's `nutcracker`, 0.5) in front of them, hashing keys onto the shards
# (ketama consistent hashing over fnv1a_64). Clients talk to the proxy as to one Redis.
#
#   scripts/cluster.sh up [N]      start N shards (default 3) and the proxy
#   scripts/cluster.sh bench [N]   redis-benchmark through the proxy (-n N, default 200000),
#                                  then against shard 1 directly, for comparison
#   scripts/cluster.sh status      the shards' key counts and the proxy's address
#   scripts/cluster.sh down        stop the proxy and the shards (SHUTDOWN SAVE)
#
# Environment: CLUSTER_DIR (default /tmp/augur-cluster: databases, logs, the generated
# nutcracker.yml, pids), BASE_PORT (default 7001: shard i listens on BASE_PORT + i - 1),
# PROXY_PORT (default 22121), AUGUR_SERVER (default target/release/augur-server, built if
# missing), extra augur-server flags in SERVER_FLAGS (e.g. "--sync always").
#
# auto_eject_hosts is false: a shard that fails is not taken out of the ring, so its keys
# are not silently served by another shard (which would not hold them) — requests for them
# fail until it is back. Set it to true only for a cache, where a miss is acceptable.
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER_DIR=${CLUSTER_DIR:-/tmp/augur-cluster}
BASE_PORT=${BASE_PORT:-7001}
PROXY_PORT=${PROXY_PORT:-22121}
AUGUR_SERVER=${AUGUR_SERVER:-target/release/augur-server}
SERVER_FLAGS=${SERVER_FLAGS:-}

# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh # need, wait_port

shard_count() { cat "$CLUSTER_DIR/shards" 2>/dev/null || echo 0; }

# redis-benchmark -q rewrites its progress line with CRs: keep the final lines only.
final_lines() { tr '\r' '\n' | grep -v 'rps=' | grep -v '^ *$'; }

up() {
  local n=${1:-3}
  need nutcracker nutcracker
  if [ ! -x "$AUGUR_SERVER" ]; then
    cargo build --release -p augur-server
  fi
  mkdir -p "$CLUSTER_DIR"
  echo "$n" >"$CLUSTER_DIR/shards"
  local servers=""
  for i in $(seq 1 "$n"); do
    local port=$((BASE_PORT + i - 1))
    # shellcheck disable=SC2086
    "$AUGUR_SERVER" --db "$CLUSTER_DIR/shard$i" --port "$port" $SERVER_FLAGS \
      >"$CLUSTER_DIR/shard$i.out" 2>"$CLUSTER_DIR/shard$i.log" &
    echo $! >"$CLUSTER_DIR/shard$i.pid"
    servers+="    - 127.0.0.1:$port:1 shard$i"$'\n'
  done
  cat >"$CLUSTER_DIR/nutcracker.yml" <<EOF
augur:
  listen: 127.0.0.1:$PROXY_PORT
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  server_retry_timeout: 2000
  server_failure_limit: 3
  timeout: 10000
  servers:
$servers
EOF
  for i in $(seq 1 "$n"); do wait_port $((BASE_PORT + i - 1)); done
  nutcracker -c "$CLUSTER_DIR/nutcracker.yml" -s $((PROXY_PORT + 1)) -a 127.0.0.1 \
    -o "$CLUSTER_DIR/nutcracker.log" -p "$CLUSTER_DIR/nutcracker.pid" -d
  wait_port "$PROXY_PORT"
  echo "up: $n shards on ports $BASE_PORT..$((BASE_PORT + n - 1)), proxy on 127.0.0.1:$PROXY_PORT"
}

bench() {
  local requests=${1:-200000}
  need redis-benchmark redis-tools
  echo "== through twemproxy (127.0.0.1:$PROXY_PORT), $(shard_count) shards"
  redis-benchmark -p "$PROXY_PORT" -t set,get -n "$requests" -r 1000000 -c 50 -P 16 -q \
    2>&1 | final_lines
  echo "== shard 1 directly (127.0.0.1:$BASE_PORT)"
  redis-benchmark -p "$BASE_PORT" -t set,get -n "$requests" -r 1000000 -c 50 -P 16 -q \
    2>&1 | final_lines
}

status() {
  need redis-cli redis-tools
  for i in $(seq 1 "$(shard_count)"); do
    echo "shard$i (port $((BASE_PORT + i - 1))): $(redis-cli -p $((BASE_PORT + i - 1)) DBSIZE) keys"
  done
  echo "proxy: 127.0.0.1:$PROXY_PORT"
}

down() {
  if [ -f "$CLUSTER_DIR/nutcracker.pid" ]; then
    kill "$(cat "$CLUSTER_DIR/nutcracker.pid")" 2>/dev/null || true
    rm -f "$CLUSTER_DIR/nutcracker.pid"
  fi
  for pidfile in "$CLUSTER_DIR"/shard*.pid; do
    [ -f "$pidfile" ] || continue
    local pid
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile"
  done
  echo "down (databases kept in $CLUSTER_DIR)"
}

case "${1:-}" in
  up) up "${2:-3}" ;;
  bench) bench "${2:-200000}" ;;
  status) status ;;
  down) down ;;
  *) sed -n '2,21p' "$0"; exit 2 ;;
esac
