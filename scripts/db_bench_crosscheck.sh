#!/usr/bin/env bash
# Issue 5: cross-checks the harness against RocksDB's own benchmark. Runs Debian's RocksDB
# `db_bench` (package rocksdb-tools) and `augur bench --engine=rocksdb` with the same flags
# (db_bench's names, accepted by both: benchmarks, num, reads, key and value size, 10 bloom
# bits, no compression, block cache, 64 MiB write buffer, seed), databases in memory, and
# prints a markdown table: benchmark, db_bench µs/op, harness-on-RocksDB µs/op, their ratio,
# and the found counts of both. A ratio near 1 says the harness's RocksDB adapter and key
# stream measure what db_bench measures. The exact commands are printed above the table.
#
# Usage: scripts/db_bench_crosscheck.sh [MARKDOWN_FILE]     (default: stdout)
# Env:   NUM    keys (default 1000000)
#        READS  lookups / seeks per read benchmark (default 1000000)
#        CACHE  block cache bytes, --cache_size (default 1 GiB)
#        DB     database directory (default /dev/shm/augur-dbbench; removed at the end)
#        WORK   raw db_bench output and harness JSON/log (default /tmp/augur-dbbench)
#        AUGUR  the binary, built with --features rocksdb (default target/release/augur)
# Needs: db_bench on PATH (apt-get install rocksdb-tools), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=${NUM:-1000000}
READS=${READS:-1000000}
CACHE=${CACHE:-$((1 << 30))}
DB=${DB:-/dev/shm/augur-dbbench}
WORK=${WORK:-/tmp/augur-dbbench}
AUGUR=${AUGUR:-target/release/augur}
MD=${1:-/dev/stdout}
mkdir -p "$WORK"

command -v db_bench >/dev/null || { echo "db_bench not on PATH (apt-get install rocksdb-tools)" >&2; exit 2; }

# Flags both accept (checked against `db_bench --help` and `augur bench --help`; the harness
# takes --bloom_bits as a global engine flag).
FLAGS=(--benchmarks=fillrandom,compact,readrandom,readmissing,seekrandom --num="$NUM"
       --reads="$READS" --key_size=16 --value_size=64 --bloom_bits=10 --compression_type=none
       --cache_size="$CACHE" --write_buffer_size=67108864 --seed=301)
DBB=(db_bench --db="$DB/db_bench" "${FLAGS[@]}")
HAR=("$AUGUR" bench --engine=rocksdb --db="$DB/harness" "${FLAGS[@]}" --json="$WORK/harness-rocksdb.json")

rm -rf "$DB"; mkdir -p "$DB"
echo "== db_bench" >&2
"${DBB[@]}" >"$WORK/db_bench.log" 2>&1
rm -rf "$DB/db_bench"
echo "== augur bench --engine=rocksdb" >&2
"${HAR[@]}" >"$WORK/harness-rocksdb.log" 2>&1
rm -rf "$DB"

# quote, run: scripts/lib/commands.sh
. scripts/lib/commands.sh  # the scripts run from the repository root

version=$(dpkg-query -W -f='${Package} ${Version}' rocksdb-tools 2>/dev/null || echo "db_bench")
python3 - "$WORK/db_bench.log" "$WORK/harness-rocksdb.json" "$version" \
  "$(quote "${DBB[@]}")" "$(quote "${HAR[@]}")" >"$MD" <<'PY'
import json, re, sys
log, harness_json, version, dbb_cmd, har_cmd = sys.argv[1:6]
# db_bench prints `name : X micros/op N ops/sec ... (F of N found)` per benchmark; progress
# messages may precede it on the same line, hence search, not match.
line_re = re.compile(r"(\w+)\s+:\s+([\d.]+) micros/op.*?(?:\((\d+) of \d+ found\))?\s*$")
dbb = {}
for line in open(log, errors="replace"):
    for part in line.split("\r"):
        m = line_re.search(part)
        if m:
            dbb[m.group(1)] = (float(m.group(2)), m.group(3))
har = {r["benchmark"]: r for r in json.load(open(harness_json))}
print(f"Same flags, same machine, one run each: `db_bench` of {version} and "
      "`augur bench --engine=rocksdb` (the rocksdb crate linked against the same librocksdb).\n")
print("```sh")
print(dbb_cmd.strip())
print(har_cmd.strip())
print("```\n")
print("| benchmark | db_bench µs/op | harness-on-RocksDB µs/op | ratio (harness / db_bench) "
      "| found (db_bench / harness) |")
print("|---|---|---|---|---|")
for name in ["fillrandom", "compact", "readrandom", "readmissing", "seekrandom"]:
    d, h = dbb.get(name), har.get(name)
    d_us = f"{d[0]:.3f}" if d else "-"
    h_us = f"{h['micros_per_op']:.3f}" if h else "-"
    ratio = f"{h['micros_per_op'] / d[0]:.2f}" if d and h and d[0] > 0 else "-"
    found = "-"
    if (d and d[1] is not None) or (h and h.get("found") is not None):
        found = f"{d[1] if d and d[1] is not None else '-'} / " \
                f"{h.get('found') if h and h.get('found') is not None else '-'}"
    print(f"| {name} | {d_us} | {h_us} | {ratio} | {found} |")
print("\nfound of seekrandom: db_bench counts seeks landing on the very key sought, the harness "
      "seeks that find any entry at or after it.")
PY
echo "== cross-check written (raw output in $WORK)" >&2
