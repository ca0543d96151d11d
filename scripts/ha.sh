#!/usr/bin/env bash
# A replicated, Sentinel-managed group on this machine: three servers on loopback ports
# (node 1 starts as the primary, nodes 2 and 3 as its replicas; each with its own database
# directory and config file, so Sentinel's CONFIG REWRITE persists a role it changes) and
# three redis-sentinel processes (Debian's `redis-sentinel`, 7.0) monitoring them as
# `mymaster` with quorum 2. Clients ask a sentinel for the primary's address.
#
#   scripts/ha.sh up               start the servers and the sentinels; waits until both
#                                  replicas are linked and every sentinel knows both
#                                  replicas and the other sentinels
#   scripts/ha.sh failover [kill]  SENTINEL FAILOVER mymaster (default), or `kill`: SIGKILL
#                                  the primary. Either way waits for the new primary, and
#                                  prints how long until a sentinel named it and until it
#                                  took a write (ms)
#   scripts/ha.sh restart N        start node N again (after `failover kill`): Sentinel
#                                  turns it into a replica of the new primary
#   scripts/ha.sh status           each node's role and replication offset; the primary
#                                  each sentinel names
#   scripts/ha.sh down             stop the sentinels and the servers
#   scripts/ha.sh bench [ROUNDS]   failover time, augur-server and redis-server alternately
#                                  (ROUNDS each, default 5): each round starts a fresh group
#                                  in HA_DIR/bench-SERVER, writes 1000 keys, waits a random
#                                  0-1 s, SIGKILLs the primary and times the failover;
#                                  prints the medians
#
# Environment: HA_DIR (default /tmp/augur-ha: databases, config files, logs, pids),
# BASE_PORT (default 7101: node i listens on BASE_PORT + i - 1), SENTINEL_PORT (default
# 27101: sentinel i on SENTINEL_PORT + i - 1), DOWN_AFTER_MS (default 2000: Sentinel's
# down-after-milliseconds), FAILOVER_TIMEOUT_MS (default 10000), SERVER (augur, the default,
# or redis: the same topology with redis-server, for comparison), AUGUR_SERVER (default
# target/release/augur-server, built if missing), extra server flags in SERVER_FLAGS.
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
HA_DIR=${HA_DIR:-/tmp/augur-ha}
BASE_PORT=${BASE_PORT:-7101}
SENTINEL_PORT=${SENTINEL_PORT:-27101}
DOWN_AFTER_MS=${DOWN_AFTER_MS:-2000}
FAILOVER_TIMEOUT_MS=${FAILOVER_TIMEOUT_MS:-10000}
SERVER=${SERVER:-augur}
AUGUR_SERVER=${AUGUR_SERVER:-target/release/augur-server}
SERVER_FLAGS=${SERVER_FLAGS:-}
NODES=3

# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh # need, wait_port

now_ms() { echo $(($(date +%s%N) / 1000000)); }

cli() { redis-cli -p "$1" "${@:2}" 2>/dev/null; }

# The primary's port as sentinel $1 names it (empty when it does not answer).
named_primary() { cli "$1" SENTINEL get-master-addr-by-name mymaster | sed -n 2p || true; }

