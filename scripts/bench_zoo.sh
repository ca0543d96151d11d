#!/usr/bin/env bash
# Issue 4 "Measure and report": the learned-index study's figures on Augur (16-byte keys,
# values separated, in memory, single thread). Writes JSON lines to $WORK/zoo.jsonl (one per
# run, tagged) and leaves plotting to scripts/plot_zoo.py.
#
#   fig6   latency vs index memory, every type, error bound 8..256, per dataset
#          (uniform synthetic + two real sets): the database is loaded ONCE per dataset with
#          --learning=never, then every configuration reopens it with --learning=offline,
#          trains its models (`learn`, timed) and runs readrandom. `baseline` = the block
#          fence pointers of the never policy.
#   fig8   the same for the uniform set at SST sizes 8 / 32 / 128 MiB and with level models
#          (error bounds 8, 32, 128).
#   fig9   write-only run (fillrandom + full compaction) per type with at-build training vs
#          never: flush/compaction time and the part spent training.
#   fig12  YCSB A-F per index type at the error bound given in YCSB_BOUNDS.
#
# Usage: scripts/bench_zoo.sh [fig6] [fig8] [fig9] [fig12]     (default: all)
# Env:   NUM (uniform keys, default 5000000), READS (default 1000000), WORK, AUGUR, DATASETS
set -euo pipefail
cd "$(dirname "$0")/.."
AUGUR=${AUGUR:-target/release/augur}
NUM=${NUM:-5000000}
READS=${READS:-1000000}
DATASETS=${DATASETS:-../shared/datasets}
WORK=${WORK:-/tmp/augur-zoo}
OUT="$WORK/zoo.jsonl"
TYPES=${TYPES:-"fence plr pgm rs rmi fiting plex"}
BOUNDS=${BOUNDS:-"8 16 32 64 128 256"}
YCSB_BOUNDS=${YCSB_BOUNDS:-"fence:16 plr:16 pgm:16 rs:16 rmi:16 fiting:16 plex:16"}
FIGS=${*:-fig6 fig8 fig9 fig12}
mkdir -p "$WORK"
COMMON=(--key_size=16 --value_size=64 --value-separation-threshold=0 --seed=301)

# record TAGS-JSON FILE: appends every benchmark of FILE to $OUT with the tags merged in.
record() {
  python3 - "$1" "$2" >>"$OUT" <<'PY'
import json, sys
tags = json.loads(sys.argv[1])
for r in json.load(open(sys.argv[2])):
    r.update(tags)
    print(json.dumps(r))
PY
}

source_of() {
  case "$1" in
    uniform) echo "--distribution=uniform-sparse --num=$NUM" ;;
    ipv4_asn) echo "--keys=$DATASETS/ipv4_asn.u64" ;;
    words) echo "--keys-text=$DATASETS/words_en_insane.txt" ;;
    *) echo "unknown dataset $1" >&2; exit 2 ;;
  esac
}

# sweep FIG DATASET DB BOUNDS [extra flags...]: baseline, then every type x bound.
sweep() {
  local fig=$1 ds=$2 db=$3 bounds=$4; shift 4
  local src; src=$(source_of "$ds")
  local j="$WORK/run.json"
  echo "== $fig $ds baseline $*" >&2
  # shellcheck disable=SC2086
  "$AUGUR" bench --db "$db" $src "${COMMON[@]}" "$@" --learning=never --use_existing_db \
    --reads="$READS" --benchmarks=readrandom --json="$j" >/dev/null
  record "{\"fig\":\"$fig\",\"dataset\":\"$ds\",\"index\":\"baseline\",\"bound\":0,\"variant\":\"$*\"}" "$j"
  for t in $TYPES; do
    for b in $bounds; do
      echo "== $fig $ds $t δ=$b $*" >&2
      # shellcheck disable=SC2086
      "$AUGUR" bench --db "$db" $src "${COMMON[@]}" "$@" --learning=offline --index="$t" \
        --error-bound="$b" --use_existing_db --reads="$READS" --benchmarks=learn,readrandom \
        --json="$j" >/dev/null
      record "{\"fig\":\"$fig\",\"dataset\":\"$ds\",\"index\":\"$t\",\"bound\":$b,\"variant\":\"$*\"}" "$j"
    done
  done
}

# load DATASET DB [extra flags...]: a fresh database without models, fully compacted.
load() {
  local ds=$1 db=$2; shift 2
  local src; src=$(source_of "$ds")
  rm -rf "$db"
  echo "== load $ds $*" >&2
  # shellcheck disable=SC2086
  "$AUGUR" bench --db "$db" $src "${COMMON[@]}" "$@" --learning=never --load-order=random \
    --benchmarks=fillrandom,compact >/dev/null
}

for fig in $FIGS; do
  case $fig in
    fig6)
      for ds in uniform ipv4_asn words; do
        load "$ds" "$WORK/db-$ds"
        sweep fig6 "$ds" "$WORK/db-$ds" "$BOUNDS"
        rm -rf "$WORK/db-$ds"
      done ;;
    fig8)
      for mb in 8 32 128; do
        load uniform "$WORK/db-sst$mb" --target-file-mb="$mb"
        sweep fig8 uniform "$WORK/db-sst$mb" "8 32 128" --target-file-mb="$mb"
        if [ "$mb" = 32 ]; then
          sweep fig8 uniform "$WORK/db-sst$mb" "8 32 128" --target-file-mb="$mb" --level-models
        fi
        rm -rf "$WORK/db-sst$mb"
      done ;;
    fig9)
      src=$(source_of uniform)
      for t in never $TYPES; do
        learning=at-build; index=$t
        if [ "$t" = never ]; then learning=never; index=plr; fi
        echo "== fig9 $t" >&2
        rm -rf "$WORK/db-fig9"
        # shellcheck disable=SC2086
        "$AUGUR" bench --db "$WORK/db-fig9" $src "${COMMON[@]}" --learning=$learning \
          --index="$index" --load-order=random --benchmarks=fillrandom,compact \
          --json="$WORK/run.json" >/dev/null
        record "{\"fig\":\"fig9\",\"dataset\":\"uniform\",\"index\":\"$t\",\"bound\":8}" "$WORK/run.json"
      done
      rm -rf "$WORK/db-fig9" ;;
    fig12)
      for tb in $YCSB_BOUNDS; do
        t=${tb%%:*}; b=${tb#*:}
        echo "== fig12 $t δ=$b" >&2
        rm -rf "$WORK/db-ycsb"
        "$AUGUR" bench --db "$WORK/db-ycsb" --num=1000000 --reads=1000000 "${COMMON[@]}" \
          --learning=at-build --index="$t" --error-bound="$b" \
          --benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,ycsb-e,learn \
          --json="$WORK/run.json" >/dev/null
        record "{\"fig\":\"fig12\",\"dataset\":\"ycsb\",\"index\":\"$t\",\"bound\":$b}" "$WORK/run.json"
      done
      rm -rf "$WORK/db-ycsb" ;;
    *) echo "unknown figure $fig" >&2; exit 2 ;;
  esac
done
echo "results: $OUT" >&2
