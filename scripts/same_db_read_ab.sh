#!/usr/bin/env bash
# Same-database A/B of two builds' read paths on string key sets (session 37): each set is
# filled and compacted once per mode by NEW, then both builds read the same databases in
# alternating order, round after round. Every database is placed once, so the run-to-run
# spread of fresh databases (up to ~15% on one code path, REPORT G) does not enter the
# ratio; use it for read-path changes that do not change the file format (a format change
# needs scripts/string_keys_bench.sh with BASE=, which fills a database per build).
#
# Usage: scripts/same_db_read_ab.sh OLD_BINARY NEW_BINARY [OUT]   (OUT: a directory for the
# rows and the summary, default target/same-db-ab)
# Knobs (environment): ROUNDS (5), READS (1000000), MODES ("never plr auto"), DATA
# (../shared/datasets), SETS (name:flags pairs, `:` for spaces inside the flags; default the
# shared string sets plus composite and `key:%012d` keys), DB (/tmp/augur-same-db-ab).
#
# Each read: `chrt -f 50 BINARY bench --db DB/SET-MODE --use_existing_db SOURCE --value_size
# 100 --value-separation-threshold 1024 MODE's flags --benchmarks readrandom,seekrandom
# --seek_nexts 10 --reads READS` (needs root for SCHED_FIFO). The summary gives per set and
# mode the median µs of both builds, new / old (below 1: the new build is faster) and
# never / mode for each build.
set -euo pipefail
OLD=${1:?old binary}
NEW=${2:?new binary}
OUT=${3:-target/same-db-ab}
ROUNDS=${ROUNDS:-5}
READS=${READS:-1000000}
MODES=${MODES:-"never plr auto"}
DATA=${DATA:-../shared/datasets}
DB=${DB:-/tmp/augur-same-db-ab}
SETS=${SETS:-"paths:--keys-text:$DATA/package_paths.txt domains:--keys-text:$DATA/reversed_domains.txt words:--keys-text:$DATA/words_en_insane.txt composite:--distribution:composite:--num:200000 redis:--distribution:redis:--num:1000000"}
mkdir -p "$OUT" "$DB"
ROWS="$OUT/rows.tsv"
: > "$ROWS"
mode_flags() {
  case $1 in
    never) echo --learning never ;;
    *) echo --index "$1" ;;
  esac
}
common=(--value_size 100 --value-separation-threshold 1024)
for s in $SETS; do
  name=${s%%:*}
  read -r -a src <<< "$(echo "${s#*:}" | tr ':' ' ')"
  for m in $MODES; do
    rm -rf "${DB:?}/$name-$m"
    read -r -a mf <<< "$(mode_flags "$m")"
    "$NEW" bench --db "$DB/$name-$m" "${src[@]}" "${common[@]}" --compression_ratio 0.5 \
      --compression none "${mf[@]}" --benchmarks fillrandom,compact > /dev/null 2>&1
  done
done
for r in $(seq "$ROUNDS"); do
  order="old new"
  [ $((r % 2)) = 0 ] && order="new old"
  for s in $SETS; do
    name=${s%%:*}
    read -r -a src <<< "$(echo "${s#*:}" | tr ':' ' ')"
    for m in $MODES; do
      read -r -a mf <<< "$(mode_flags "$m")"
      for b in $order; do
        bin=$OLD
        [ "$b" = new ] && bin=$NEW
        out=$(chrt -f 50 "$bin" bench --db "$DB/$name-$m" --use_existing_db "${src[@]}" \
          "${common[@]}" "${mf[@]}" --benchmarks readrandom,seekrandom --seek_nexts 10 \
          --reads "$READS" 2>&1)
        rd=$(grep -o 'readrandom *: *[0-9.]*' <<< "$out" | grep -o '[0-9.]*$')
        sk=$(grep -o 'seekrandom *: *[0-9.]*' <<< "$out" | grep -o '[0-9.]*$')
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$name" "$m" "$b" "$rd" "$sk" >> "$ROWS"
      done
    done
  done
done
python3 - "$ROWS" > "$OUT/summary.md" <<'PY'
import collections
import statistics as st
import sys

rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
times = collections.defaultdict(list)
for _, name, mode, build, read, seek in rows:
    times[(name, mode, build)].append((float(read), float(seek)))
sets = list(dict.fromkeys(r[1] for r in rows))
modes = list(dict.fromkeys(r[2] for r in rows))


def med(name, mode, build):
    runs = times[(name, mode, build)]
    return st.median(r for r, _ in runs), st.median(s for _, s in runs)


print("| set | mode | old read µs | new read µs | new / old | old seek µs | new seek µs | new / old "
      "| never / mode, new: read, seek | old: read, seek |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in sets:
    for mode in modes:
        (o_r, o_s), (n_r, n_s) = med(name, mode, "old"), med(name, mode, "new")
        cells = [name, mode, f"{o_r:.3f}", f"{n_r:.3f}", f"{n_r / o_r:.3f}", f"{o_s:.3f}",
                 f"{n_s:.3f}", f"{n_s / o_s:.3f}"]
        if "never" in modes:
            (bo_r, bo_s), (bn_r, bn_s) = med(name, "never", "old"), med(name, "never", "new")
            cells += [f"{bn_r / n_r:.2f}×, {bn_s / n_s:.2f}×", f"{bo_r / o_r:.2f}×, {bo_s / o_s:.2f}×"]
        else:
            cells += ["-", "-"]
        print("| " + " | ".join(cells) + " |")
PY
cat "$OUT/summary.md"
