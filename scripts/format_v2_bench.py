#!/usr/bin/env python3
"""SSTable format 2 and value compression against format 1 and the peers, in one run: bytes on
disk of a settled tree, point reads, short seeks and fill throughput. Renders
docs/benchmarks/format-v2.md and keeps every raw JSON record in docs/benchmarks/format-v2.json.

  scripts/format_v2_bench.py --augur-v1 /work/augur-v1/target/release/augur \\
      [--augur target/release/augur] [--peers-bin target/release/augur] [--rounds 3] [--zstd]

Engines (rows), each with every codec of --codecs (default none,lz4; --zstd adds zstd):
  Augur format 2   --augur: this tree's build (writes SSTable format 2)
  Augur format 1   --augur-v1: an older build that writes format 1 (e.g. the commit before
                   format 2: `git worktree add /work/augur-v1 5cbf87d~1 && cd /work/augur-v1 &&
                   cargo build --release -p augur-cli`); run exactly as --augur. Format 1 has no
                   compression: its build refuses --compression_type other than none, and those
                   cells say so. Optional: without it the column is left out.
  RocksDB, LevelDB, fjall
                   `augur bench --engine=rocksdb|leveldb|fjall` of --peers-bin, a build with the
                   peers (README: `ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build
                   --release -p augur-cli --features augur-cli/rocksdb,augur-cli/leveldb,augur-cli/fjall`).
                   An engine without a codec (LevelDB has none/snappy, fjall none/lz4) refuses
                   it; the cell says so (nothing is substituted).

Data sets (--datasets, default words,strings,dbbench):
  words    --keys-text ../shared/datasets/words_en_insane.txt (every word; --num keeps evenly
           spaced ones), 100-byte values
  strings  --distribution=strings: --strings-num (5,000,000) keys of 16-128 bytes with a
           24-byte shared prefix, 100-byte values. A binary without that source (an older
           format-1 build) gets the very same keys through --keys-text of a file the --augur
           binary writes with --dump-keys.
  dbbench  db_bench's keys: --dbbench-num (10,000,000) fillrandom draws of 16-byte keys,
           64-byte values
Values are db_bench's compressible values, --compression_ratio 0.5 (db_bench's default), in
every data set; Augur keeps them inline (--value-separation-threshold above any value).

Each run is one `augur bench` process on a fresh database directory:
  --benchmarks fillrandom,compact,readrandom,seekrandom --seek_nexts 10 --reads R
(fill, full compaction, then point reads and seeks with 10 nexts on the settled tree). Bytes on
disk are measured after the run by this script, the same way for every binary: the tree's
files (SSTables, value-log/blob files; no WAL, journal or manifest) and the whole directory.
Each of --rounds rounds runs every (engine, codec) once, in an order rotated from round to
round (alternating which engine goes first); tables give medians over the rounds.

Database directories: a fresh temporary directory per run under --work-dir (default: /tmp
unless it is a tmpfs, else target/format-v2-work in this repository), removed after the run.

--num N scales every data set at once (e.g. --num 200000 for a quick check; write it out of
docs/ with --out-dir). --render-only re-renders the report from the JSON.
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench_common import (BenchFailed, fmt, human_bytes, last_record, log, machine,  # noqa: E402
                          run_bench, shown_path, table)
from json_tools import save_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(ROOT, "target", "release", "augur")
WORDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "datasets", "words_en_insane.txt"))
BENCHMARKS = "fillrandom,compact,readrandom,seekrandom"
# Augur keeps every value inline: the threshold is usize::MAX (the records show null).
INLINE = "18446744073709551615"

# (label, which binary, --engine) of the engines, in table order.
ENGINES = [
    ("Augur format 2", "augur", "augur"),
    ("Augur format 1", "augur_v1", "augur"),
    ("RocksDB", "peers", "rocksdb"),
    ("LevelDB", "peers", "leveldb"),
    ("fjall", "peers", "fjall"),
]
# How the commands of the report name each binary.
SHOWN = {"augur": "augur", "augur_v1": "augur-v1", "peers": "augur-peers"}
ROCKSDB = "RocksDB"
V1 = "Augur format 1"


# ---- the runs --------------------------------------------------------------------------------

def datasets(a):
    """{name: (description, flags)} of the data sets asked for."""
    values = [f"--compression_ratio={a.compression_ratio}"]
    n = a.num
    out = {}
    for name in a.datasets.split(","):
        if name == "words":
            num = a.words_num or n
            out[name] = (f"{'every word' if not num else f'{num:,} evenly spaced words'} of "
                         f"`{shown_path(a.words, ROOT)}` (`--keys-text`), 100-byte values",
                         [f"--keys-text={a.words}"] + ([f"--num={num}"] if num else []) +
                         ["--value_size=100"] + values)
        elif name == "strings":
            num = a.strings_num or n or 5_000_000
            out[name] = (f"{num:,} synthetic string keys (`--distribution=strings`: 16–128 bytes, "
                         "24-byte shared prefix), 100-byte values",
                         ["--distribution=strings", f"--num={num}", "--string-min-len=16",
                          "--string-max-len=128", "--string-prefix-len=24", "--value_size=100"] + values)
        elif name == "dbbench":
            num = a.dbbench_num or n or 10_000_000
            out[name] = (f"db_bench's keys: {num:,} fillrandom draws of 16-byte keys, 64-byte values",
                         [f"--num={num}", "--key_size=16", "--value_size=64"] + values)
        else:
            sys.exit(f"unknown data set {name!r} (words, strings, dbbench)")
    return out


def supports(binary, flag):
    """Whether `augur bench --help` of `binary` mentions `flag`."""
    try:
        out = subprocess.run([binary, "bench", "--help"], capture_output=True, text=True, timeout=60)
        return flag in out.stdout
    except (OSError, subprocess.SubprocessError):
        return False


def is_table_file(engine, rel):
    """The tree's own files (as `engine::is_table_file` of the harness): SSTables and
    value-log/blob files; not WAL, journal, manifest, info logs or markers."""
    name = os.path.basename(rel)
    if engine == "augur":
        stem, _, ext = name.rpartition(".")
        return stem.isdigit() and ext in ("sst", "vlog")
    if engine == "rocksdb":
        return name.endswith((".sst", ".blob"))
    if engine == "leveldb":
        return name.endswith((".ldb", ".sst"))
    parts = rel.split(os.sep)
    return parts[0] == "partitions" and "segments" in parts


def disk_use(db, engine):
    """Bytes of the tree's files, of every file, and the disk blocks of every file, under `db`."""
    tables = total = allocated = 0
    for d, _, files in os.walk(db):
        for f in files:
            p = os.path.join(d, f)
            try:
                st = os.stat(p)
            except OSError:
                continue
            total += st.st_size
            allocated += st.st_blocks * 512
            if is_table_file(engine, os.path.relpath(p, db)):
                tables += st.st_size
    return {"table_bytes": tables, "dir_bytes": total, "allocated_bytes": allocated}


