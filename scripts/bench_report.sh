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
#   G  string keys (scripts/string_keys_bench.sh): package_paths, reversed_domains, words,
#      composite and redis keys; readrandom and seekrandom+10 of Augur's modes never, plr and
#      auto and of RocksDB and LevelDB (those built in), in memory
#   H  storage-resident (scripts/beyond_memory_bench.py --parts t3): databases on disk
#      ($BEYOND_DIR), direct reads through a cache of 25% of the database, uniform and hotspot
#      readrandom: Augur learned, Augur baseline, RocksDB (needs RocksDB built in)
#   I  augur-server against redis-server (scripts/server_bench.py --phases loaded): keys
#      loaded through redis-cli --pipe, then redis-benchmark get, set, incr, hset, hget at -P 16
#      and -P 1 (needs redis-server and redis-tools; skipped with a note otherwise)
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
#        ROUNDS    rounds of G, H and I (default 1; their tables show medians over rounds)
#        STR_READS lookups and seeks per string key set in G (default 500000)
#        STR_NUM   keys per string key set in G (default: every key of the files, 200000
#                  composite and 1000000 redis keys)
#        BEYOND_NUM, BEYOND_READS  keys and lookups of H (default 5000000, 300000)
#        BEYOND_DIR  H's work directory, on disk, never tmpfs (default /var/tmp/augur-report-H;
#                  removed afterwards)
#        SERVER_KEYS, SERVER_REQUESTS  keys loaded and requests per test in I (default
#                  2000000, 1000000)
#        SECTIONS  subset of sections to run (default "A B C D E F G H I"); report.py renders
#                  whatever results are in $OUT
#        QUICK=1   tiny sizes for testing the pipeline (every size above still overridable)
# Needs: cargo, python3 with matplotlib (pip install matplotlib), for RocksDB
#        librocksdb-dev and libclang-dev, for LevelDB libleveldb-dev, for F rocksdb-tools, for I
#        redis-server and redis-tools.
# The full-size run takes about 30 minutes on a 2-core machine: A-F 18 min measured with all
# three peers; G, H and I at half their default sizes (STR_READS=250000, BEYOND_NUM=2500000
# BEYOND_READS=150000, SERVER_KEYS=1000000 SERVER_REQUESTS=500000) took 92 s, 72 s and 111 s
# on the 2-core VM while another benchmark loaded it, so at most about 3, 2.5 and 4 min at
# the default sizes (not measured at full size). QUICK=1 of all nine sections: 35-85 s.
# Run it when the machine is quiet.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
  NUM=${NUM:-20000} READS=${READS:-5000} SEEKS100=${SEEKS100:-1000}
  YCSB_OPS=${YCSB_OPS:-5000} NUM_1K=${NUM_1K:-5000} DS_NUM=${DS_NUM:-20000}
  STR_READS=${STR_READS:-5000} STR_NUM=${STR_NUM:-5000}
  BEYOND_NUM=${BEYOND_NUM:-50000} BEYOND_READS=${BEYOND_READS:-5000}
  SERVER_KEYS=${SERVER_KEYS:-20000} SERVER_REQUESTS=${SERVER_REQUESTS:-20000}
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
ROUNDS=${ROUNDS:-1}
STR_READS=${STR_READS:-500000}
STR_NUM=${STR_NUM:-}
BEYOND_NUM=${BEYOND_NUM:-5000000}
BEYOND_READS=${BEYOND_READS:-300000}
BEYOND_DIR=${BEYOND_DIR:-/var/tmp/augur-report-H}
SERVER_KEYS=${SERVER_KEYS:-2000000}
SERVER_REQUESTS=${SERVER_REQUESTS:-1000000}
ALL_SECTIONS="A B C D E F G H I"
SECTIONS=${SECTIONS:-$ALL_SECTIONS}
AUGUR=target/release/augur
AUGUR_SERVER=target/release/augur-server
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
# wants X: is section X among $SECTIONS?
wants() { [[ " $SECTIONS " == *" $1 "* ]]; }
if wants I; then run build-server cargo build --release -p augur-server; fi

