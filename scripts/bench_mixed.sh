#!/usr/bin/env bash
# Issue 3 "Measure and report": mixed workloads (Bourbon Figure 13). For each write share
# (WRITES, default 1 5 50) and learning policy (never, always, cost-benefit, at-build): fill NUM
# keys (16-byte keys, 64-byte values, all separated as in Bourbon) under the policy, then run
# NUM operations of readrandomwriterandom with --readwritepercent = 100 - writes. Reports the
# mixed phase's foreground time, the learning time spent meanwhile (background models plus
# models trained inside flush/compaction), total work = foreground + learning, and the
# fraction of internal (SSTable) lookups served on the model path. With REPS > 1 every
# configuration runs REPS times (policies interleaved within each repetition, so machine
# noise hits them alike) and the table shows mean ± standard deviation.
#
# Usage: scripts/bench_mixed.sh
# Env:   NUM (default 1000000), REPS (default 1), WRITES, POLICIES, INDEX (default plr), AUGUR,
#        EXTRA (more bench flags, e.g. "--memtable-mb=4 --target-file-mb=4"), WORK
set -euo pipefail
cd "$(dirname "$0")/.."
AUGUR=${AUGUR:-target/release/augur}
NUM=${NUM:-1000000}
REPS=${REPS:-1}
WRITES=${WRITES:-"1 5 50"}
POLICIES=${POLICIES:-"never always cost-benefit at-build"}
INDEX=${INDEX:-plr}
EXTRA=${EXTRA:-}
WORK=${WORK:-/tmp/augur-mixed}
mkdir -p "$WORK"
rm -f "$WORK"/mixed-*.json
for writes in $WRITES; do
  for rep in $(seq 1 "$REPS"); do
    for policy in $POLICIES; do
      echo "== writes $writes% $policy (rep $rep)" >&2
      # shellcheck disable=SC2086
      "$AUGUR" bench --num="$NUM" --reads="$NUM" --key_size=16 --value_size=64 \
        --value-separation-threshold=0 --index="$INDEX" --learning="$policy" --seed=301 \
        --readwritepercent=$((100 - writes)) --benchmarks=fillrandom,readrandomwriterandom \
        $EXTRA --json="$WORK/mixed-$writes-$policy-$rep.json" >/dev/null
    done
  done
done
python3 - "$WORK" "$WRITES" "$POLICIES" <<'PY'
import glob, json, statistics, sys
work, writes, policies = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def fmt(xs, pct=False):
    m = statistics.mean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    if pct:
        return f"{100*m:.1f}%"
    return f"{m:.3f}" + (f" ± {sd:.3f}" if len(xs) > 1 else "")
print("| writes | policy | runs | foreground s | learning s | total work s | model-path lookups | µs/op |")
print("|---|---|---|---|---|---|---|---|")
for w in writes:
    for p in policies:
        rs = []
        for f in sorted(glob.glob(f"{work}/mixed-{w}-{p}-*.json")):
            rs += [x for x in json.load(open(f)) if x["benchmark"] == "readrandomwriterandom"]
        if not rs:
            continue
        col = lambda k: [r[k] for r in rs]
        print(f"| {w}% | {p} | {len(rs)} | {fmt(col('foreground_s'))} | {fmt(col('learning_s'))} | "
              f"{fmt(col('total_work_s'))} | {fmt(col('model_path_fraction'), True)} | "
              f"{fmt(col('micros_per_op'))} |")
# The whole run: the fill (write-only: whatever a policy learns there is learned for
# files that serve no lookup during it) plus the mixed phase.
print()
print("Whole run (fill + mixed phase):")
print()
print("| writes | policy | runs | foreground s | learning s | total work s |")
print("|---|---|---|---|---|---|")
for w in writes:
    for p in policies:
        fg, lr = [], []
        for f in sorted(glob.glob(f"{work}/mixed-{w}-{p}-*.json")):
            runs = {x["benchmark"]: x for x in json.load(open(f))}
            fill, mixed = runs.get("fillrandom"), runs.get("readrandomwriterandom")
            if not fill or not mixed:
                continue
            fill_learning = sum(fill.get(k, 0.0) for k in
                                ("learning_s", "flush_training_s", "compaction_training_s"))
            fg.append(fill["seconds"] + mixed["foreground_s"])
            lr.append(fill_learning + mixed["learning_s"])
        if fg:
            print(f"| {w}% | {p} | {len(fg)} | {fmt(fg)} | {fmt(lr)} | "
                  f"{fmt([a + b for a, b in zip(fg, lr)])} |")
PY
