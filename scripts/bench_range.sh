#!/usr/bin/env bash
# Issue 10's measurements in one command: builds `augur` with the peers (RocksDB, LevelDB,
# fjall; see the README's bench section for the packages they need), then runs
# scripts/range_bench.py, which measures range queries against the peers, learned vs
# baseline seeks, value-log readahead (cold and warm) and parallel scans, keeps every JSON
# record in docs/benchmarks/range/ and renders docs/benchmarks/range-queries.md.
#
# Usage: scripts/bench_range.sh                    # the full run (about 2 hours here)
#        QUICK=1 OUT=/tmp/rq REPORT=/tmp/rq/r.md scripts/bench_range.sh   # pipeline smoke test
# Env:   SECTIONS (default "A B C D E F"), ROUNDS (5), NUM (10000000), NUM_1K (1000000),
#        E_NUM (5000000), OPS (200000), DB (/dev/shm/augur-range), DISK_DB (a directory on
#        disk for section D, default ../augur-range-disk), DATASETS (../shared/datasets),
#        FEATURES (rocksdb,leveldb,fjall). Section D drops the page cache (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
FEATURES=${FEATURES-rocksdb,leveldb,fjall}
export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/peers}
cargo build --release -p augur-cli ${FEATURES:+--features "$FEATURES"}
export AUGUR="$CARGO_TARGET_DIR/release/augur"
exec python3 scripts/range_bench.py
