#!/usr/bin/env bash
# Issue 3 "Measure and report": mixed workloads (Bourbon Figure 13). For each write share
# (1%, 5%, 50%) and learning policy (never, always, cost-benefit, at-build): fill NUM keys
# (16-byte keys, 64-byte values, all separated as in Bourbon) under the policy, then run NUM
# operations of readrandomwriterandom with --readwritepercent = 100 - writes. Reports the
# mixed phase's foreground time, the learning time spent meanwhile (background models plus
# models trained inside flush/compaction), total work = foreground + learning, and the
# fraction of internal (SSTable) lookups served on the model path.
#
# Usage: scripts/bench_mixed.sh          Env: NUM (default 1000000), AUGUR (the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
AUGUR=${AUGUR:-target/release/augur}
NUM=${NUM:-1000000}
WORK=${WORK:-/tmp/augur-mixed}
mkdir -p "$WORK"
echo "| writes | policy | foreground s | learning s | total work s | model-path lookups | µs/op |"
echo "|---|---|---|---|---|---|---|"
for writes in 1 5 50; do
  for policy in never always cost-benefit at-build; do
    out="$WORK/mixed-$writes-$policy.json"
    "$AUGUR" bench --num="$NUM" --reads="$NUM" --key_size=16 --value_size=64 \
      --value-separation-threshold=0 --index=plr --learning="$policy" --seed=301 \
      --readwritepercent=$((100 - writes)) --benchmarks=fillrandom,readrandomwriterandom \
      --json="$out" >/dev/null
    python3 - "$out" "$writes" "$policy" <<'PY'
import json, sys
r = [x for x in json.load(open(sys.argv[1])) if x["benchmark"] == "readrandomwriterandom"][0]
print(f"| {sys.argv[2]}% | {sys.argv[3]} | {r['foreground_s']:.3f} | {r['learning_s']:.3f} | "
      f"{r['total_work_s']:.3f} | {100 * r['model_path_fraction']:.1f}% | {r['micros_per_op']:.3f} |")
PY
  done
done
