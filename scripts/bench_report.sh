#!/usr/bin/env bash
# Issue 5 "Measure and report": regenerates docs/benchmarks/REPORT.md in one command. Builds
# `augur` with the peers asked for, runs every section below with `augur bench --compare`
# (Augur's baseline path, its learned path and every peer compiled in, same key stream, each
# in its own subdirectory of $DB), keeps the JSON, logs and the exact commands in $OUT, then
# renders tables, plots and the machine description with scripts/report.py.
#
#   A  engines: 16-byte keys, 64-byte values: fillrandom, compact, readrandom, readmissing,
#      seekrandom, readseq; then seekrandom with 100 nexts on the same databases
#   B  1 KiB values: fillrandom, waitforcompaction, readrandom (Augur separates values >= 1024
#      bytes; RocksDB runs without and with BlobDB, fjall without and with blob files), write
#      amplification settled (fill + the background work it caused) and space amplification
#   C  YCSB load + A, B, C, F, D, E on $NUM records
#   D  every SOSD *.u64 file of $DATASETS and words_en_insane.txt: fillrandom, compact,
#      readrandom (learned vs baseline speedup per dataset)
#   E  latency vs model memory on ipv4_asn.u64: index fence/plr/pgm/rs/rmi x error bound
#      4/16/64/256 (values separated, at-build learning), plus the never policy as baseline
#   F  Debian's RocksDB db_bench vs the harness on RocksDB (scripts/db_bench_crosscheck.sh),
#      when db_bench is on PATH and RocksDB is built in
#
# Usage: scripts/bench_report.sh
#        QUICK=1 FEATURES=rocksdb OUT=/tmp/r DB=/tmp/r-db REPORT=/tmp/r/REPORT.md \
#          scripts/bench_report.sh                       # smoke run of the pipeline (~1 min)
# Env:   NUM       keys of sections A and C (default 10000000)
#        READS     lookups of every read benchmark (default 1000000)
#        SEEKS100  seeks of the 100-nexts seekrandom run (default 100000)
#        YCSB_OPS  operations of each YCSB workload (default 1000000)
#        NUM_1K    keys of the 1 KiB-value section B (default 1000000)
#        DS_NUM    keys per dataset in D and E (default: every key of the file)
#        CACHE     block cache of the peers in bytes, --cache_size (default 1 GiB)
#        FEATURES  peers to build (default rocksdb,leveldb,fjall; features that the crate
#                  augur-bench does not declare are dropped with a warning)
#        DB        database directory, in memory (default /dev/shm/augur-report; removed
#                  after each section)
#        OUT       JSON, CSV, PNG, logs, commands.txt, machine.txt (default docs/benchmarks/report)
#        REPORT    the markdown written (default docs/benchmarks/REPORT.md)
#        DATASETS  directory of the real datasets (default ../shared/datasets, beside the repo)
#        SECTIONS  subset of sections to run (default "A B C D E F"); report.py renders
#                  whatever JSON is in $OUT
#        QUICK=1   tiny sizes for testing the pipeline (every size above still overridable)
# Needs: cargo, python3 with matplotlib (pip install matplotlib), for RocksDB
#        librocksdb-dev and libclang-dev, for LevelDB libleveldb-dev, for F rocksdb-tools.
# The full-size run takes about 20 minutes on a 2-core machine (18 min measured with all
# three peers); run it when the machine is quiet.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
  NUM=${NUM:-20000} READS=${READS:-5000} SEEKS100=${SEEKS100:-1000}
  YCSB_OPS=${YCSB_OPS:-5000} NUM_1K=${NUM_1K:-5000} DS_NUM=${DS_NUM:-20000}
fi
NUM=${NUM:-10000000}
READS=${READS:-1000000}
SEEKS100=${SEEKS100:-100000}
YCSB_OPS=${YCSB_OPS:-1000000}
NUM_1K=${NUM_1K:-1000000}
DS_NUM=${DS_NUM:-}
CACHE=${CACHE:-$((1 << 30))}
FEATURES=${FEATURES-rocksdb,leveldb,fjall}
FEATURES_ASKED=$FEATURES
DB=${DB:-/dev/shm/augur-report}
OUT=${OUT:-docs/benchmarks/report}
REPORT=${REPORT:-docs/benchmarks/REPORT.md}
DATASETS=${DATASETS:-../shared/datasets}
SECTIONS=${SECTIONS:-A B C D E F}
AUGUR=target/release/augur
case "$DB" in ""|/|.|..) echo "refusing DB=$DB (it is removed after each section)" >&2; exit 2 ;; esac

