#!/usr/bin/env bash
# Issue 3 "Measure and report": point lookups on the baseline path vs the learned (Greedy-PLR)
# path, on the SAME database per dataset. For each dataset: load once (values separated,
# --value-separation-threshold=0, 64-byte values, --learning=at-build --index=plr), compact,
# time PLR training per key (`augur bench --benchmarks=train`), then run readrandom with
# --learning=never (baseline) and --learning=at-build (model), alternating (never, at-build,
# never, at-build) and averaging each path's two runs. Prints one markdown table and the
# geometric-mean speedup; raw JSON and logs stay in $WORK.
#
# Usage: scripts/bench_learned.sh
# Env:   NUM     keys of the synthetic datasets (default 10000000)
#        READS   lookups per readrandom run (default 2000000)
#        DATASETS directory of the real datasets (default ../shared/datasets, beside the repo)
#        WORK    scratch directory (default /tmp/augur-learned); AUGUR the binary
#        ONLY    space-separated subset of dataset names to run
# Needs: a release build (cargo build --release -p augur-cli) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
AUGUR=${AUGUR:-target/release/augur}
NUM=${NUM:-10000000}
READS=${READS:-2000000}
DATASETS=${DATASETS:-../shared/datasets}
WORK=${WORK:-/tmp/augur-learned}
mkdir -p "$WORK"

# name, then the key-source flags
SETS=(
  "linear|--distribution=linear --num=$NUM"
  "seg1|--distribution=seg1 --num=$NUM"
  "seg10|--distribution=seg10 --num=$NUM"
  "normal|--distribution=normal --num=$NUM"
  "ipv4_asn|--keys=$DATASETS/ipv4_asn.u64"
  "flights_events_ts|--keys=$DATASETS/flights_events_ts.u64"
  "geonames_cities_s2cells|--keys=$DATASETS/geonames_cities_s2cells.u64"
  "phone_prefixes|--keys=$DATASETS/phone_prefixes.u64"
  "words_en_insane|--keys-text=$DATASETS/words_en_insane.txt"
)
COMMON=(--key_size=16 --value_size=64 --value-separation-threshold=0 --index=plr --seed=301)

for entry in "${SETS[@]}"; do
  name=${entry%%|*}
  src=${entry#*|}
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  db="$WORK/db-$name"
  rm -rf "$db"
  echo "== $name: load" >&2
  # shellcheck disable=SC2086
  "$AUGUR" bench --db "$db" $src "${COMMON[@]}" --learning=at-build --load-order=random \
    --benchmarks=fillrandom,compact,train --json="$WORK/$name-load.json" >"$WORK/$name-load.log"
  for round in 1 2; do
    for learning in never at-build; do
      echo "== $name: readrandom $learning (round $round)" >&2
      # shellcheck disable=SC2086
      "$AUGUR" bench --db "$db" $src "${COMMON[@]}" --learning="$learning" --use_existing_db \
        --histogram --reads="$READS" --benchmarks=readrandom \
        --json="$WORK/$name-read-$learning-$round.json" >"$WORK/$name-read-$learning-$round.log"
    done
  done
  "$AUGUR" --db "$db" --learning=at-build stats --json >"$WORK/$name-stats.json"
  rm -rf "$db"
done

python3 - "$WORK" "${ONLY:-}" "${SETS[@]}" <<'PY'
import json, math, os, sys
work, only, sets = sys.argv[1], sys.argv[2].split(), [s.split("|")[0] for s in sys.argv[3:]]
def load(path):
    with open(path) as f:
        return json.load(f)
rows, speedups = [], []
print("| dataset | keys | baseline avg µs | model avg µs | speedup | baseline p99 µs | model p99 µs "
      "| found | segments/file | model B/key | fence+filter B/key | train ns/key | train segments |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name in sets:
    if only and name not in only:
        continue
    load_recs = load(os.path.join(work, f"{name}-load.json"))
    keys = next(r for r in load_recs if r["benchmark"] == "fillrandom")["ops"]
    train = next(r for r in load_recs if r["benchmark"] == "train")
    res = {}
    for learning in ("never", "at-build"):
        runs = [load(os.path.join(work, f"{name}-read-{learning}-{i}.json"))[0] for i in (1, 2)]
        res[learning] = (
            sum(r["micros_per_op"] for r in runs) / 2,
            sum(r["p99_us"] for r in runs) / 2,
            min(r["found"] for r in runs) / runs[0]["ops"],
        )
    stats = load(os.path.join(work, f"{name}-stats.json"))
    lv = stats["levels"]
    entries = sum(l["entries"] for l in lv)
    learned = sum(l["files_with_model"] for l in lv)
    seg_per_file = sum(l["model_segments"] for l in lv) / max(learned, 1)
    model_bpk = sum(l["model_bytes"] for l in lv) / max(entries, 1)
    fence_bpk = sum(l["index_bytes"] for l in lv) / max(entries, 1)
    (b_avg, b_p99, b_found), (m_avg, m_p99, m_found) = res["never"], res["at-build"]
    speedup = b_avg / m_avg
    speedups.append(speedup)
    print(f"| {name} | {keys} | {b_avg:.3f} | {m_avg:.3f} | {speedup:.2f}× | {b_p99:.2f} | {m_p99:.2f} "
          f"| {min(b_found, m_found):.0%} | {seg_per_file:.0f} ({learned} files) | {model_bpk:.3f} "
          f"| {fence_bpk:.3f} | {train['train_ns_per_key']:.1f} | {train['segments']} |")
if speedups:
    g = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    print(f"\nGeometric-mean speedup (model path vs baseline path, {len(speedups)} datasets): {g:.2f}×")
PY