def work_base(a):
    """Where the database directories go (module docs)."""
    if a.work_dir:
        base = a.work_dir
    else:
        fs = subprocess.run(["df", "--output=fstype", "/tmp"], capture_output=True, text=True).stdout.split()
        on_disk = bool(fs) and fs[-1] not in ("tmpfs", "ramfs")
        base = os.path.join(tempfile.gettempdir(), "augur-format-v2") if on_disk else \
            os.path.join(ROOT, "target", "format-v2-work")
    os.makedirs(base, exist_ok=True)
    return base


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def one_run(a, data, base, ds, ds_flags, label, binary, engine, codec, rnd, keys_file):
    """One `augur bench` process: fill, compact, reads, seeks on a fresh directory; returns
    its entry of data["runs"]."""
    run_dir = tempfile.mkdtemp(prefix=f"{ds}-{engine}-{codec}-", dir=base)
    db = os.path.join(run_dir, "db")
    flags = list(ds_flags)
    if ds == "strings" and keys_file and not data["binaries"][binary]["strings"]:
        flags = [f"--keys-text={keys_file}"] + [f for f in flags if not f.startswith(
            ("--distribution", "--string-", "--num"))]
    engine_flags = [f"--value-separation-threshold={INLINE}"] if engine == "augur" else [f"--engine={engine}"]
    args = ([f"--db={db}"] + engine_flags + flags +
            [f"--compression_type={codec}", f"--benchmarks={BENCHMARKS}", "--seek_nexts=10",
             f"--reads={a.reads}", f"--seed={a.seed}", f"--cache_size={a.cache_size}"])
    shown = " ".join([SHOWN[binary], "bench", "--json=OUT.json"] +
                     [x.replace(db, "$DB").replace(keys_file or "\0", "$KEYS") for x in args])
    entry = {"dataset": ds, "engine": label, "binary": binary, "codec": codec, "round": rnd,
             "command": shown, "ok": False}
    t0 = time.time()
    try:
        recs = run_bench(data["binaries"][binary]["path"], args, raw_path=os.devnull, tag=f"{ds}-{label}-{codec}",
                         timeout=a.timeout)
        entry.update(ok=True, records=recs, disk=disk_use(db, engine))
    except BenchFailed as e:
        entry.update(error=e.short(), stderr=e.stderr_tail)
        log(f"FAILED {ds} {label} {codec}: {e.short()}")
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    entry["wall_s"] = time.time() - t0
    return entry


