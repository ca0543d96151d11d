#!/usr/bin/env bash
# Issue 2 baseline: Augur's (non-learned) engine vs RocksDB's own db_bench (Debian package
# rocksdb-tools), same machine, same key count, key/value sizes, bloom bits, no compression.
# Runs each configuration for both engines back to back and prints a markdown table.
#
# Usage: scripts/bench_baseline.sh [NUMS...]      (default: 1000000 10000000)
# Needs: a release build (cargo build --release -p augur-cli) and /usr/bin/db_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
AUGUR=${AUGUR:-target/release/augur}
DB_BENCH=${DB_BENCH:-db_bench}
WORK=${WORK:-/tmp/augur-baseline}
NUMS=("${@:-1000000 10000000}")
[ $# -eq 0 ] && NUMS=(1000000 10000000)
mkdir -p "$WORK"

# augur_run NAME NUM VALUE_SIZE THRESHOLD BENCHMARKS -> prints "bench micros_per_op wa" lines
augur_run() {
  local num=$2 vsize=$3 thr=$4 benches=$5 out="$WORK/augur-$1.json"
  rm -rf "$WORK/adb"
  "$AUGUR" bench --db "$WORK/adb" --num="$num" --key_size=16 --value_size="$vsize" \
    --bloom_bits=10 --compression_type=none --value-separation-threshold="$thr" \
    --benchmarks="$benches" --json="$out" >/dev/null
  python3 - "$out" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    wa = r.get("write_amplification")
    print(r["benchmark"], f'{r["micros_per_op"]:.3f}', "" if wa is None else f"{wa:.2f}")
PY
}

# rocks_run NUM VALUE_SIZE EXTRA_FLAGS BENCHMARKS -> same line format
rocks_run() {
  local num=$1 vsize=$2 extra=$3 benches=$4 log="$WORK/rocks.log"
  rm -rf "$WORK/rdb"
  # shellcheck disable=SC2086
  "$DB_BENCH" --db="$WORK/rdb" --num="$num" --key_size=16 --value_size="$vsize" \
    --bloom_bits=10 --compression_type=none --statistics=1 --benchmarks="$benches" $extra >"$log" 2>&1
  python3 - "$log" "$num" "$vsize" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
num, vsize = int(sys.argv[2]), int(sys.argv[3])
def stat(name):
    m = re.search(r"^rocksdb\.%s COUNT : (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else 0
# Integrated BlobDB writes blob files during flush and compaction, and counts them in
# flush/compact.write.bytes already.
written = sum(stat(n) for n in ["wal.bytes", "flush.write.bytes", "compact.write.bytes"])
user = num * (16 + vsize)
for m in re.finditer(r"^(\w+)\s*:\s*([\d.]+) micros/op", text, re.M):
    wa = f"{written / user:.2f}" if m.group(1).startswith("fill") else ""
    print(m.group(1), f"{float(m.group(2)):.3f}", wa)
PY
}

echo "| keys | value | config | engine | benchmark | micros/op | write amp |"
echo "|---|---|---|---|---|---|---|"
emit() { while read -r b us wa; do echo "| $1 | $2 | $3 | $4 | $b | $us | $wa |"; done; }
for num in "${NUMS[@]}"; do
  augur_run inline "$num" 64 1000000000 fillrandom,readrandom,readseq | emit "$num" 64 inline augur
  augur_run sep "$num" 64 0 fillrandom,readrandom,readseq | emit "$num" 64 separated augur
  rocks_run "$num" 64 "" fillrandom,readrandom,readseq | emit "$num" 64 default rocksdb
done
augur_run sep1k 1000000 1024 1024 fillrandom,readrandom | emit 1000000 1024 separated augur
rocks_run 1000000 1024 "" fillrandom,readrandom | emit 1000000 1024 default rocksdb
rocks_run 1000000 1024 "--enable_blob_files=true --min_blob_size=1024" fillrandom,readrandom \
  | emit 1000000 1024 blobdb rocksdb
