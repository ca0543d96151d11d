#!/usr/bin/env bash
# Same-run A/B of two builds on db_bench's 16-byte keys (issue 41): the read and write paths
# of this checkout against a pinned older build, in alternating rounds, so every format or
# read-path change is measured the same way against the same base.
#
# Usage: scripts/ab_builds.sh [OUT]   (OUT: a directory for logs and the summary, default
# target/ab-builds)
# Knobs (environment):
#   BASE    the pinned old build (default 81484a7: the build that ended the first round of
#           work, format 1, before the server, formats 2-4 and the page cache; c487889 is the
#           last format-1 build, a bisect's other end)
#   NEW     the new build's binary (default target/release/augur, built when missing)
#   NUMS    key counts (default "2000000 10000000"); ROUNDS (3); READS (1000000)
#   PATHS   read paths per build (default "learned never": --learning never is the baseline)
#   EXTRA   flags added to every run of both builds
#   REALTIME=1  runs each bench under `chrt -f 50` (SCHED_FIFO; root or CAP_SYS_NICE): on a
#           machine busy with other work its threads run whenever ready, which cuts the
#           round-to-round spread (session 31); shared caches and memory stay shared
#
# The base is built once into target/ab/<commit> from a detached git worktree (its own
# target directory), and reused. Each round runs, for each key count, path and build in
# turn, on a fresh database:
#   augur bench --num N --key_size 16 --value_size 100 --value-separation-threshold 1024
#       --benchmarks fillrandom,compact,readrandom,seekrandom --reads READS --seek_nexts 10
#       [--learning never] --db DB
# (compacted, in memory: mmap reads, the default of both builds). The summary gives per key
# count and path the median micros/op of each benchmark for base and new and new / base
# (below 1: the new build is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-target/ab-builds}
BASE=${BASE:-81484a7}
NEW=${NEW:-target/release/augur}
NUMS=${NUMS:-"2000000 10000000"}
ROUNDS=${ROUNDS:-3}
READS=${READS:-1000000}
PATHS=${PATHS:-"learned never"}
EXTRA=${EXTRA:-}
RUN=()
[ "${REALTIME:-0}" = 1 ] && RUN=(chrt -f 50)
DB=${DB:-/tmp/augur-ab-db}
mkdir -p "$OUT"

base_sha=$(git rev-parse --short=12 "$BASE^{commit}")
base_dir="$ROOT/target/ab/$base_sha"
base_bin="$base_dir-target/release/augur"
if [ ! -x "$base_bin" ]; then
  if [ ! -d "$base_dir" ]; then
    git worktree add --detach "$base_dir" "$base_sha" >/dev/null
  fi
  (cd "$base_dir" && CARGO_TARGET_DIR="$base_dir-target" cargo build --release -q -p augur-cli)
fi
[ -x "$NEW" ] || cargo build --release -q -p augur-cli
new_sha=$(git rev-parse --short=12 HEAD)
git diff --quiet HEAD -- crates || new_sha="$new_sha+dirty"
echo "base $base_sha ($base_bin), new $new_sha ($NEW), realtime ${REALTIME:-0}" | tee "$OUT/builds.txt"

LOG="$OUT/runs.tsv"
: >"$LOG"
for round in $(seq 1 "$ROUNDS"); do
  for num in $NUMS; do
    for path in $PATHS; do
      path_flags=""
      [ "$path" = never ] && path_flags="--learning never"
      for build in base new; do
        bin=$NEW
        [ "$build" = base ] && bin=$base_bin
        rm -rf "$DB"
        # shellcheck disable=SC2086
        text=$("${RUN[@]}" "$bin" bench --num "$num" --key_size 16 --value_size 100 \
          --value-separation-threshold 1024 \
          --benchmarks fillrandom,compact,readrandom,seekrandom --reads "$READS" \
          --seek_nexts 10 $path_flags $EXTRA --db "$DB" 2>&1) || { echo "$text" >&2; exit 1; }
        for bench in fillrandom readrandom seekrandom; do
          us=$(echo "$text" | awk -v b="$bench" '$1 == b && $2 == ":" {print $3}' | tail -1)
          printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$num" "$path" "$build" "$bench" "$us" |
            tee -a "$LOG"
        done
      done
    done
  done
done
rm -rf "$DB"

python3 - "$LOG" <<'PY' | tee "$OUT/summary.md"
import statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    _, num, path, build, bench, us = line.rstrip("\n").split("\t")
    runs[(int(num), path, bench, build)].append(float(us))
print("| keys | path | benchmark | base us/op (median) | new us/op (median) | new / base | rounds |")
print("|---|---|---|---|---|---|---|")
for (num, path, bench, build) in dict.fromkeys(runs):
    if build != "base":
        continue
    b = statistics.median(runs[(num, path, bench, "base")])
    n = statistics.median(runs.get((num, path, bench, "new"), [float("nan")]))
    k = len(runs[(num, path, bench, "base")])
    print(f"| {num} | {path} | {bench} | {b:.3f} | {n:.3f} | {n / b:.2f}x | {k} |")
PY
