#!/usr/bin/env bash
# Issue 10 item 5: the lazy-learning study (Tables 3-5 of the Bourbon range-query follow-up,
# ../shared/papers/bourbon-range-queries-lazy-learning.txt §5.4). For each workload (YCSB B and
# its hot-spot variant B', `ycsb-b-hot`) and each learning policy (never, at-build, always,
# cost-benefit, lazy, offline) it loads a fresh database with `ycsb-load`, settles it, runs the
# workload, and keeps one JSON file per pair in $OUT; scripts/lazy_report.py then renders
# $REPORT (models learned, get/put latency, learning time, per policy and workload, plus the
# exact commands from $OUT/commands.txt).
#
# One run per (workload, policy), on its own database in $DB/<workload>-<policy>:
#   ycsb-load           NUM records (--insert-order=$INSERT_ORDER, --load-order=$LOAD_ORDER)
#   flush               the load's last memtable goes to L0 (the run reads SSTables only)
#   waitforcompaction   the load's compactions finish
#   waitforlearning     the background learner finishes what the load gave it (always,
#                       cost-benefit: files past T_wait), so the run counts only its own models
#   learn               offline only: Db::learn_all, once, on the loaded tree
#   <workload>          OPS operations: ycsb-b (95/5 read/update, zipfian) or ycsb-b-hot
#                       (B': 95/5, 90% of the operations on 1% of the records, zipfian within)
#   waitforlearning     models the run queued but had not learned when it ended (the backlog)
#
# Why ordered keys: B''s hot set is the first 1% of the record numbers. Under YCSB's default
# hashed keys those records are spread over every SSTable, so every file is read (the seed
# itself suspected this is why lazy learning gained little); under --insert-order=ordered they
# are one key range in a few files. --load-order=random loads the ordered keys shuffled, so
# the tree is built with overlapping compactions as under hashed keys (a load in key order
# would only move files down and leave no compaction history). Both workloads run on the same
# key naming, so B and B' differ only in the request distribution.
#
# Why small files: the seed ran LevelDB-based Bourbon (2 MiB tables, 4 MiB write buffer) and
# learned ~290 file models at 10M records; Augur's defaults (32 MiB tables, 64 MiB memtable)
# would leave a handful of files and nothing to compare.
#
# Usage: scripts/lazy_study.sh                          # the full study (10M records, 10M ops)
#        NUM=500000 OPS=500000 OUT=/tmp/lazy REPORT=/tmp/lazy/lazy-learning.md \
#          scripts/lazy_study.sh                        # pipeline check (~2 minutes)
# Env:   NUM            records loaded (default 10000000, the seed's)
#        OPS            operations of each workload (default 10000000, the seed's)
#        DB             database directory (default /dev/shm/augur-lazy; each run's database
#                       is removed after it)
#        OUT            JSON, logs, commands.txt, machine.txt (default docs/benchmarks/lazy)
#        REPORT         markdown written (default docs/benchmarks/lazy-learning.md)
#        WORKLOADS      default "ycsb-b ycsb-b-hot"
#        POLICIES       default "never at-build always cost-benefit lazy offline"
#        VALUE_SIZE     value bytes (default 64; YCSB's records are 1000 bytes, which needs
#                       about 11 GB in $DB at 10M records)
#        VSEP           --value-separation-threshold (default 0: every value in the value
#                       log, WiscKey/Bourbon)
#        MEMTABLE_MB    default 4;  TARGET_FILE_MB  default 2 (LevelDB's, as Bourbon)
#        INSERT_ORDER   ordered|hashed (default ordered);  LOAD_ORDER random|sequential
#                       (default random)
#        HOT_DATA, HOT_OPS  B''s hot set (default: the harness's 0.01 and 0.9)
#        LAZY_READS     --lazy-learning-reads K for lazy (default: the engine's)
#        LAZY_KS        extra lazy runs with a fixed K, one per K listed (e.g. "1 10000"):
#                       rows lazy-k<K>, run with --lazy-learning-reads-per-key 0, so K=1 is
#                       the seed's lazy learning (learn a file at its first lookup)
#        SEED           --seed (default 301)
#        EXTRA          more engine or bench flags for every run (e.g. "--learning-wait-ms 50")
# Needs: cargo; python3 for the report (matplotlib optional, not used).
# The full size takes roughly 2-3 minutes per run, about 40 minutes for the 12 runs on a
# 2-core machine (estimated from small runs); run it when the machine is quiet.
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=${NUM:-10000000}
OPS=${OPS:-10000000}
DB=${DB:-/dev/shm/augur-lazy}
OUT=${OUT:-docs/benchmarks/lazy}
REPORT=${REPORT:-docs/benchmarks/lazy-learning.md}
WORKLOADS=${WORKLOADS:-ycsb-b ycsb-b-hot}
POLICIES=${POLICIES:-never at-build always cost-benefit lazy offline}
VALUE_SIZE=${VALUE_SIZE:-64}
VSEP=${VSEP:-0}
MEMTABLE_MB=${MEMTABLE_MB:-4}
TARGET_FILE_MB=${TARGET_FILE_MB:-2}
INSERT_ORDER=${INSERT_ORDER:-ordered}
LOAD_ORDER=${LOAD_ORDER:-random}
HOT_DATA=${HOT_DATA:-}
HOT_OPS=${HOT_OPS:-}
LAZY_READS=${LAZY_READS:-}
LAZY_KS=${LAZY_KS:-}
SEED=${SEED:-301}
EXTRA=${EXTRA:-}
AUGUR=target/release/augur
case "$DB" in ""|/|.|..) echo "refusing DB=$DB (its subdirectories are removed)" >&2; exit 2 ;; esac

