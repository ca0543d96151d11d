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
# Environment (docs/RELIABILITY.md, "Fuzzing", weighs them):
#   FUZZ_SANITIZER=address|none  AddressSanitizer (default, as `cargo fuzz`) catches memory
#       errors in unsafe code (the crate's few unsafe blocks, its dependencies', the fuzz
#       crate's counting allocator) and makes -malloc_limit_mb and leak detection work; `none`
#       runs 1.6-4x as many executions per second.
#   FUZZ_TRACE_COMPARES=1|0  1 (default) instruments comparisons so that libFuzzer mutates
#       towards the values the code compares against; 0 (`--no-trace-compares`) runs 1.6-7x
#       as many executions per second where the checks search a lot (the `index_*`,
#       `sst_fence` and `sst_filter` targets), with coverage-guided mutation only.
#   A configuration other than the default builds into fuzz/target/<sanitizer>-tc<0|1>, so
#   that switching does not rebuild everything.
# Needs: rustup's nightly toolchain and cargo-fuzz (installed here if missing), a C++
# compiler (libFuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
shift || true
SANITIZER="${FUZZ_SANITIZER:-address}"
TRACE_COMPARES="${FUZZ_TRACE_COMPARES:-1}"
case "$SANITIZER" in
  address | none) ;;
  *) echo "FUZZ_SANITIZER must be address or none, not '$SANITIZER'" >&2; exit 2 ;;
esac
BUILD_FLAGS=(-s "$SANITIZER")
case "$TRACE_COMPARES" in
  1) ;;
  0) BUILD_FLAGS+=(--no-trace-compares) ;;
  *) echo "FUZZ_TRACE_COMPARES must be 1 or 0, not '$TRACE_COMPARES'" >&2; exit 2 ;;
esac
if [ "$SANITIZER" != address ] || [ "$TRACE_COMPARES" != 1 ]; then
  BUILD_FLAGS+=(--target-dir "$PWD/fuzz/target/$SANITIZER-tc$TRACE_COMPARES")
fi
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(version_edit log_reader value_pointer sst_open vlog_segment sst_filter sst_fence
           index_fence index_plr index_pgm index_rs index_rmi index_fiting index_plex
           index_string cli_codec resp value_chunk sst_slots sst_key_block backup_meta)
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal

# Seed files from a real database.
cargo build --release -q -p augur-cli
seed_db="$(mktemp -d)/db"
augur="${CARGO_TARGET_DIR:-target}/release/augur"
for index in plr pgm rs fence; do
  for i in $(seq 1 40); do echo "key$i,value-$index-$i"; done > "$seed_db.csv.$index"
  "$augur" --db "$seed_db" --index "$index" --value-separation-threshold 8 \
    load --csv "$seed_db.csv.$index" >/dev/null
  "$augur" --db "$seed_db" --index "$index" flush >/dev/null
done
# One table of several data blocks (fence records) with a sparser filter.
for i in $(seq 1 200); do echo "block-key$i,v$i"; done > "$seed_db.csv.blocks"
"$augur" --db "$seed_db" --index fence --bloom-bits 6 load --csv "$seed_db.csv.blocks" >/dev/null
"$augur" --db "$seed_db" --index fence --bloom-bits 6 flush >/dev/null
"$augur" --db "$seed_db" put last-key only-in-the-wal >/dev/null
mkdir -p fuzz/corpus/{version_edit,log_reader,value_pointer,sst_open,vlog_segment}
mkdir -p fuzz/corpus/{sst_filter,sst_fence,cli_codec,resp}
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
# The string tree (fuzz/fuzz_targets/index_string.rs): path-like keys split at '\n', with
# delta 8 and run limit 4 (mode 1), and the same damaged (mode 2).
mkdir -p fuzz/corpus/index_string
python3 - fuzz/corpus/index_string <<'PY'
import sys
keys = "\n".join(f"usr/share/doc/pkg{p}/file{f:03d}" for p in range(12) for f in range(40))
body = bytes([4, 3, 10]) + keys.encode()
open(sys.argv[1] + "/build", "wb").write(b"\x01" + body)
open(sys.argv[1] + "/damaged", "wb").write(b"\x02" + body + body[:3] + bytes([9, 0, 0x40] * 4))
PY
# Filter and fence targets (fuzz/fuzz_targets/sst_{filter,fence}.rs): whole tables (mode 1),
# the sections cut out by the footer (mode 0: the filter section; the fence framing
# `props_len u16 | properties | values_len u64 | data_len u64 | index`, format 2 tables as
# the seed database writes them), and builder inputs (modes 2, 3).
python3 - "$seed_db" <<'PY'
import glob, os, struct, sys
FOOTER_LEN = 6 * 20 + 20  # six `offset u64 | len u64 | crc u32` records, then 20 bytes
for path in sorted(glob.glob(sys.argv[1] + "/*.sst")):
    table = open(path, "rb").read()
    footer = table[-FOOTER_LEN:]
    # data, values, filter, index, model, properties
    sec = [struct.unpack_from("<QQI", footer, 20 * i)[:2] for i in range(6)]
    cut = lambda i: table[sec[i][0]:sec[i][0] + sec[i][1]]
    name = os.path.basename(path)
    for t in ("sst_filter", "sst_fence"):
        open(f"fuzz/corpus/{t}/{name}", "wb").write(b"\x01" + table)
    if sec[2][1]:
        open(f"fuzz/corpus/sst_filter/filter-{name}", "wb").write(b"\x00" + cut(2))
    props = cut(5)
    framed = (struct.pack("<H", len(props)) + props + struct.pack("<Q", sec[1][1])
              + struct.pack("<Q", sec[0][1]) + cut(3))
    open(f"fuzz/corpus/sst_fence/framed-{name}", "wb").write(b"\x00" + framed)