def measure(a, data, out_json):
    base = work_base(a)
    data["work_dir"] = base
    sets = datasets(a)
    # A list, not a map: the JSON is saved with sorted keys, the report keeps this order.
    data["datasets"] = [[k, v[0]] for k, v in sets.items()]
    engines = [e for e in ENGINES if e[1] in data["binaries"] and
               (e[1] != "peers" or e[2] in a.peers.split(","))]
    codecs = a.codecs.split(",") + (["zstd"] if a.zstd and "zstd" not in a.codecs.split(",") else [])
    data["codecs"] = codecs
    for ds, (_, flags) in sets.items():
        if ds == "words" and not os.path.exists(a.words):
            log(f"skipping words: {a.words} not found")
            data["skipped"][ds] = f"{a.words} not found"
            continue
        keys_file = None
        if ds == "strings" and any(not data["binaries"][e[1]]["strings"] for e in engines):
            # The same keys for a build without --distribution=strings, written by --augur.
            keys_file = os.path.join(base, "strings-keys.txt")
            cmd = [data["binaries"]["augur"]["path"], "bench", f"--dump-keys={keys_file}",
                   f"--seed={a.seed}"] + flags
            log(" ".join(cmd))
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            data["commands"].append(" ".join(["augur", "bench", "--dump-keys=$KEYS", f"--seed={a.seed}"] + flags))
        configs = [(label, binary, engine, codec) for label, binary, engine in engines for codec in codecs]
        for rnd in range(a.rounds):
            shift = rnd % len(configs)
            for label, binary, engine, codec in configs[shift:] + configs[:shift]:
                entry = one_run(a, data, base, ds, flags, label, binary, engine, codec, rnd, keys_file)
                data["runs"].append(entry)
                if entry["command"] not in data["commands"]:
                    data["commands"].append(entry["command"])
                save_json(os.path.dirname(out_json), os.path.basename(out_json), data)
        if keys_file:
            os.unlink(keys_file)


# ---- the report ------------------------------------------------------------------------------

def cells(data, ds):
    """{(engine, codec): {...medians...}} of a data set's runs; failed cells carry `error`."""
    out = {}
    for r in data["runs"]:
        if r["dataset"] != ds:
            continue
        c = out.setdefault((r["engine"], r["codec"]), {"runs": [], "errors": []})
        if not r["ok"]:
            c["errors"].append(r.get("error") or "failed")
            continue
        recs = r["records"]
        fill, comp = last_record(recs, "fillrandom"), last_record(recs, "compact")
        reads, seeks = last_record(recs, "readrandom"), last_record(recs, "seekrandom")
        c["runs"].append({
            "fill_ops": fill and fill.get("ops_per_sec"),
            "fill_mb": fill and fill.get("mb_per_sec"),
            "read_us": reads and reads.get("micros_per_op"),
            "seek_us": seeks and seeks.get("micros_per_op"),
            "table_bytes": r["disk"]["table_bytes"],
            "dir_bytes": r["disk"]["dir_bytes"],
            "live_bytes": (comp or {}).get("live_bytes"),
            "value_ratio": (comp or {}).get("value_compression_ratio"),
            "raw_user_bytes": (comp or {}).get("raw_user_bytes"),
            "record_table_bytes": (comp or {}).get("table_bytes"),
        })
    for c in out.values():
        for k in ("fill_ops", "fill_mb", "read_us", "seek_us", "table_bytes", "dir_bytes", "live_bytes",
                  "value_ratio", "raw_user_bytes", "record_table_bytes"):
            vals = [x[k] for x in c["runs"] if x.get(k) is not None]
            c[k] = statistics.median(vals) if vals else None
    return out


def q(a, b):
    return a / b if a is not None and b else None


