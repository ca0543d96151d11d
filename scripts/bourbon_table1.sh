#!/usr/bin/env bash
# Bourbon Table 1 (OSDI'20 §4.3; issue 45 item 3): file models against level models, read-only
# and mixed (5% and 50% writes), at increasing files per level, on shared key sets.
#
# Usage: scripts/bourbon_table1.sh [OUT]   (OUT: a directory for the rows and the summary,
# default target/bourbon-table1)
# Knobs (environment): AUGUR (target/release/augur), SETS (ipv4_asn.u64, flights_events_ts.u64
# and words_en_insane.txt of /work/shared/datasets; *.u64 load with --keys, others with
# --keys-text), TARGETS (target file MiB, "64 8 1": few -> many files in the last level),
# OPS (operations of each workload, 1000000), ROUNDS (2), WORKLOADS ("readrandom rw95 rw50"), VALUE_SIZE (200, inline values),
# MEMTABLE_MB (4, LevelDB's default write buffer, so that the mixed workloads flush and compact
# while they run), DB (/dev/shm/augur-bourbon-table1: the databases, on tmpfs), REALTIME (1:
# every run under `chrt -f 50`, SCHED_FIFO, root only).
#
# Per set and target, one load (at-build models, leveled compaction):
#   augur bench --db DB/load --keys[-text] SET --value_size VALUE_SIZE
#       --value-separation-threshold 1000000 --memtable-mb MEMTABLE_MB --target-file-mb T
#       --benchmarks fillrandom,compact,waitforcompaction,stats
# then, per round, mode and workload, a copy of it (a fresh database every run) opened with
# --use_existing_db and the mode's flags:
#   baseline: --learning never                      (fence pointers + binary search)
#   file:     default at-build                      (the files' own models)
#   level:    --level-models, `learn` first          (one model per sorted level; `learn`
#                                                    trains it before the workload starts)
# and one workload: readrandom (read-only, OPS reads) or readrandomwriterandom with
# --readwritepercent 95 or 50 (OPS operations; writes overwrite keys of the set). The modes
# alternate order between rounds (round 1 baseline,file,level; round 2 level,file,baseline).
#
# Rows (OUT/runs.tsv): round, set, target_mb, files (files per level after the load, e.g.
# L6:87), mode, workload, micros_per_op, model_share (table lookups on any model path),
# level_share (table lookups through a level model), level_models_built (during the run,
# including the one `learn` trains), level_models_refused (of those, refused because too few
# keys have distinct projections: LevelModel::usable), level_train_ms (their training time), flushes and
# compactions during the run, files_end (files per level at the end), load (1-minute load
# average at the end).
# Summary (OUT/summary.md): per set, target and workload, the median micros/op of each mode,
# the speedups over baseline, and the model and level-model shares, Table 1's columns.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/bourbon-table1}
AUGUR=${AUGUR:-target/release/augur}
DATA=${DATA:-/work/shared/datasets}
SETS=${SETS:-"$DATA/ipv4_asn.u64 $DATA/flights_events_ts.u64 $DATA/words_en_insane.txt"}
TARGETS=${TARGETS:-"64 8 1"}
OPS=${OPS:-1000000}
ROUNDS=${ROUNDS:-2}
WORKLOADS=${WORKLOADS:-"readrandom rw95 rw50"}
VALUE_SIZE=${VALUE_SIZE:-200}
MEMTABLE_MB=${MEMTABLE_MB:-4}
DB=${DB:-/dev/shm/augur-bourbon-table1}
RUN=()
[ "${REALTIME:-0}" = 1 ] && RUN=(chrt -f 50)
mkdir -p "$OUT" "$DB"
ROWS="$OUT/runs.tsv"
printf 'round\tset\ttarget_mb\tfiles\tmode\tworkload\tmicros_per_op\tmodel_share\tlevel_share\tlevel_models_built\tlevel_models_refused\tlevel_train_ms\tflushes\tcompactions\tfiles_end\tload\n' >"$ROWS"