# --- features: keep only the peers the crate declares ------------------------------------------
declared() {  # is $1 a key of crates/augur-bench/Cargo.toml's [features] table?
  sed -n '/^\[features\]/,/^\[/p' crates/augur-bench/Cargo.toml | grep -Eq "^$1[[:space:]]*="
}
kept=()
for f in ${FEATURES//,/ }; do
  if ! declared "$f"; then
    echo "warning: augur-bench declares no feature '$f'; building without it" >&2
  else
    kept+=("$f")
  fi
done
FEATURES=$(IFS=,; echo "${kept[*]:-}")

mkdir -p "$OUT/logs"
CMDS="$OUT/commands.txt"
: >"$CMDS"

# quote, run: scripts/lib/commands.sh
. scripts/lib/commands.sh  # the scripts run from the repository root


# --- build ----------------------------------------------------------------------------------
build=(cargo build --release -p augur-cli)
if [ -n "$FEATURES" ]; then build+=(--features "$FEATURES"); fi
if [[ ",$FEATURES," == *,rocksdb,* ]]; then
  run build env ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu "${build[@]}"
else
  run build "${build[@]}"
fi

# --- machine description (key: value lines, read by report.py) ------------------------------
# The command line that reproduces this run: the size knobs, plus whatever was not a default.
knobs="NUM=$NUM READS=$READS SEEKS100=$SEEKS100 YCSB_OPS=$YCSB_OPS NUM_1K=$NUM_1K CACHE=$CACHE"
[ "${QUICK:-0}" = 1 ] && knobs="QUICK=1 $knobs"
[ -n "$DS_NUM" ] && knobs+=" DS_NUM=$DS_NUM"
[ "$FEATURES_ASKED" = rocksdb,leveldb,fjall ] || knobs+=" FEATURES=$FEATURES_ASKED"
[ "$SECTIONS" = "A B C D E F" ] || knobs+=" SECTIONS='$SECTIONS'"
mkdir -p "$DB"
{
  echo "cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
  echo "cores: $(nproc) online ($(lscpu | sed -n 's/^CPU(s):[[:space:]]*//p' | head -1) CPUs, $(lscpu | sed -n 's/^Thread(s) per core:[[:space:]]*//p') threads per core)"
  echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "kernel: $(uname -sr)"
  echo "rustc: $(rustc --version)"
  echo "git commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- crates || echo ' (crates/ modified)')"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "features: ${FEATURES:-none (Augur only)}"
  echo "db dir: $DB ($(df -T "$DB" | awk 'NR == 2 {print $2}'))"
  echo "command: $knobs scripts/bench_report.sh"
} >"$OUT/machine.txt"

# has X: is section X to run? If so, its JSON of an earlier run is removed first (report.py
# renders every JSON in $OUT, so sections not run keep their earlier results).
has() {
  [[ " $SECTIONS " == *" $1 "* ]] || return 1
  rm -f "$OUT/$1"-*.json
}
fresh_db() { rm -rf "$DB"; mkdir -p "$DB"; }
# Flags of every comparison: the same peer cache everywhere.
CMP=(bench --compare --cache_size="$CACHE")

# --- A: engines, 16-byte keys, 64-byte values -------------------------------------------------
if has A; then
  fresh_db
  A=(--num="$NUM" --key_size=16 --value_size=64 --histogram)
  run A-engines "$AUGUR" "${CMP[@]}" --db "$DB/A" "${A[@]}" --reads="$READS" \
    --benchmarks=fillrandom,compact,readrandom,readmissing,seekrandom,readseq \
    --json="$OUT/A-engines.json"
  # Same databases, reopened per configuration (compare mode + --use_existing_db).
  run A-seek100 "$AUGUR" "${CMP[@]}" --db "$DB/A" "${A[@]}" --use_existing_db \
    --seek_nexts=100 --reads="$SEEKS100" --benchmarks=seekrandom --json="$OUT/A-seek100.json"
  rm -rf "$DB"
fi

# --- B: 1 KiB values (separated by Augur, RocksDB with and without BlobDB) -------------------
if has B; then
  fresh_db
  run B-1k "$AUGUR" "${CMP[@]}" --db "$DB/B" --histogram --num="$NUM_1K" --value_size=1024 \
    --reads="$READS" --benchmarks=fillrandom,waitforcompaction,readrandom --json="$OUT/B-1k.json"
  rm -rf "$DB"
fi

# --- C: YCSB ---------------------------------------------------------------------------------
if has C; then
  fresh_db
  run C-ycsb "$AUGUR" "${CMP[@]}" --db "$DB/C" --histogram --num="$NUM" --reads="$YCSB_OPS" \
    --benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,ycsb-e --json="$OUT/C-ycsb.json"
  rm -rf "$DB"
fi

# --- D: real datasets ------------------------------------------------------------------------
if has D; then
  sources=()
  for f in "$DATASETS"/*.u64; do [ -e "$f" ] && sources+=("--keys=$f"); done
  if [ -e "$DATASETS/words_en_insane.txt" ]; then
    sources+=("--keys-text=$DATASETS/words_en_insane.txt")
  fi
  [ ${#sources[@]} -gt 0 ] || echo "warning: no dataset in $DATASETS; section D skipped" >&2
  for src in ${sources[@]+"${sources[@]}"}; do
    name=$(basename "${src#*=}"); name=${name%.*}
    fresh_db
    run "D-$name" "$AUGUR" "${CMP[@]}" --db "$DB/D" "$src" ${DS_NUM:+--num="$DS_NUM"} \
      --reads="$READS" --benchmarks=fillrandom,compact,readrandom --json="$OUT/D-$name.json"
    rm -rf "$DB"
  done
fi

# --- E: latency vs model memory on ipv4_asn ---------------------------------------------------
if has E; then
  keys="$DATASETS/ipv4_asn.u64"
  if [ ! -e "$keys" ]; then
    echo "warning: $keys missing; section E skipped" >&2
  else
    E=(bench --keys="$keys" ${DS_NUM:+--num="$DS_NUM"} --reads="$READS" \
       --value-separation-threshold=0 --benchmarks=fillrandom,compact,readrandom)
    # Reference point: the same database without models (block fence pointers only).
    fresh_db
    run E-baseline "$AUGUR" "${E[@]}" --db "$DB/E" --learning=never --json="$OUT/E-baseline.json"
    for index in fence plr pgm rs rmi; do
      for bound in 4 16 64 256; do
        fresh_db
        run "E-$index-$bound" "$AUGUR" "${E[@]}" --db "$DB/E" --index="$index" \
          --error-bound="$bound" --learning=at-build --json="$OUT/E-$index-$bound.json"
      done
    done
    rm -rf "$DB"
  fi
fi

# --- F: db_bench cross-check --------------------------------------------------------------------
if has F; then
  rm -f "$OUT/dbbench.txt"
  if ! command -v db_bench >/dev/null; then
    echo "note: db_bench not on PATH (apt-get install rocksdb-tools); section F skipped" >&2
  elif [[ ",$FEATURES," != *,rocksdb,* ]]; then
    echo "note: RocksDB not built in; section F skipped" >&2
  else
    # The markdown table goes to $OUT/dbbench.txt; raw outputs stay in $OUT/logs.
    run F-dbbench env NUM="$NUM" READS="$READS" CACHE="$CACHE" DB="$DB/F" WORK="$OUT/logs" \
      AUGUR="$AUGUR" scripts/db_bench_crosscheck.sh "$OUT/dbbench.txt"
    rm -rf "$DB"
  fi
fi

# --- report ------------------------------------------------------------------------------------
run report python3 scripts/report.py "$OUT" "$REPORT"
echo "wrote $REPORT (data in $OUT)" >&2