# The port of the primary any sentinel names; the first sentinel's answer.
primary_port() {
  local p
  for i in $(seq 1 "$NODES"); do
    p=$(named_primary $((SENTINEL_PORT + i - 1)))
    if [ -n "$p" ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# Prints MESSAGE on stderr and fails once the clock (now_ms) is past DEADLINE (ms).
check_deadline() {
  if [ "$(now_ms)" -gt "$1" ]; then
    echo "$2" >&2
    return 1
  fi
}

# Starts node $1; its config file says whom it replicates (written by `up`, rewritten by
# Sentinel's CONFIG REWRITE).
start_node() {
  local i=$1 port=$((BASE_PORT + $1 - 1))
  if [ "$SERVER" = redis ]; then
    # shellcheck disable=SC2086
    redis-server "$HA_DIR/node$i.conf" $SERVER_FLAGS \
      >"$HA_DIR/node$i.out" 2>"$HA_DIR/node$i.log" &
  else
    # shellcheck disable=SC2086
    "$AUGUR_SERVER" --config "$HA_DIR/node$i.toml" $SERVER_FLAGS \
      >"$HA_DIR/node$i.out" 2>"$HA_DIR/node$i.log" &
  fi
  echo $! >"$HA_DIR/node$i.pid"
  wait_port "$port"
}

# Writes node $1's config file: a replica of node 1 unless it is node 1.
write_node_config() {
  local i=$1 port=$((BASE_PORT + $1 - 1))
  if [ "$SERVER" = redis ]; then
    {
      echo "port $port"
      echo "bind 127.0.0.1"
      echo "dir $HA_DIR/node$i"
      echo "save \"\""
      echo "appendonly no"
      echo "daemonize no"
      if [ "$i" -ne 1 ]; then echo "replicaof 127.0.0.1 $BASE_PORT"; fi
    } >"$HA_DIR/node$i.conf"
  else
    {
      echo "# augur-server node $i of scripts/ha.sh (Sentinel rewrites it: CONFIG REWRITE)"
      echo "db = \"$HA_DIR/node$i\""
      echo "port = $port"
      if [ "$i" -ne 1 ]; then echo "replicaof = \"127.0.0.1 $BASE_PORT\""; fi
    } >"$HA_DIR/node$i.toml"
  fi
}

# Writes sentinel $1's config file (Sentinel rewrites it as it learns the group).
write_sentinel_config() {
  local i=$1
  mkdir -p "$HA_DIR/sentinel$i"
  cat >"$HA_DIR/sentinel$i.conf" <<EOF
port $((SENTINEL_PORT + i - 1))
bind 127.0.0.1
daemonize no
dir $HA_DIR/sentinel$i
logfile $HA_DIR/sentinel$i.log
loglevel verbose
sentinel monitor mymaster 127.0.0.1 $BASE_PORT 2
sentinel down-after-milliseconds mymaster $DOWN_AFTER_MS
sentinel failover-timeout mymaster $FAILOVER_TIMEOUT_MS
sentinel parallel-syncs mymaster 2
EOF
}

# Waits (60 s at most) until both replicas' links are up (redis-server's first sync waits
# repl-diskless-sync-delay, 5 s) and every sentinel knows both replicas and the two other
# sentinels.
wait_group() {
  local deadline=$(($(now_ms) + 60000)) m
  for i in $(seq 2 "$NODES"); do
    until cli $((BASE_PORT + i - 1)) INFO replication | grep -q '^master_link_status:up'; do
      check_deadline "$deadline" "node $i's replication link is not up after 60 s" || return 1
      sleep 0.2
    done
  done
  for i in $(seq 1 "$NODES"); do
    while :; do
      m=$(cli $((SENTINEL_PORT + i - 1)) SENTINEL MASTER mymaster | tr '\n' ' ')
      if [[ "$m" == *"num-slaves $((NODES - 1)) "* ]] &&
        [[ "$m" == *"num-other-sentinels $((NODES - 1)) "* ]]; then
        break
      fi
      check_deadline "$deadline" "sentinel $i does not know the whole group after 60 s: $m" || return 1
      sleep 0.2
    done
  done
}

up() {
  need redis-sentinel redis-sentinel
  need redis-cli redis-tools
  if [ "$SERVER" = redis ]; then
    need redis-server redis-server
  elif [ ! -x "$AUGUR_SERVER" ]; then
    cargo build --release -p augur-server
  fi
  mkdir -p "$HA_DIR"
  for i in $(seq 1 "$NODES"); do
    mkdir -p "$HA_DIR/node$i"
    write_node_config "$i"
    start_node "$i"
  done
  for i in $(seq 1 "$NODES"); do
    write_sentinel_config "$i"
    redis-sentinel "$HA_DIR/sentinel$i.conf" >/dev/null 2>&1 &
    echo $! >"$HA_DIR/sentinel$i.pid"
    wait_port $((SENTINEL_PORT + i - 1))
  done
  wait_group
  echo "up ($SERVER): primary 127.0.0.1:$BASE_PORT, replicas on $((BASE_PORT + 1)) and" \
    "$((BASE_PORT + 2)); sentinels on $SENTINEL_PORT..$((SENTINEL_PORT + NODES - 1))" \
    "(master name mymaster)"
}

failover() {
  local how=${1:-sentinel} old new="" t0 t_named t_write deadline
  old=$(primary_port) || {
    echo "no sentinel answers" >&2
    exit 1
  }
  t0=$(now_ms)
  if [ "$how" = kill ]; then
    local node=$((old - BASE_PORT + 1))
    kill -KILL "$(cat "$HA_DIR/node$node.pid")"
    rm -f "$HA_DIR/node$node.pid"
  else
    cli "$SENTINEL_PORT" SENTINEL FAILOVER mymaster >/dev/null
  fi
  deadline=$((t0 + 60000))
  while :; do
    for i in $(seq 1 "$NODES"); do
      new=$(named_primary $((SENTINEL_PORT + i - 1)))
      if [ -n "$new" ] && [ "$new" != "$old" ]; then break 2; fi
    done
    check_deadline "$deadline" "no new primary after 60 s" || exit 1
    sleep 0.01
  done
  t_named=$(now_ms)
  until [ "$(cli "$new" SET ha:failover:probe "$t0")" = OK ]; do
    check_deadline "$deadline" "the new primary $new takes no write after 60 s" || exit 1
    sleep 0.01
  done
  t_write=$(now_ms)
  echo "failover ($how, $SERVER): primary $old -> $new; named after $((t_named - t0)) ms," \
    "took a write after $((t_write - t0)) ms"
}

status() {
  need redis-cli redis-tools
  for i in $(seq 1 "$NODES"); do
    local port=$((BASE_PORT + i - 1)) info
    info=$(cli "$port" INFO replication | tr -d "\r" || true)
    if [ -z "$info" ]; then
      echo "node$i ($port): down"
      continue
    fi
    local role offset link
    role=$(sed -n 's/^role://p' <<<"$info")
    offset=$(sed -n 's/^master_repl_offset://p' <<<"$info")
    link=$(sed -n 's/^master_link_status:/ link /p' <<<"$info")
    echo "node$i ($port): $role offset $offset$link, $(cli "$port" DBSIZE) keys"
  done
  for i in $(seq 1 "$NODES"); do
    local port=$((SENTINEL_PORT + i - 1))
    echo "sentinel$i ($port): primary $(named_primary "$port" || true)"
  done
}

stop_pid() { # pidfile [signal]: stop that process and wait (30 s at most)
  [ -f "$1" ] || return 0
  local pid
  pid=$(cat "$1")
  kill "-${2:-TERM}" "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$1"
}

down() {
  for i in $(seq 1 "$NODES"); do stop_pid "$HA_DIR/sentinel$i.pid"; done
  for i in $(seq 1 "$NODES"); do stop_pid "$HA_DIR/node$i.pid"; done
  echo "down (databases and logs kept in $HA_DIR)"
}

# The median of the numbers on stdin.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

bench() {
  local rounds=${1:-5} out line
  need redis-server redis-server
  if [ ! -x "$AUGUR_SERVER" ]; then cargo build --release -p augur-server; fi
  : >"$HA_DIR.bench"
  for r in $(seq 1 "$rounds"); do
    for server in augur redis; do
      local dir="$HA_DIR/bench-$server"
      rm -rf "$dir"
      HA_DIR=$dir SERVER=$server "$SELF" up >/dev/null
      for i in $(seq 1 1000); do echo "SET user:$i:profile v$i"; done |
        redis-cli -p "$BASE_PORT" >/dev/null
      cli "$BASE_PORT" WAIT 2 1000 >/dev/null
      # Sentinel polls INFO once a second; a random pause puts the kill at a random point
      # of that cycle (otherwise the script's own timing fixes it, differently per server).
      sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
      out=$(HA_DIR=$dir SERVER=$server "$SELF" failover kill)
      HA_DIR=$dir SERVER=$server "$SELF" down >/dev/null
      echo "round $r: $out"
      # "... named after N ms, took a write after M ms"
      line=$(sed -E 's/.*named after ([0-9]+) ms, took a write after ([0-9]+) ms/\1 \2/' <<<"$out")
      echo "$server $line" >>"$HA_DIR.bench"
    done
  done
  for server in augur redis; do
    echo "$server: median $(awk -v s="$server" '$1 == s { print $2 }' "$HA_DIR.bench" | median) ms" \
      "until a sentinel named the new primary, $(awk -v s="$server" '$1 == s { print $3 }' \
        "$HA_DIR.bench" | median) ms until it took a write ($rounds rounds)"
  done
}

case "${1:-}" in
  up) up ;;
  failover) failover "${2:-sentinel}" ;;
  restart) start_node "${2:?node number}" ;;
  status) status ;;
  down) down ;;
  bench) bench "${2:-5}" ;;
  *) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 2 ;;
esac