# Prints the wanted fields of a bench JSON file: the record of benchmark $2 with its stats.
fields() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
recs = json.load(open(sys.argv[1]))
rec = [r for r in recs if r["benchmark"] == sys.argv[2]][-1]
s = rec["stats"]
l = s["learning"]
c = s["counters"]
total = l["model_path_lookups"] + l["baseline_path_lookups"]
files = ",".join(f"L{x['level']}:{x['files']}" for x in s["levels"] if x["files"])
print("\t".join([
    f"{rec['micros_per_op']:.4f}",
    f"{l['model_path_lookups'] / max(total, 1):.4f}",
    f"{l['level_model_lookups'] / max(total, 1):.4f}",
    str(l["level_models_built"]),
    str(l["level_models_refused"]),
    f"{l['level_model_train_ns'] / 1e6:.1f}",
    str(c["flushes"]),
    str(c["compactions"]),
    files,
]))
EOF
}

for set in $SETS; do
  name=$(basename "$set")
  name=${name%.*}
  case "$set" in
    *.u64) src=(--keys "$set") ;;
    *) src=(--keys-text "$set") ;;
  esac
  for t in $TARGETS; do
    common=("${src[@]}" --value_size "$VALUE_SIZE" --value-separation-threshold 1000000
      --memtable-mb "$MEMTABLE_MB" --target-file-mb "$t")
    rm -rf "$DB/load"
    "$AUGUR" bench --db "$DB/load" "${common[@]}" \
      --benchmarks fillrandom,compact,waitforcompaction,stats --json "$DB/load.json" >/dev/null
    files=$(python3 -c "
import json
r = [r for r in json.load(open('$DB/load.json')) if 'stats' in r][-1]['stats']
print(','.join(f\"L{x['level']}:{x['files']}\" for x in r['levels'] if x['files']))")
    echo "== $name target ${t} MiB: $files" >&2
    for round in $(seq 1 "$ROUNDS"); do
      modes="baseline file level"
      [ $((round % 2)) = 0 ] && modes="level file baseline"
      for workload in $WORKLOADS; do
        for mode in $modes; do
          case $mode in
            baseline) flags=(--learning never); pre="" ;;
            file) flags=(); pre="" ;;
            level) flags=(--level-models); pre="learn," ;;
          esac
          case $workload in
            readrandom) bench=readrandom; wflags=() ;;
            rw95) bench=readrandomwriterandom; wflags=(--readwritepercent 95) ;;
            rw50) bench=readrandomwriterandom; wflags=(--readwritepercent 50) ;;
          esac
          rm -rf "$DB/run"
          cp -a "$DB/load" "$DB/run"
          "${RUN[@]}" "$AUGUR" bench --db "$DB/run" --use_existing_db "${common[@]}" \
            "${flags[@]}" "${wflags[@]}" --reads "$OPS" \
            --benchmarks "${pre}${bench},stats" --json "$DB/run.json" >/dev/null
          row=$(fields "$DB/run.json" "$bench")
          load=$(cut -d' ' -f1 /proc/loadavg)
          printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$t" "$files" "$mode" \
            "$workload" "$row" "$load" | tee -a "$ROWS" >&2
        done
      done
    done
  done
done
rm -rf "$DB/load" "$DB/run" "$DB/load.json" "$DB/run.json"

python3 - "$ROWS" >"$OUT/summary.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
groups = {}
for r in rows:
    groups.setdefault((r["set"], int(r["target_mb"]), r["workload"]), {}).setdefault(r["mode"], []).append(r)
order = {"readrandom": 0, "rw95": 1, "rw50": 2}
label = {"readrandom": "read-only", "rw95": "5% writes", "rw50": "50% writes"}
print("| set | target MiB | files after load | workload | baseline µs/op | file µs/op | level µs/op "
      "| file speedup | level speedup | level / file | file model path | level model path "
      "| level: via level model | level models built | refused |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
for (s, t, w) in sorted(groups, key=lambda g: (g[0], -g[1], order[g[2]])):
    g = groups[(s, t, w)]
    if not all(m in g for m in ("baseline", "file", "level")):
        continue
    b, f, l = (med(g[m], "micros_per_op") for m in ("baseline", "file", "level"))
    print(f"| {s} | {t} | {g['file'][0]['files']} | {label[w]} | {b:.3f} | {f:.3f} | {l:.3f} "
          f"| {b / f:.2f}× | {b / l:.2f}× | {l / f:.3f} "
          f"| {100 * med(g['file'], 'model_share'):.1f}% | {100 * med(g['level'], 'model_share'):.1f}% "
          f"| {100 * med(g['level'], 'level_share'):.1f}% | {med(g['level'], 'level_models_built'):.0f} "
          f"| {med(g['level'], 'level_models_refused'):.0f} |")
EOF
cat "$OUT/summary.md"