def x(v):
    return f"{v:.2f}×" if v is not None else "-"


def render(data, report):
    md = ["# SSTable format 2 and value compression vs format 1 and the peers", "",
          "<!-- Generated by scripts/format_v2_bench.py; rerun instead of editing. -->", "",
          f"Machine: {data['machine']}", "",
          f"Rounds: {data['rounds']} per data set, every (engine, codec) once per round in an order "
          "rotated from round to round, each a fresh `augur bench` process on a fresh database "
          f"directory under `{data['work_dir']}`; medians over the rounds. Reads per run: "
          f"{data['reads']:,} `readrandom` gets and {data['reads']:,} `seekrandom` seeks reading 10 "
          f"entries after each (`--seek_nexts 10`); peers' block cache {human_bytes(data['cache_size'])} "
          "(Augur reads through the page cache).", "",
          "Binaries:", ""]
    for k, b in data["binaries"].items():
        md.append(f"- `{k}`: `{b['path']}` (sha256 {b['sha256']}…"
                  f"{'' if b['strings'] else '; no `--distribution=strings`: given the same keys with `--keys-text`'})")
    md += ["", "Workload of every run: `fillrandom` (random order into a fresh database), `compact` "
           "(full compaction), `readrandom`, `seekrandom --seek_nexts 10`. Values are db_bench's "
           f"compressible ones (`--compression_ratio {data['compression_ratio']}`), inline in every engine.", "",
           "**bytes on disk** = the settled tree's files after the run (SSTables and value-log/blob "
           "files; not the WAL/journal, manifest or logs), measured by the script for every binary "
           "alike; **dir** = every file of the directory (apparent sizes: fjall's preallocated "
           "journal counts in full). **value ratio** = Augur's inline values as stored / raw "
           "(`value_compression_ratio` of the `compact` record; format 2 only). "
           "Ratios **÷ RocksDB** and **÷ v1** divide the engine's number by RocksDB's / Augur format "
           "1's with the same codec (below 1: fewer bytes, or faster); where format 1 has no such "
           "codec, by format 1 without compression (marked †).", ""]
    for ds, desc in data["datasets"]:
        md += [f"## {ds}: {desc}", ""]
        if ds in data.get("skipped", {}):
            md += [f"Skipped: {data['skipped'][ds]}.", ""]
            continue
        c = cells(data, ds)
        rows, notes = [], []
        for label, _, _ in ENGINES:
            for codec in data["codecs"]:
                cell = c.get((label, codec))
                if cell is None:
                    continue
                if not cell["runs"]:
                    rows.append([label, codec] + ["—"] * 11)
                    notes.append(f"{label} {codec}: {cell['errors'][0]}")
                    continue
                rocks = c.get((ROCKSDB, codec)) or {}
                v1 = c.get((V1, codec)) or {}
                dagger = ""
                if not v1.get("runs") and (c.get((V1, "none")) or {}).get("runs"):
                    v1, dagger = c[(V1, "none")], "†"
                if label == V1:
                    v1, dagger = {}, ""
                rows.append([
                    label, codec,
                    human_bytes(cell["table_bytes"]), x(q(cell["table_bytes"], rocks.get("table_bytes"))),
                    human_bytes(cell["dir_bytes"]),
                    fmt(cell["value_ratio"], 3) if cell["value_ratio"] is not None else "-",
                    fmt(cell["fill_ops"], 0),
                    fmt(cell["read_us"]), x(q(cell["read_us"], rocks.get("read_us"))),
                    x(q(cell["read_us"], v1.get("read_us"))) + (dagger if v1.get("read_us") else ""),
                    fmt(cell["seek_us"]), x(q(cell["seek_us"], rocks.get("seek_us"))),
                    x(q(cell["seek_us"], v1.get("seek_us"))) + (dagger if v1.get("seek_us") else ""),
                ])
                if len(cell["runs"]) < data["rounds"] and cell["errors"]:
                    notes.append(f"{label} {codec}: {len(cell['errors'])} of {data['rounds']} rounds failed "
                                 f"({cell['errors'][0]})")
                rt, st = cell["record_table_bytes"], cell["table_bytes"]
                if rt and st and abs(rt - st) > 0.01 * st:
                    notes.append(f"{label} {codec}: the `compact` record says {human_bytes(rt)} of tree files, "
                                 f"the directory after the run {human_bytes(st)}")
        md += table(["engine", "codec", "bytes on disk", "÷ RocksDB", "dir", "value ratio",
                     "fillrandom ops/s", "readrandom µs/op", "÷ RocksDB", "÷ v1",
                     "seek+10 µs/op", "÷ RocksDB", "÷ v1"], rows)
        live = next((cell["live_bytes"] for cell in c.values() if cell.get("live_bytes")), None)
        if live:
            md += ["", f"User data after the fill (live keys + values, from a full scan): {human_bytes(live)}."]
        if notes:
            md += ["", "Cells without numbers or with failed rounds:", ""] + [f"- {n}" for n in notes]
        md += [""]
    md += ["## Commands", "",
           "Each run, on a fresh `$DB` (`augur` is --augur, `augur-v1` --augur-v1, `augur-peers` "
           "--peers-bin; `$KEYS` the key file `--dump-keys` wrote, for a build without "
           "`--distribution=strings`):", "", "```"]
    md += data["commands"] + ["```", "", "This report: `" + data["invocation"] + "`", ""]
    with open(report, "w") as f:
        f.write("\n".join(md))
    log(f"wrote {report}")


