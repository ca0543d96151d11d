#!/usr/bin/env bash
# String keys (issue 41): readrandom and seekrandom+10 of Augur's read paths on real string
# key sets, in alternating rounds, with medians and ratios against the baseline path.
#
# Usage: scripts/string_keys_bench.sh [OUT]   (OUT: a directory for logs and the summary,
# default target/string-keys)
# Knobs (environment): ROUNDS (3), READS (500000), SETS (the shared string sets plus the
# synthetic composite and redis keys), NUM (keys of each file set: that many evenly spaced keys
# of the file; default every key), MODES (never plr string auto), VALUE (100),
# AUGUR (target/release/augur), PEER (an augur binary built with --features rocksdb: adds
# RocksDB in the same rounds; see below), COMPRESSION (none: db_bench's --compression_type,
# for every engine of the run), RATIO (values compressible to this fraction, db_bench's
# --compression_ratio; default random values), BASE (another augur binary, e.g. a pinned older
# build: adds its modes as `base-MODE` in the same rounds, for a same-run A/B of two builds),
# BASE_MODES (the modes BASE runs, default: MODES), PEERS (the peer engines PEER runs, default
# "rocksdb"; "rocksdb leveldb" with a PEER built with both features — LevelDB has no lz4, so
# with COMPRESSION=lz4 it is skipped), REALTIME (1: every run under `chrt -f 50`, SCHED_FIFO,
# root only: steadier ratios on a machine busy with other work).
#
# Each round runs every mode once per set, in order, each on a fresh database:
#   augur bench --keys-text SET --benchmarks fillrandom,compact,readrandom,seekrandom,stats
#       --value_size 100 --value-separation-threshold 1024 --reads READS --seek_nexts 10
#       MODE's flags (never: --learning never; plr / string / auto: --index NAME)
# (compacted, in memory: the default mmap reads). The summary prints per set and mode the
# median micros/op of readrandom and seekrandom, the ratio baseline / mode (above 1: faster
# than the baseline path) in wall time and in the process's CPU time (steadier when other
# jobs load the machine), the learned index memory and the database's bytes on disk. Rows
# (OUT/runs.tsv): round, set, mode, read and seek micros/op, model bytes, disk bytes, read and
# seek CPU micros/op, the load average after the run.
#
# RocksDB: build the peer once with
#   ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu CARGO_TARGET_DIR=target/peers \
#     cargo build --release -p augur-cli --features rocksdb
# (`--features rocksdb,leveldb` for LevelDB too; needs libleveldb-dev) and run with
# PEER=target/peers/release/augur.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/string-keys}
ROUNDS=${ROUNDS:-3}
READS=${READS:-500000}
VALUE=${VALUE:-100}
AUGUR=${AUGUR:-target/release/augur}
PEER=${PEER:-}
BASE=${BASE:-}
COMPRESSION=${COMPRESSION:-none}
RATIO=${RATIO:-}
ratio_flags=""
[ -n "$RATIO" ] && ratio_flags="--compression_ratio $RATIO"
MODES=${MODES:-never plr string auto}
BASE_MODES=${BASE_MODES:-$MODES}
PEERS=${PEERS:-rocksdb}
[ "$COMPRESSION" = lz4 ] && PEERS=${PEERS//leveldb/}
DATA=../shared/datasets
SETS=${SETS:-"$DATA/package_paths.txt $DATA/reversed_domains.txt $DATA/words_en_insane.txt composite:200000 redis:1000000"}
DB=${DB:-/tmp/augur-string-keys-db}
RUN=()
[ "${REALTIME:-0}" = 1 ] && RUN=(chrt -f 50)
mkdir -p "$OUT"
[ -x "$AUGUR" ] || cargo build --release -q -p augur-cli

# The key source flags of a set: a file, or `distribution:count`.
source_flags() {
  case "$1" in
    *:*) echo "--distribution ${1%%:*} --num ${1##*:}" ;;
    *) echo "--keys-text $1${NUM:+ --num $NUM}" ;;
  esac
}

mode_flags() {
  local mode=${1#base-}
  case "$mode" in
    never) echo "--learning never" ;;
    rocksdb | leveldb) echo "--engine $mode" ;;
    *) echo "--index $mode" ;;
  esac
}

