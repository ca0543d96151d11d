#!/usr/bin/env bash
# The decompressed value-chunk cache (issue 41 item 3): readrandom with lz4 against none, for
# a build before the cache (BASE) and one with it (NEW), in alternating rounds, on the string
# key sets; the summary gives per set and build the median micros/op and lz4 / none.
#
# Usage: scripts/chunk_cache_bench.sh [OUT]   (OUT: a directory for the rows and the summary,
# default target/chunk-cache)
# Rows (OUT/runs.tsv): round, set, build, codec, first and second readrandom micros/op, the
# second's CPU micros/op, the lz4 chunk-cache hit ratio, and the load average at the end.
# Knobs (environment): BASE (a binary of the starting build, required), NEW
# (target/release/augur), ROUNDS (2), READS (500000), CACHE_MB (128; empty: the bench's
# default, db_bench's 8 MiB), SETS (the three shared string sets), REALTIME (1: every run
# under `chrt -f 50`, SCHED_FIFO, root only: steadier ratios on a machine busy with other
# work).
#
# Each round runs, per set, in order: BASE none, BASE lz4, NEW none, NEW lz4, each on a fresh
# database:
#   augur bench --keys-text SET --benchmarks fillrandom,compact,readrandom,readrandom,stats
#       --value_size 100 --value-separation-threshold 1024 --reads READS
#       --compression_ratio 0.5 --compression_type CODEC [--cache-mb CACHE_MB]
# (compacted, mmap reads; values compressible to half, as db_bench makes them). The first
# readrandom starts with an empty chunk cache (it includes the cache's warm-up), the second
# reads with what the first left in it (the hot set cached).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/chunk-cache}
BASE=${BASE:?set BASE to a binary of the starting build}
NEW=${NEW:-target/release/augur}
ROUNDS=${ROUNDS:-2}
READS=${READS:-500000}
CACHE_MB=${CACHE_MB-128}
DATA=../shared/datasets
SETS=${SETS:-"$DATA/package_paths.txt $DATA/reversed_domains.txt $DATA/words_en_insane.txt"}
DB=${DB:-/tmp/augur-chunk-cache-db}
RUN=()
[ "${REALTIME:-0}" = 1 ] && RUN=(chrt -f 50)
mkdir -p "$OUT"
cache_flags=""
[ -n "$CACHE_MB" ] && cache_flags="--cache-mb $CACHE_MB"

LOG="$OUT/runs.tsv"
: >"$LOG"
for round in $(seq 1 "$ROUNDS"); do
  for set in $SETS; do
    for build in base new; do
      bin=$BASE
      [ "$build" = new ] && bin=$NEW
      for codec in none lz4; do
        rm -rf "$DB"
        # shellcheck disable=SC2086
        text=$("${RUN[@]}" "$bin" bench --keys-text "$set" --benchmarks fillrandom,compact,readrandom,readrandom,stats \
          --value_size 100 --value-separation-threshold 1024 --reads "$READS" \
          --compression_ratio 0.5 --compression_type "$codec" $cache_flags --db "$DB" 2>&1) ||
          { echo "$text" >&2; exit 1; }
        cold_us=$(echo "$text" | awk '$1 == "readrandom" && $2 == ":" {print $3}' | head -1)
        hot_us=$(echo "$text" | awk '$1 == "readrandom" && $2 == ":" {print $3}' | tail -1)
        # The process's CPU seconds during the hot readrandom (less sensitive than wall time
        # to other jobs on the machine), as micros per read.
        hot_cpu=$(echo "$text" | sed -n 's/^readrandom .* cpu_s=\([0-9.]*\).*/\1/p' | tail -1)
        hot_cpu_us=$(python3 -c "print(f'{$hot_cpu * 1e6 / $READS:.3f}')")
        hit=$(echo "$text" | sed -n 's/^readrandom .*chunk_cache_hit_ratio=\([0-9.]*\).*/\1/p' | tail -1)
        name=$(basename "$set" .txt)
        load=$(cut -d' ' -f1 /proc/loadavg)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$build" "$codec" \
          "$cold_us" "$hot_us" "$hot_cpu_us" "${hit:--}" "$load" | tee -a "$LOG"
      done
    done
  done
done

python3 - "$LOG" <<'PY' | tee "$OUT/summary.md"
import statistics, sys
from collections import defaultdict
runs = defaultdict(list)
hits = {}
for line in open(sys.argv[1]):
    r, s, b, c, cold, hot, cpu, hit, load = line.rstrip("\n").split("\t")
    runs[(s, b, c)].append((float(cold), float(hot), float(cpu)))
    if hit != "-":
        hits[(s, b, c)] = hit
sets = list(dict.fromkeys(s for s, _, _ in runs))
med = lambda xs, i: statistics.median(x[i] for x in xs)
print("| key set | build | none us (1st / 2nd / 2nd CPU) | lz4 us (1st / 2nd / 2nd CPU) | lz4 / none, 1st | lz4 / none, 2nd (per round) | lz4 / none, 2nd CPU | lz4 hit ratio, 2nd |")
print("|---|---|---|---|---|---|---|---|")
for s in sets:
    for b in ("base", "new"):
        none, lz4 = runs[(s, b, "none")], runs[(s, b, "lz4")]
        per = " ".join(f"{l[1] / n[1]:.2f}" for n, l in zip(none, lz4))
        print(f"| {s} | {b} | {med(none, 0):.3f} / {med(none, 1):.3f} / {med(none, 2):.3f} "
              f"| {med(lz4, 0):.3f} / {med(lz4, 1):.3f} / {med(lz4, 2):.3f} "
              f"| {med(lz4, 0) / med(none, 0):.2f}x | {med(lz4, 1) / med(none, 1):.2f}x ({per}) "
              f"| {med(lz4, 2) / med(none, 2):.2f}x | {hits.get((s, b, 'lz4'), '-')} |")
PY