# ---- main ------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--augur", default=DEFAULT_BIN, help="format-2 build (default %(default)s)")
    p.add_argument("--augur-v1", help="a build that writes format 1 (optional)")
    p.add_argument("--peers-bin", default=DEFAULT_BIN, help="build with the peers (default %(default)s)")
    p.add_argument("--peers", default="rocksdb,leveldb,fjall", help="peers to run (default %(default)s; empty: none)")
    p.add_argument("--datasets", default="words,strings,dbbench")
    p.add_argument("--num", type=int, help="keys of every data set (default: all words, 5M strings, 10M db_bench)")
    p.add_argument("--words-num", type=int, help="words kept (evenly spaced; default all)")
    p.add_argument("--strings-num", type=int, help="string keys (default 5,000,000)")
    p.add_argument("--dbbench-num", type=int, help="db_bench fill draws (default 10,000,000)")
    p.add_argument("--words", default=WORDS, help="the words file (default %(default)s)")
    p.add_argument("--reads", type=int, default=1_000_000, help="readrandom gets and seekrandom seeks per run")
    p.add_argument("--codecs", default="none,lz4", help="--compression_type values (default %(default)s)")
    p.add_argument("--zstd", action="store_true", help="add zstd to --codecs")
    p.add_argument("--compression-ratio", type=float, default=0.5, help="db_bench's --compression_ratio of the values")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=301)
    p.add_argument("--cache-size", type=int, default=8 << 20, help="peers' block cache (db_bench's default 8 MiB)")
    p.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per bench process")
    p.add_argument("--work-dir", help="where the database directories go (default: see above)")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "docs", "benchmarks"),
                   help="where format-v2.md and format-v2.json go (default %(default)s)")
    p.add_argument("--render-only", action="store_true", help="re-render the report from the JSON")
    a = p.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    out_json = os.path.join(a.out_dir, "format-v2.json")
    report = os.path.join(a.out_dir, "format-v2.md")
    if a.render_only:
        with open(out_json) as f:
            render(json.load(f), report)
        return
    if a.reads > 0 and a.num:
        a.reads = min(a.reads, a.num)
    binaries = {"augur": a.augur, "peers": a.peers_bin}
    if a.augur_v1:
        binaries["augur_v1"] = a.augur_v1
    if not a.peers:
        binaries.pop("peers")
    data = {"machine": machine(ROOT, [work_base(a)]), "rounds": a.rounds, "reads": a.reads,
            "cache_size": a.cache_size, "compression_ratio": a.compression_ratio, "seed": a.seed,
            "invocation": " ".join(["scripts/format_v2_bench.py"] + sys.argv[1:]),
            "binaries": {}, "runs": [], "commands": [], "skipped": {}}
    for k, path in binaries.items():
        path = os.path.abspath(path)
        if not os.access(path, os.X_OK):
            sys.exit(f"--{k.replace('_', '-')}: {path} is not an executable")
        data["binaries"][k] = {"path": path, "sha256": sha256(path),
                               "strings": supports(path, "--string-min-len")}
    if not data["binaries"]["augur"]["strings"]:
        sys.exit(f"{a.augur} has no --distribution=strings: not a format-2 build of this tree")
    measure(a, data, out_json)
    save_json(a.out_dir, "format-v2.json", data)
    render(data, report)


if __name__ == "__main__":
    main()