keys = b"".join(bytes([len(k)]) + k for k in (b"key%d" % i for i in range(60)))
open("fuzz/corpus/sst_filter/build", "wb").write(b"\x02\x0a" + keys)
open("fuzz/corpus/sst_filter/damaged", "wb").write(b"\x03\x0a" + keys + bytes([9, 0, 0x40] * 4))
# Fence entries: a byte (key length + 24 × kind), then the key; repeated keys are versions.
entries = b"".join(bytes([len(k) + 24 * (i % 3)]) + k for i, k in
                   enumerate(b"key%d" % (i // 2 * 2) for i in range(60)))
open("fuzz/corpus/sst_fence/build", "wb").write(b"\x02\x03\x0a" + entries)
open("fuzz/corpus/sst_fence/damaged", "wb").write(b"\x03\x03\x0a" + entries + bytes([9, 0, 0x40] * 4))
PY
# CLI input (fuzz/fuzz_targets/cli_codec.rs; the first byte picks the mode, bit 2 --hex).
cp "$seed_db.csv.plr" fuzz/corpus/cli_codec/csv-plr
sed -i '1s/^/\x01/' fuzz/corpus/cli_codec/csv-plr
printf '\x04%s\r\n\n%s\n' '6b6579,00ff10' 'AB,' > fuzz/corpus/cli_codec/csv-hex
printf '\x0c%s' 'deadBEEF00' > fuzz/corpus/cli_codec/hex-text
printf '\x00%s' 'k00000042' > fuzz/corpus/cli_codec/text
printf '\x02k\xff\x00v' > fuzz/corpus/cli_codec/bytes
printf '\x0ek\xff\x00v' > fuzz/corpus/cli_codec/bytes-hex
# RESP requests and replies (fuzz/fuzz_targets/resp.rs): the first byte picks the mode
# (bit 7: replies) and the limits (0x3f: the largest), the second where to split the reads.
printf '\x3f\x80*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n' \
  > fuzz/corpus/resp/multibulk
printf '\x3f\x40PING\r\nSET "a b" '"'"'c\\'"'"'d'"'"' "\\x41\\n"\r\n\r\n*0\r\n*-1\r\n' > fuzz/corpus/resp/inline
printf '\x15\xc0*2\r\n$4\r\nECHO\r\n$9\r\ntoo-long!\r\nGET k\n' > fuzz/corpus/resp/limits
printf '\x80\x00+OK\r\n-ERR unknown command\r\n:42\r\n$-1\r\n$3\r\nv\r\n\r\n*2\r\n*-1\r\n:0\r\n' \
  > fuzz/corpus/resp/replies
rm -rf "$(dirname "$seed_db")"

echo "sanitizer: $SANITIZER, trace compares: $TRACE_COMPARES"
printf '%-14s %14s %10s %s\n' target executions findings "seconds"
status=0
for t in "${TARGETS[@]}"; do
  log="$(mktemp)"
  set +e
  cargo +nightly fuzz run "$t" --fuzz-dir fuzz "${BUILD_FLAGS[@]}" -- \
    -max_total_time="$SECONDS_PER_TARGET" \
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
