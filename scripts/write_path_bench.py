#!/usr/bin/env python3
"""The write path (issue 28): fillrandom settled, full compaction, reads while writing and
scans over separated values, Augur (leveled and FLSM) against RocksDB, LevelDB and fjall in
the same run. Renders docs/benchmarks/write-path.md and keeps every record in
docs/benchmarks/write-path.json.

  scripts/write_path_bench.py --augur <build with the peers> [--sizes 10000000,30000000]
      [--configs inline64,inline128,sep1k] [--engines leveled,flsm,rocksdb,leveldb,fjall]
      [--reads 300000] [--work-dir /var/tmp/augur-write] [--render-only]

Configurations (16-byte keys; db_bench's fillrandom: --num random draws of key numbers):
  inline64   64-byte values, inline in every engine
  inline128  128-byte values, inline in every engine
  sep1k      1 KiB values: separated in Augur (value log) and RocksDB (BlobDB) and fjall
             (its blob files), inline in LevelDB
For each (size, configuration, engine), on disk (--work-dir, ext4 here; never tmpfs):
  1. `fillrandom,waitforcompaction` in one process (Augur with `--read-mode pread`; later
     steps use --read-mode, default mmap — the run of 2026-11-26 used pread throughout): fill
     throughput, settled write amplification (bytes the process passed to write(2), per
     /proc/self/io, over fillrandom's user bytes), space amplification after settling
     (directory bytes / live key+value bytes from a full scan), peak RSS during the fill,
     Augur's stall and slowdown time;
  2. `compact` in a fresh process: the full compaction's time;
  3. sep1k only: `readseq`, `seekrandom --seek_nexts 10` and `--seek_nexts 100` (after the
     full compaction, whose last-level merge rewrites scattered values in key order);
  4. `readwhilewriting` (1 reader thread, 1 writer thread; --reads lookups);
  5. sep1k, Augur only: `overwrite` of --num keys (50% of the log's values dead), settled,
     with `--value-log-gc-ratio=1` (no automatic GC or relocation); `readrandom` with the
     same option, an explicit `gc`, `readrandom` again (each in a fresh process that first
     waits for the compactions its open starts, and reads twice: the second run counts).
Engine `leveled-nolm` is Augur leveled with `--no-level-merge`; engine `rocksdb-inline` is
RocksDB with every value inline whatever the configuration (sep1k's write-amplification
target is a fraction of RocksDB's with the same values inline).
Each engine's database is deleted after its steps (at most one exists at a time).
"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench_common import (BenchFailed, fmt, kept_findings, last_record, log,  # noqa: E402
                          machine, run_bench, save_commands, table)
from json_tools import save_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INLINE = "18446744073709551615"
CONFIGS = {"inline64": (64, INLINE), "inline128": (128, INLINE), "sep1k": (1024, "1024")}
NAMES = {"leveled": "Augur leveled", "leveled-nolm": "Augur leveled, no level merge",
         "flsm": "Augur FLSM", "rocksdb": "RocksDB", "rocksdb-inline": "RocksDB, values inline",
         "leveldb": "LevelDB", "fjall": "fjall"}
AUGUR = ("leveled", "leveled-nolm", "flsm")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--augur", default=os.path.join(ROOT, "target", "release", "augur"))
    p.add_argument("--sizes", default="10000000,30000000")
    p.add_argument("--configs", default="inline64,inline128,sep1k")
    p.add_argument("--engines", default="leveled,flsm,rocksdb,leveldb,fjall")
    p.add_argument("--reads", type=int, default=300_000)
    p.add_argument("--read-mode", default="mmap",
                   help="Augur's read mode after the fill (the fill always reads with pread)")
    p.add_argument("--seeks", type=int, default=50_000)
    p.add_argument("--work-dir", default="/var/tmp/augur-write")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "docs", "benchmarks"))
    p.add_argument("--timeout", type=float, default=4 * 3600)
    p.add_argument("--render-only", action="store_true")
    return p.parse_args()


def engine_args(engine, db, num, config, read_mode):
    value_size, vsep = CONFIGS[config]
    if engine == "rocksdb-inline":
        engine, vsep = "rocksdb", INLINE
    args = [f"--db={db}", f"--num={num}", "--key_size=16", f"--value_size={value_size}",
            f"--value-separation-threshold={vsep}"]
    if engine in AUGUR:
        args.append(f"--read-mode={read_mode}")
        if engine == "flsm":
            args.append("--compaction=flsm")
        if engine == "leveled-nolm":
            args.append("--no-level-merge")
    else:
        args.append(f"--engine={engine}")
    return args


def run_cell(a, state, num, config, engine, commands):
    key = f"{num}/{config}/{engine}"
    cell = state["cells"].setdefault(key, {"num": num, "config": config, "engine": engine})
    db = os.path.join(a.work_dir, f"{engine}-{config}-{num}")
    shutil.rmtree(db, ignore_errors=True)
    os.makedirs(a.work_dir, exist_ok=True)
    raw = os.path.join(a.out_dir, "write-path-raw.jsonl")

    def bench(extra, tag, read_mode=a.read_mode):
        args = engine_args(engine, db, num, config, read_mode) + extra
        return run_bench(a.augur, args, raw_path=raw, tag=f"{key} {tag}",
                         timeout=a.timeout, commands=commands)

    try:
        # The fill reads with pread: its peak RSS then counts memtables and builders, not
        # mapped file pages (the RSS target).
        recs = bench(["--benchmarks=fillrandom,waitforcompaction"], "fill", "pread")
        f, w = last_record(recs, "fillrandom"), last_record(recs, "waitforcompaction") or {}
        fill_io, settle_io = f.get("io_bytes_written"), w.get("io_bytes_written")
        user = f["ops"] * (16 + CONFIGS[config][0])
        counters = ((w.get("stats") or {}).get("counters") or {})
        cell["fill"] = {
            "micros_per_op": f["micros_per_op"], "ops_per_sec": f.get("ops_per_sec"),
            "fill_s": f.get("seconds"), "settle_s": w.get("seconds"),
            "settled_wa": (fill_io + (settle_io or 0)) / user if fill_io else None,
            "space_amplification": w.get("space_amplification"),
            "db_bytes": w.get("db_bytes"), "live_bytes": w.get("live_bytes"),
            "peak_rss_mb": f.get("peak_rss_mb"),
            "write_stall_s": (counters.get("write_stall_ns") or 0) / 1e9 if counters else None,
            "write_slowdown_s": (counters.get("write_slowdown_ns") or 0) / 1e9 if counters else None,
            "levels": [lv.get("bytes") for lv in ((w.get("stats") or {}).get("levels") or [])
                       if isinstance(lv, dict)],
        }
        log(f"{key}: fill {fmt(f['micros_per_op'])} µs/op, WA {fmt(cell['fill']['settled_wa'], 2)}, "
            f"space amp {fmt(cell['fill']['space_amplification'], 2)}, RSS {fmt(f.get('peak_rss_mb'))} MB")
        save(a, state)
        recs = bench(["--use_existing_db", "--benchmarks=compact"], "compact")
        c = last_record(recs, "compact")
        cell["compact_s"] = c.get("seconds") if c else None
        # Bytes the full compaction wrote per user byte (level merge's rewrite, for sep1k).
        cell["compact_wa"] = (c.get("io_bytes_written") or 0) / user if c else None
        save(a, state)
        if config == "sep1k":
            for name, extra_args in (("readseq", ["--benchmarks=readseq"]),
                                     ("seek+10", ["--benchmarks=seekrandom", "--seek_nexts=10",
                                                  f"--reads={a.seeks}"]),
                                     ("seek+100", ["--benchmarks=seekrandom", "--seek_nexts=100",
                                                   f"--reads={a.seeks}"])):
                recs = bench(["--use_existing_db"] + extra_args, name)
                bench_name = "readseq" if name == "readseq" else "seekrandom"
                r = last_record(recs, bench_name)
                cell.setdefault("scans", {})[name] = r.get("micros_per_op") if r else None
                save(a, state)
        recs = bench(["--use_existing_db", f"--reads={a.reads}", "--threads=1",
                      "--benchmarks=readwhilewriting"], "readwhilewriting")
        r = last_record(recs, "readwhilewriting")
        r = r or {}
        cell["readwhilewriting"] = {"micros_per_op": r.get("micros_per_op"),
                                    "ops_per_sec": r.get("ops_per_sec"),
                                    "writes_per_sec": r.get("writes_per_sec")}
        save(a, state)
        if config == "sep1k" and engine in AUGUR:
            # Value-log GC of 50% garbage: --num overwrites of the --num keys leave half the
            # log's values dead; readrandom in fresh processes before and after the GC. Until
            # the GC, ratio 1 holds automatic GC and compactions' relocation back, so the
            # garbage stays and no background GC runs under the first readrandom.
            no_gc = ["--value-log-gc-ratio=1"]
            bench(["--use_existing_db", "--benchmarks=overwrite,waitforcompaction"] + no_gc,
                  "overwrite")
            gc = cell.setdefault("gc", {})
            r = last_record(bench(["--use_existing_db", f"--reads={3 * a.reads}",
                                   "--benchmarks=waitforcompaction,readrandom,readrandom"] + no_gc, "readrandom before gc"),
                            "readrandom")
            gc["before_io_bytes"] = r.get("io_bytes_written") if r else None
            gc["readrandom_before_us"] = r.get("micros_per_op") if r else None
            r = last_record(bench(["--use_existing_db", "--benchmarks=gc"], "gc"), "gc") or {}
            gc.update({"gc_s": r.get("seconds"), "segments": r.get("segments_collected"),
                       "tables": r.get("tables_rewritten"), "relocated": r.get("values_relocated")})
            r = last_record(bench(["--use_existing_db", f"--reads={3 * a.reads}",
                                   "--benchmarks=waitforcompaction,readrandom,readrandom"], "readrandom after gc"), "readrandom")
            gc["readrandom_after_us"] = r.get("micros_per_op") if r else None
            gc["after_io_bytes"] = r.get("io_bytes_written") if r else None
            save(a, state)
    except BenchFailed as e:
        log(f"ERROR {key}: {e.short()}")
        cell["failed"] = e.short()
        save(a, state)
    finally:
        shutil.rmtree(db, ignore_errors=True)


def json_path(a):
    return os.path.join(a.out_dir, "write-path.json")


def save(a, state):
    save_json(a.out_dir, "write-path.json", state)


def render(a, state):
    cells = state["cells"]
    md = ["# Write path: fills, compaction, reads while writing, scans over separated values", "",
          "Issue 28. Made by `scripts/write_path_bench.py` (every command line at the end; raw "
          "records in `write-path-raw.jsonl`, the table's numbers in `write-path.json`).", "",
          f"Machine: {state.get('machine', '?')}.", "",
          "One run on a shared, noisy 2-core VM: ratios between engines of the same run hold better "
          "than absolute times.", ""]
    for num in sorted({c["num"] for c in cells.values()}):
        for config in CONFIGS:
            rows = [c for c in cells.values() if c["num"] == num and c["config"] == config]
            if not rows:
                continue
            rows.sort(key=lambda c: list(NAMES).index(c["engine"]))
            rocks = next((c for c in rows if c["engine"] == "rocksdb"), {})
            lev = next((c for c in rows if c["engine"] == "leveled"), {})

            def vs(c, base, path):
                x, y = c, base
                for p in path:
                    x = (x or {}).get(p)
                    y = (y or {}).get(p)
                return f"{x / y:.2f}" if x and y else "-"

            md += [f"## {num:,} keys, {config}", ""]
            body = []
            for c in rows:
                f = c.get("fill") or {}
                rww = c.get("readwhilewriting") or {}
                body.append([NAMES[c["engine"]] + (f" (failed: {c['failed']})" if c.get("failed") else ""),
                             fmt(f.get("micros_per_op")), vs(rocks, c, ["fill", "micros_per_op"]),
                             fmt(f.get("settled_wa"), 2), vs(c, rocks, ["fill", "settled_wa"]),
                             vs(c, lev, ["fill", "settled_wa"]),
                             fmt(f.get("space_amplification"), 2), fmt(f.get("peak_rss_mb"), 0),
                             fmt(f.get("write_stall_s"), 1), fmt(f.get("write_slowdown_s"), 1),
                             fmt(c.get("compact_s"), 1), fmt(rww.get("micros_per_op")),
                             vs(rocks, c, ["readwhilewriting", "micros_per_op"])])
            md += table(["engine", "fillrandom µs/op", "fill speed ÷ RocksDB", "write amp (settled)",
                         "WA ÷ RocksDB", "WA ÷ Augur leveled", "space amp", "peak RSS MB (fill)",
                         "stall s", "slowdown s", "compact s", "readwhilewriting µs/read",
                         "reads ÷ RocksDB"], body) + [""]
            if config == "sep1k":
                level = next((c for c in rows if c["engine"] == "leveldb"), {})
                inline = next((c for c in rows if c["engine"] == "rocksdb-inline"), {})
                inline_wa = ((inline.get("fill") or {}).get("settled_wa"), inline.get("compact_wa"))
                body = []
                for c in rows:
                    s = c.get("scans") or {}
                    f = c.get("fill") or {}
                    wa = (f.get("settled_wa") + c["compact_wa"]
                          if f.get("settled_wa") and c.get("compact_wa") is not None else None)
                    body.append([NAMES[c["engine"]], fmt(wa, 2),
                                 vs({"w": f.get("settled_wa")}, {"w": inline_wa[0]}, ["w"]),
                                 vs({"w": wa}, {"w": inline_wa[0] + inline_wa[1]
                                                if inline_wa[0] and inline_wa[1] is not None else None}, ["w"])]
                                + [fmt(s.get(n)) for n in ("readseq", "seek+10", "seek+100")]
                                + [vs({"s": (level.get("scans") or {})}, {"s": s}, ["s", n])
                                   for n in ("seek+10", "seek+100")]
                                + [vs({"s": (rocks.get("scans") or {})}, {"s": s}, ["s", n])
                                   for n in ("seek+10", "seek+100")])
                md += table(["engine", "write amp incl. full compact", "WA settled ÷ RocksDB inline",
                             "incl. compact ÷ RocksDB inline", "readseq µs/entry", "seek+10 µs", "seek+100 µs",
                             "seek+10 speed ÷ LevelDB", "seek+100 ÷ LevelDB",
                             "seek+10 ÷ RocksDB", "seek+100 ÷ RocksDB"], body) + [""]
                body = []
                for c in rows:
                    g = c.get("gc")
                    if not g:
                        continue
                    body.append([NAMES[c["engine"]], fmt(g.get("readrandom_before_us")),
                                 fmt(g.get("readrandom_after_us")),
                                 vs({"t": g.get("readrandom_after_us")},
                                    {"t": g.get("readrandom_before_us")}, ["t"]),
                                 fmt(g.get("gc_s"), 1), fmt(g.get("segments"), 0),
                                 fmt(g.get("tables"), 0), fmt(g.get("relocated"), 0)])
                if body:
                    md += ["Value-log GC of 50% garbage (`overwrite` of --num keys, settled, "
                           "with `--value-log-gc-ratio=1`: no automatic GC or relocation; "
                           "readrandom in a fresh process before (same option) and after `gc`):", ""]
                    md += table(["engine", "readrandom µs before GC", "after GC",
                                 "after ÷ before (time)", "gc s", "segments collected",
                                 "tables rewritten", "values relocated"], body) + [""]
    report = os.path.join(a.out_dir, "write-path.md")
    md += ["## Findings", "", kept_findings(report, "## Commands"), ""]
    md += ["## Commands", "", "```"] + state.get("commands", []) + ["```", ""]
    with open(report, "w") as f:
        f.write("\n".join(md))


def main():
    a = parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    if a.render_only:
        with open(json_path(a)) as f:
            render(a, json.load(f))
        return
    state = {"machine": machine(ROOT, [a.work_dir]), "cells": {}, "commands": []}
    if os.path.exists(json_path(a)):
        with open(json_path(a)) as f:
            old = json.load(f)
        state["cells"] = old.get("cells", {})
        state["commands"] = old.get("commands", [])
    commands = state["commands"]
    for num in [int(x) for x in a.sizes.split(",")]:
        for config in a.configs.split(","):
            for engine in a.engines.split(","):
                run_cell(a, state, num, config, engine, commands)
                render(a, state)
    save(a, state)
    render(a, state)
    # commands.json keeps every script's commands; it empties the list it is given.
    save_commands(a.out_dir, list(commands))
    log("done: " + os.path.join(a.out_dir, "write-path.md"))


if __name__ == "__main__":
    main()
