#!/usr/bin/env bash
# Checkpoint and backup time and bytes for a 1M-key database, measured with the CLI
# (docs/benchmarks/checkpoint.md): hard links vs copies on one device, copies to another
# device (tmpfs), a first and an incremental backup, a restore.
#
# Usage: scripts/checkpoint_bench.sh [ROUNDS]   (default 3)
# Environment: AUGUR (default target/release/augur), WORK (default target/bench/checkpoint,
# on the repository's device), SHM (default /dev/shm/augur-checkpoint-bench, another device),
# NUM (default 1000000), VALUE (bytes, default 100), SEPARATED_VALUE (bytes of the second
# database's values, all separated into the value log; default 400).
# Prints one JSON object per measurement on stdout; builds the databases once.
set -euo pipefail
ROUNDS=${1:-3}
AUGUR=${AUGUR:-target/release/augur}
WORK=${WORK:-target/bench/checkpoint}
SHM=${SHM:-/dev/shm/augur-checkpoint-bench}
NUM=${NUM:-1000000}
VALUE=${VALUE:-100}
SEPARATED_VALUE=${SEPARATED_VALUE:-400}
mkdir -p "$WORK"

# The databases: 16-byte keys in random order, flushed, compacted whole and value-log GC run
# to the end (so no background work is due when a command opens them), kept pristine
# (each round works on a fresh copy, so every round starts from the same state).
build() { # DIR VALUE_SIZE THRESHOLD
  [ -e "$1/CURRENT" ] && return
  "$AUGUR" --db "$1" --value-separation-threshold "$3" bench --num "$NUM" \
    --value_size "$2" --benchmarks fillrandom,flush,waitforcompaction >/dev/null
  "$AUGUR" --db "$1" compact >/dev/null
  "$AUGUR" --db "$1" gc --all >/dev/null
}
build "$WORK/inline" "$VALUE" 4096
build "$WORK/separated" "$SEPARATED_VALUE" 64

# One measurement: NAME and a command printing JSON; adds the process's wall time (the
# open and close of the database included) and the load average.
measure() {
  local name=$1
  shift
  local start end out
  start=$(date +%s.%N)
  out=$("$@")
  end=$(date +%s.%N)
  jq -c --arg name "$name" --argjson wall "$(echo "$end - $start" | bc)" \
    --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
    '. + {name: $name, process_seconds: $wall, load1: ($load | tonumber)}' <<<"$out"
}

src=$WORK/src
for db in inline separated; do
  if [ "$db" = inline ]; then value=$VALUE threshold=4096; else value=$SEPARATED_VALUE threshold=64; fi
  jq -nc --arg db "$db" --argjson bytes "$(du -sb "$WORK/$db" | cut -f1)" \
    --argjson files "$(ls "$WORK/$db" | wc -l)" '{name: "source", db: $db, bytes: $bytes, files: $files}'
  for round in $(seq 1 "$ROUNDS"); do
    rm -rf "$src" "$WORK/cp-link" "$WORK/cp-copy" "$SHM" "$WORK/backups" "$WORK/restored"
    cp -a "$WORK/$db" "$src"
    measure "$db/checkpoint-link" "$AUGUR" --db "$src" checkpoint --json "$WORK/cp-link"
    # Bytes the link checkpoint adds on disk beside its source (du counts an inode once).
    both=$(du -sb "$src" "$WORK/cp-link" | awk '{s += $1} END {print s}')
    jq -nc --arg name "$db/checkpoint-link-disk" \
      --argjson added "$((both - $(du -sb "$src" | cut -f1)))" \
      '{name: $name, bytes_added_beside_source: $added}'
    measure "$db/checkpoint-copy" "$AUGUR" --db "$src" checkpoint --copy --json "$WORK/cp-copy"
    mkdir -p "$(dirname "$SHM")"
    measure "$db/checkpoint-other-device" "$AUGUR" --db "$src" checkpoint --json "$SHM"
    measure "$db/backup-first" "$AUGUR" --db "$src" backup create --json "$WORK/backups"
    # A few writes (1,000 overwrites), then the incremental backup.
    "$AUGUR" --db "$src" --value-separation-threshold "$threshold" bench --use_existing_db \
      --num 1000 --value_size "$value" --benchmarks overwrite --seed "$round" >/dev/null
    measure "$db/backup-incremental" "$AUGUR" --db "$src" backup create --json "$WORK/backups"
    measure "$db/restore" "$AUGUR" backup restore --json "$WORK/backups" 2 "$WORK/restored"
  done
done
rm -rf "$src" "$WORK/cp-link" "$WORK/cp-copy" "$SHM" "$WORK/backups" "$WORK/restored"