# --- machine description (key: value lines, read by report.py) ------------------------------
# The command line that reproduces this run: the size knobs, plus whatever was not a default.
knobs="NUM=$NUM READS=$READS SEEKS100=$SEEKS100 YCSB_OPS=$YCSB_OPS NUM_1K=$NUM_1K CACHE=$CACHE"
knobs+=" ROUNDS=$ROUNDS STR_READS=$STR_READS BEYOND_NUM=$BEYOND_NUM BEYOND_READS=$BEYOND_READS"
knobs+=" SERVER_KEYS=$SERVER_KEYS SERVER_REQUESTS=$SERVER_REQUESTS"
[ "${QUICK:-0}" = 1 ] && knobs="QUICK=1 $knobs"
[ -n "$DS_NUM" ] && knobs+=" DS_NUM=$DS_NUM"
[ -n "$STR_NUM" ] && knobs+=" STR_NUM=$STR_NUM"
[ "$FEATURES_ASKED" = rocksdb,leveldb,fjall ] || knobs+=" FEATURES=$FEATURES_ASKED"
[ "$SECTIONS" = "$ALL_SECTIONS" ] || knobs+=" SECTIONS='$SECTIONS'"
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

# has X: is section X to run? If so, its results of an earlier run ($OUT/X-*: JSON, plots,
# G's and H's directories) are removed first (report.py renders whatever is in $OUT, so
# sections not run keep their earlier results).
has() {
  wants "$1" || return 1
  rm -rf "$OUT/$1"-*
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

# --- G: string keys ------------------------------------------------------------------------------
if has G; then
  sets=""
  for f in package_paths reversed_domains words_en_insane; do
    if [ -e "$DATASETS/$f.txt" ]; then sets+="$DATASETS/$f.txt "; else
      echo "warning: $DATASETS/$f.txt missing; G runs without it" >&2; fi
  done
  sets+="composite:${STR_NUM:-200000} redis:${STR_NUM:-1000000}"
  peers=""  # the peers string_keys_bench.sh knows, when built in
  for p in rocksdb leveldb; do [[ ",$FEATURES," == *,$p,* ]] && peers+="${peers:+ }$p"; done
  fresh_db
  run G-strings env AUGUR="$AUGUR" PEER="${peers:+$AUGUR}" PEERS="$peers" ROUNDS="$ROUNDS" \
    READS="$STR_READS" NUM="$STR_NUM" MODES="never plr auto" SETS="$sets" DB="$DB/G" \
    scripts/string_keys_bench.sh "$OUT/G-strings"
  rm -rf "$DB"
fi

# --- H: storage-resident: direct reads, cache = 25% of the database ------------------------------
if has H; then
  if [[ ",$FEATURES," != *,rocksdb,* ]]; then
    echo "note: RocksDB not built in; section H skipped" >&2
  else
    rm -rf "$BEYOND_DIR"
    run H-beyond python3 scripts/beyond_memory_bench.py --augur "$AUGUR" --peers-bin "$AUGUR" \
      --parts t3 --num "$BEYOND_NUM" --reads "$BEYOND_READS" --rounds "$ROUNDS" \
      --work-dir "$BEYOND_DIR" --out-dir "$OUT/H-beyond"
    rm -rf "$BEYOND_DIR"
  fi
fi

# --- I: augur-server against redis-server ---------------------------------------------------------
if has I; then
  if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null \
      || ! command -v redis-cli >/dev/null; then
    echo "note: redis-server or redis-tools missing (apt-get install redis-server" \
      "redis-tools); section I skipped" >&2
  else
    fresh_db
    run I-server env AUGUR_SERVER="$AUGUR_SERVER" python3 scripts/server_bench.py \
      --phases loaded --loaded-tests get,set,incr,hset,hget --keys "$SERVER_KEYS" \
      --requests "$SERVER_REQUESTS" --rounds "$ROUNDS" --dir "$DB/I" --out "$OUT/I-server.json"
    rm -rf "$DB"
  fi
fi

# --- report ------------------------------------------------------------------------------------
run report python3 scripts/report.py "$OUT" "$REPORT"
echo "wrote $REPORT (data in $OUT)" >&2
