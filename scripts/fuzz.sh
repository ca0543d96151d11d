#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo fuzz, libFuzzer, nightly) for SECONDS each (default
# 60) and prints the executions and findings per target (issue 13).
#
# Seed corpora come from real files: a small database written by this build's CLI (tables
# of several index types, WALs, a manifest, value-log segments), copied into
# fuzz/corpus/<target>/ on each run (libFuzzer keeps what it finds there too). A finding is a
# crash-*/leak-*/timeout-*/oom-* file under fuzz/artifacts/<target>/; each must become a
# regression test (reproduce: cargo +nightly fuzz run <target> <file>).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Needs: rustup's nightly toolchain and cargo-fuzz (installed here if missing), a C++
# compiler (libFuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(version_edit log_reader value_pointer sst_open vlog_segment
           index_fence index_plr index_pgm index_rs index_rmi index_fiting index_plex)
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal

# Seed files from a real database.
cargo build --release -q -p augur-cli
seed_db="$(mktemp -d)/db"
augur=target/release/augur
for index in plr pgm rs fence; do
  for i in $(seq 1 40); do echo "key$i,value-$index-$i"; done > "$seed_db.csv.$index"
  "$augur" --db "$seed_db" --index "$index" --value-separation-threshold 8 \
    load --csv "$seed_db.csv.$index" >/dev/null
  "$augur" --db "$seed_db" --index "$index" flush >/dev/null
done
"$augur" --db "$seed_db" put last-key only-in-the-wal >/dev/null
mkdir -p fuzz/corpus/{version_edit,log_reader,value_pointer,sst_open,vlog_segment}
cp "$seed_db"/*.sst fuzz/corpus/sst_open/ 2>/dev/null || true
cp "$seed_db"/*.vlog fuzz/corpus/vlog_segment/ 2>/dev/null || true
for f in "$seed_db"/*.wal; do { printf '\0'; cat "$f"; } > "fuzz/corpus/log_reader/wal-$(basename "$f")"; done
for f in "$seed_db"/MANIFEST-*; do { printf '\1'; cat "$f"; } > "fuzz/corpus/log_reader/$(basename "$f")"; done
printf '%020d' 0 > fuzz/corpus/value_pointer/zero
printf '\1\1\0\3\0' > fuzz/corpus/version_edit/small
# Index targets: a valid build input (mode 1) and the same keys damaged (mode 2); see
# fuzz/fuzz_targets/index_model.rs.
for t in index_fence index_plr index_pgm index_rs index_rmi index_fiting index_plex; do
  mkdir -p "fuzz/corpus/$t"
  python3 - "fuzz/corpus/$t" <<'PY'
import random, struct, sys
rng = random.Random(13)
keys = b"".join(struct.pack("<Q", k) for k in sorted(rng.sample(range(1 << 40), 300)))
params = bytes([3, 5, 7, 16])
open(sys.argv[1] + "/build", "wb").write(b"\x01" + params + keys)
open(sys.argv[1] + "/damaged", "wb").write(b"\x02" + params + keys + bytes([9, 0, 0x40] * 4))
PY
done
rm -rf "$(dirname "$seed_db")"

printf '%-14s %14s %10s %s\n' target executions findings "seconds"
status=0
for t in "${TARGETS[@]}"; do
  log="$(mktemp)"
  set +e
  cargo +nightly fuzz run "$t" --fuzz-dir fuzz -- -max_total_time="$SECONDS_PER_TARGET" \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' | tail -1 || true)
  findings=$(find "fuzz/artifacts/$t" -type f 2>/dev/null | wc -l)
  printf '%-14s %14s %10s %s\n' "$t" "${execs:-?}" "$findings" "$SECONDS_PER_TARGET"
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    status=1
    tail -30 "$log" >&2
  fi
  rm -f "$log"
done
exit $status