mkdir -p "$OUT/logs" "$DB"
CMDS="$OUT/commands.txt"
: >"$CMDS"

# quote, run: scripts/lib/commands.sh
. scripts/lib/commands.sh  # the scripts run from the repository root


run build cargo build --release -p augur-cli

knobs="NUM=$NUM OPS=$OPS VALUE_SIZE=$VALUE_SIZE VSEP=$VSEP MEMTABLE_MB=$MEMTABLE_MB"
knobs+=" TARGET_FILE_MB=$TARGET_FILE_MB INSERT_ORDER=$INSERT_ORDER LOAD_ORDER=$LOAD_ORDER SEED=$SEED"
[ -n "$HOT_DATA" ] && knobs+=" HOT_DATA=$HOT_DATA"
[ -n "$HOT_OPS" ] && knobs+=" HOT_OPS=$HOT_OPS"
[ -n "$LAZY_READS" ] && knobs+=" LAZY_READS=$LAZY_READS"
[ -n "$LAZY_KS" ] && knobs+=" LAZY_KS='$LAZY_KS'"
[ -n "$EXTRA" ] && knobs+=" EXTRA='$EXTRA'"
{
  echo "cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
  echo "cores: $(nproc) online"
  echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "kernel: $(uname -sr)"
  echo "rustc: $(rustc --version)"
  echo "git commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- crates || echo ' (crates/ modified)')"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "db dir: $DB ($(df -T "$DB" | awk 'NR == 2 {print $2}'))"
  echo "command: $knobs scripts/lazy_study.sh"
} >"$OUT/machine.txt"

# The runs of one workload: "label policy K" (K empty: the engine's or $LAZY_READS).
runs=()
for policy in $POLICIES; do
  k=""
  [ "$policy" = lazy ] && k=$LAZY_READS
  runs+=("$policy $policy $k")
done
for k in $LAZY_KS; do runs+=("lazy-k$k lazy $k"); done

for wl in $WORKLOADS; do
  for entry in "${runs[@]}"; do
    read -r label policy k <<<"$entry"
    name="$wl-$label"
    dir="$DB/$name"
    rm -rf "$dir" "$OUT/$name.json"
    engine=(--value-separation-threshold "$VSEP" --memtable-mb "$MEMTABLE_MB"
            --target-file-mb "$TARGET_FILE_MB" --learning "$policy")
    [ -n "$k" ] && engine+=(--lazy-learning-reads "$k")
    case "$label" in lazy-k*) engine+=(--lazy-learning-reads-per-key 0) ;; esac
    benchmarks="ycsb-load,flush,waitforcompaction,waitforlearning"
    [ "$policy" = offline ] && benchmarks+=",learn"
    benchmarks+=",$wl,waitforlearning"
    flags=(--benchmarks="$benchmarks" --num="$NUM" --reads="$OPS" --value_size="$VALUE_SIZE"
           --insert-order="$INSERT_ORDER" --load-order="$LOAD_ORDER" --seed="$SEED"
           --json="$OUT/$name.json")
    [ -n "$HOT_DATA" ] && flags+=(--hotspot-data-fraction="$HOT_DATA")
    [ -n "$HOT_OPS" ] && flags+=(--hotspot-ops-fraction="$HOT_OPS")
    # shellcheck disable=SC2206 # EXTRA is split into flags on purpose
    extra=($EXTRA)
    run "$name" "$AUGUR" --db "$dir" "${engine[@]}" bench "${flags[@]}" "${extra[@]}"
    rm -rf "$dir"
  done
done

run report python3 scripts/lazy_report.py --out "$OUT" --report "$REPORT"
echo "wrote $REPORT" >&2