LOG="$OUT/runs.tsv"
: >"$LOG"
for round in $(seq 1 "$ROUNDS"); do
  for set in $SETS; do
    modes=$MODES
    [ -n "$PEER" ] && modes="$modes $PEERS"
    if [ -n "$BASE" ]; then
      for m in $BASE_MODES; do modes="$modes base-$m"; done
    fi
    for mode in $modes; do
      bin=$AUGUR
      case "$mode" in rocksdb | leveldb) bin=$PEER ;; esac
      case "$mode" in base-*) bin=$BASE ;; esac
      rm -rf "$DB"
      # shellcheck disable=SC2046
      text=$("${RUN[@]}" "$bin" bench $(source_flags "$set") $(mode_flags "$mode") \
        --benchmarks fillrandom,compact,readrandom,seekrandom,stats --value_size "$VALUE" \
        --value-separation-threshold 1024 --reads "$READS" --seek_nexts 10 \
        --compression_type "$COMPRESSION" $ratio_flags --db "$DB" 2>&1) || { echo "$text" >&2; exit 1; }
      read_us=$(echo "$text" | awk '$1 == "readrandom" && $2 == ":" {print $3}' | tail -1)
      seek_us=$(echo "$text" | awk '$1 == "seekrandom" && $2 == ":" {print $3}' | tail -1)
      # The process's CPU seconds in each (less sensitive than wall time to other jobs on a
      # loaded machine), as micros per operation.
      read_cpu=$(echo "$text" | sed -n 's/^readrandom .* cpu_s=\([0-9.]*\).*/\1/p' | tail -1)
      seek_cpu=$(echo "$text" | sed -n 's/^seekrandom .* cpu_s=\([0-9.]*\).*/\1/p' | tail -1)
      read_cpu=$(python3 -c "print(f'{${read_cpu:-0} * 1e6 / $READS:.3f}')")
      seek_cpu=$(python3 -c "print(f'{${seek_cpu:-0} * 1e6 / $READS:.3f}')")
      model=$(echo "$text" | sed -n 's/.*learned index memory *\([0-9]*\) B.*/\1/p' | tail -1)
      disk=$(du -sb "$DB" | cut -f1)
      name=$(basename "$set" .txt)
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$mode" "$read_us" \
        "$seek_us" "${model:-0}" "$disk" "$read_cpu" "$seek_cpu" "$(cut -d' ' -f1 /proc/loadavg)" |
        tee -a "$LOG"
    done
  done
done

python3 - "$LOG" <<'PY' | tee "$OUT/summary.md"
import statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    r, s, m, read, seek, model, disk, rcpu, scpu, load = line.rstrip("\n").split("\t")
    runs[(s, m)].append((float(read), float(seek), int(model), int(disk), float(rcpu), float(scpu)))
sets = list(dict.fromkeys(s for s, _ in runs))
print("| key set | mode | readrandom us | seekrandom+10 us | read: never/mode | seek: never/mode | read CPU: never/mode | seek CPU: never/mode | model bytes | disk bytes |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in sets:
    base = runs.get((s, "never"))
    bread = statistics.median(x[0] for x in base) if base else None
    bseek = statistics.median(x[1] for x in base) if base else None
    bcpu = [statistics.median(x[i] for x in base) for i in (4, 5)] if base else None
    for (s2, m), xs in runs.items():
        if s2 != s:
            continue
        read = statistics.median(x[0] for x in xs)
        seek = statistics.median(x[1] for x in xs)
        rr = f"{bread / read:.2f}x" if bread else ""
        sr = f"{bseek / seek:.2f}x" if bseek else ""
        cpu = [statistics.median(x[i] for x in xs) for i in (4, 5)]
        rc, sc = (f"{b / c:.2f}x" if bcpu and c else "" for b, c in zip(bcpu or [0, 0], cpu))
        print(f"| {s} | {m} | {read:.3f} | {seek:.3f} | {rr} | {sr} | {rc} | {sc} | {xs[-1][2]} | {xs[-1][3]} |")
PY
