#!/usr/bin/env python3
"""Data bigger than memory (issue 27): direct reads through a bounded cache, Bourbon's
limited-memory (Table 3) and on-storage (Table 2) results, and PebblesDB's setting (a
database 3× the cache), with the peers in the same run. Renders
docs/benchmarks/beyond-memory.md and keeps every raw JSON record in beyond-memory.json.

  scripts/beyond_memory_bench.py --peers-bin <augur built with the peers> [--augur BIN]
      [--num 20000000] [--sep-num 2000000] [--pebbles-num 10000000] [--reads 500000]
      [--rounds 2] [--work-dir /var/tmp/augur-beyond] [--parts t3,t2,sep,pebbles]

Every database lives on disk (--work-dir, default /var/tmp/augur-beyond; never tmpfs) and
every read runs with db_bench's memory flags, so one command line gives every engine the same
budget: `--use_direct_reads=1 --cache_size=BYTES` (Augur: O_DIRECT through its page cache,
filters/fence indexes/models pinned beside it; RocksDB: direct reads and an LRU block cache of
that size, index and filter blocks pinned outside it). LevelDB and fjall have no direct reads:
they run with `--use_direct_reads=0` and their own cache of that size, and the kernel's page
cache (which this unprivileged script cannot drop) still holds their files — their figures
are not memory-bounded, and the report says so.

Parts (--parts):
  t3       Bourbon Table 3: --num keys (16-byte keys, 64-byte values inline), filled and fully
           compacted once per engine; then readrandom with a cache of 25% of the database's
           bytes, uniform and hotspot (--read_distribution hotspot: 80% of the lookups on the
           first 25% of the keys in key order, YCSB's hotspotdatafraction 0.25 /
           hotspotopnfraction 0.8): Augur's learned path (--learning at-build), its baseline
           path (--learning never, the same files) and RocksDB.
  t2       Bourbon Table 2: the same databases, a cache of 1% of the database: each lookup
           goes to the device; device reads and bytes per lookup reported.
  sep      t3's uniform and hotspot reads over --sep-num keys with 1 KiB values (separated in
           Augur, inline in RocksDB), cache 25% of each database.
  pebbles  PebblesDB's setting: fillrandom of --pebbles-num keys (settled), then readrandom
           (--reads) and seekrandom --seek_nexts 100 (--seeks), cache = a third of the database
           (sized from a first fill): Augur leveled, Augur FLSM, RocksDB, LevelDB, fjall.
Fill, reads and seeks are three processes. Each read process runs `readrandom` twice (or the
seek twice); the first warms the cache, the
second is measured. Rounds rotate the order of the engines. RSS is the process's peak during
the measured benchmark against Augur's budget (cache + memtables + pinned + 64 MiB).

--render-only re-renders the report from the JSON.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench_common import (BenchFailed, dir_bytes, fmt, human_bytes, last_record, log,  # noqa: E402
                          machine, median_or_none, run_bench, save_commands, table)
from json_tools import save_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(ROOT, "target", "release", "augur")
INLINE = "18446744073709551615"
HOTSPOT = ["--read_distribution", "hotspot", "--hotspot_data_fraction", "0.25",
           "--hotspot_ops_fraction", "0.8"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--augur", default=DEFAULT_BIN)
    p.add_argument("--peers-bin", required=False)
    p.add_argument("--num", type=int, default=20_000_000)
    p.add_argument("--sep-num", type=int, default=2_000_000)
    p.add_argument("--pebbles-num", type=int, default=10_000_000)
    p.add_argument("--reads", type=int, default=500_000)
    p.add_argument("--seeks", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--pebbles-rounds", type=int, default=1)
    p.add_argument("--parts", default="t3,t2,sep,pebbles")
    p.add_argument("--work-dir", default="/var/tmp/augur-beyond")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "docs", "benchmarks"))
    p.add_argument("--timeout", type=float, default=7200)
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the databases")
    return p.parse_args()


class Run:
    """The state of one script run: where things go and every record measured."""

    def __init__(self, a):
        self.a = a
        self.json_path = os.path.join(a.out_dir, "beyond-memory.json")
        self.raw = os.path.join(a.work_dir, "raw.jsonl")
        self.commands = []
        self.data = {"cells": [], "dbs": {}, "config": {}}

    def bench(self, binary, args, tag):
        recs = run_bench(binary, args, raw_path=self.raw, tag=tag, timeout=self.a.timeout,
                         commands=self.commands)
        return recs

    def save(self):
        self.data["commands"] = self.commands
        save_json(self.a.out_dir, "beyond-memory.json", self.data)


def engine_bin(r, engine):
    return r.a.augur if engine == "augur" else r.a.peers_bin


def values_flags(value_size, separated):
    flags = ["--value_size", str(value_size), "--key_size", "16"]
    flags += ["--value_separation_threshold", "512" if separated else INLINE]
    return flags


def build_db(r, name, engine, num, value_size, separated, extra=()):
    """Fills and fully compacts one database; returns its directory and bytes."""
    db = os.path.join(r.a.work_dir, name)
    if name in r.data["dbs"] and os.path.isdir(db):
        return db, r.data["dbs"][name]["bytes"]
    shutil.rmtree(db, ignore_errors=True)
    args = [f"--engine={engine}", f"--db={db}", f"--num={num}", "--benchmarks=fillrandom,compact",
            "--use_direct_reads=0"] + values_flags(value_size, separated) + list(extra)
    started = time.time()
    recs = r.bench(engine_bin(r, engine), args, f"build {name}")
    size = dir_bytes(db)
    r.data["dbs"][name] = {"engine": engine, "num": num, "value_size": value_size,
                           "separated": separated, "bytes": size,
                           "fill": last_record(recs, "fillrandom"),
                           "build_s": time.time() - started}
    r.save()
    return db, size


def read_cell(r, part, label, engine, db, num, cache, dist, learning=None, value_size=64,
              separated=False, rnd=0):
    args = [f"--engine={engine}", f"--db={db}", "--use_existing_db", f"--num={num}",
            f"--reads={r.a.reads}", "--benchmarks=readrandom,readrandom",
            "--use_direct_reads=1", f"--cache_size={cache}"] + values_flags(value_size, separated)
    if engine == "augur":
        args += [f"--learning={learning}"]
    if dist == "hotspot":
        args += HOTSPOT
    cell = {"part": part, "label": label, "engine": engine, "dist": dist, "cache": cache,
            "round": rnd}
    try:
        recs = r.bench(engine_bin(r, engine), args, f"{part} {label} {dist}")
        cell["record"] = last_record(recs, "readrandom")
    except BenchFailed as e:
        cell["error"] = e.short()
    r.data["cells"].append(cell)
    r.save()


def part_reads(r, part):
    """t3, t2 and sep: builds (or reuses) the databases, then the read cells."""
    separated = part == "sep"
    num = r.a.sep_num if separated else r.a.num
    value_size = 1024 if separated else 64
    frac = 0.01 if part == "t2" else 0.25
    dists = ["uniform"] if part == "t2" else ["uniform", "hotspot"]
    kind = "sep" if separated else "inline"
    augur_db, augur_bytes = build_db(r, f"augur-{kind}", "augur", num, value_size, separated)
    rocks_db, rocks_bytes = build_db(r, f"rocksdb-{kind}", "rocksdb", num, value_size, separated)
    cells = [("Augur learned", "augur", augur_db, augur_bytes, "at-build"),
             ("Augur baseline", "augur", augur_db, augur_bytes, "never"),
             ("RocksDB", "rocksdb", rocks_db, rocks_bytes, None)]
    for rnd in range(r.a.rounds):
        order = cells[rnd % len(cells):] + cells[:rnd % len(cells)]
        for dist in dists:
            for label, engine, db, size, learning in order:
                read_cell(r, part, label, engine, db, num, int(size * frac), dist, learning,
                          value_size, separated, rnd)


def part_pebbles(r):
    num = r.a.pebbles_num
    probe, size = build_db(r, "pebbles-probe", "augur", num, 64, False)
    cache = size // 3
    r.data["config"]["pebbles_cache"] = cache
    if not r.a.keep:
        shutil.rmtree(probe, ignore_errors=True)
    engines = [("Augur leveled", "augur", ["--compaction=leveled"], True),
               ("Augur FLSM", "augur", ["--compaction=flsm"], True),
               ("RocksDB", "rocksdb", [], True),
               ("LevelDB", "leveldb", [], False),
               ("fjall", "fjall", [], False)]
    for rnd in range(r.a.pebbles_rounds):
        order = engines[rnd % len(engines):] + engines[:rnd % len(engines)]
        for label, engine, extra, direct in order:
            db = os.path.join(r.a.work_dir, f"pebbles-{engine}-{label.split()[-1].lower()}")
            shutil.rmtree(db, ignore_errors=True)
            base = [f"--engine={engine}", f"--db={db}", f"--num={num}",
                    f"--use_direct_reads={1 if direct else 0}", f"--cache_size={cache}"]
            base += values_flags(64, False) + extra
            cell = {"part": "pebbles", "label": label, "engine": engine, "cache": cache,
                    "round": rnd, "direct": direct}
            try:
                recs = r.bench(engine_bin(r, engine),
                               base + ["--benchmarks=fillrandom,waitforcompaction"],
                               f"pebbles {label} fill")
                cell["fill"] = last_record(recs, "fillrandom")
                cell["db_bytes"] = dir_bytes(db)
                recs = r.bench(engine_bin(r, engine),
                               base + ["--use_existing_db", f"--reads={r.a.reads}",
                                       "--benchmarks=readrandom,readrandom"],
                               f"pebbles {label} read")
                cell["read"] = last_record(recs, "readrandom")
                recs = r.bench(engine_bin(r, engine),
                               base + ["--use_existing_db", f"--reads={r.a.seeks}",
                                       "--seek_nexts=100", "--benchmarks=seekrandom,seekrandom"],
                               f"pebbles {label} seek")
                cell["seek"] = last_record(recs, "seekrandom")
            except BenchFailed as e:
                cell["error"] = e.short()
            shutil.rmtree(db, ignore_errors=True)
            r.data["cells"].append(cell)
            r.save()


# ---------------------------------------------------------------- rendering

def med(cells, key):
    return median_or_none([key(c) for c in cells if key(c) is not None])


def field(name):
    return lambda c: (c.get("record") or {}).get(name)


def us(c):
    return (c.get("record") or {}).get("micros_per_op")


def reads_table(data, part):
    cells = [c for c in data["cells"] if c["part"] == part]
    if not cells:
        return ["(not run)"]
    rows = []
    dists = sorted({c["dist"] for c in cells}, key=lambda d: d != "uniform")
    for dist in dists:
        base = med([c for c in cells if c["dist"] == dist and c["label"] == "Augur baseline"], us)
        rocks = med([c for c in cells if c["dist"] == dist and c["label"] == "RocksDB"], us)
        for label in ("Augur learned", "Augur baseline", "RocksDB"):
            cs = [c for c in cells if c["dist"] == dist and c["label"] == label]
            errors = [c["error"] for c in cs if "error" in c]
            t = med(cs, us)
            if t is None:
                rows.append([dist, label] + ["-"] * 9 + [errors[0] if errors else ""])
                continue
            rss = med(cs, field("benchmark_peak_rss_mb"))
            budget = med(cs, field("memory_budget_mb"))
            within = [field("rss_within_budget")(c) for c in cs]
            rows.append([
                dist, label, fmt(t),
                f"{base / t:.2f}×" if base and label != "RocksDB" else "-",
                f"{rocks / t:.2f}×" if rocks and label != "RocksDB" else "-",
                fmt(med(cs, field("device_reads_per_op")), 2),
                fmt(med(cs, field("device_bytes_per_op")), 0),
                fmt(med(cs, field("cache_hit_ratio")), 3),
                human_bytes(cs[0]["cache"]),
                f"{fmt(rss, 0)} / {fmt(budget, 0)}" if budget else fmt(rss, 0),
                {True: "yes", False: "**no**"}.get(within[0], "-") if budget else "-",
                "; ".join(errors)])
    header = ["reads", "engine", "µs/op", "vs baseline", "vs RocksDB", "device reads/op",
              "device bytes/op", "hit ratio", "cache", "peak RSS MiB / budget", "within", "notes"]
    return table(header, rows)


def pebbles_table(data):
    cells = [c for c in data["cells"] if c["part"] == "pebbles"]
    if not cells:
        return ["(not run)"]
    rows = []
    for label in ("Augur leveled", "Augur FLSM", "RocksDB", "LevelDB", "fjall"):
        cs = [c for c in cells if c["label"] == label]
        if not cs:
            continue
        errors = [c["error"] for c in cs if "error" in c]
        get = lambda part, name: med(cs, lambda c: (c.get(part) or {}).get(name))  # noqa: E731
        rows.append([label, "direct" if cs[0]["direct"] else "buffered (page cache)",
                     fmt(get("fill", "micros_per_op")), fmt(get("read", "micros_per_op")),
                     fmt(get("seek", "micros_per_op")),
                     fmt(get("read", "benchmark_peak_rss_mb"), 0), fmt(get("read", "memory_budget_mb"), 0),
                     human_bytes(med(cs, lambda c: c.get("db_bytes"))), "; ".join(errors)])
    return table(["engine", "reads", "fillrandom µs/op", "readrandom µs/op",
                  "seekrandom+100 µs/op", "peak RSS MiB", "budget MiB", "db bytes", "notes"], rows)


def render(r):
    d = r.data
    out = ["# Data bigger than memory: direct reads, a bounded cache, Bourbon Tables 2 and 3",
           "",
           "Generated by `scripts/beyond_memory_bench.py` (commands at the end). "
           "Medians over rounds; ratios are of times in the same run (higher is better for "
           "Augur).", "", "## Findings", "", "<!-- findings: written after a run -->", "",
           "## Setup", "", f"Machine: {machine(ROOT, [r.a.work_dir])}.", ""]
    for name, db in sorted(d["dbs"].items()):
        out.append(f"- `{name}`: {db['num']:,} keys × {db['value_size']} B values "
                   f"({'separated' if db['separated'] else 'inline'}), {human_bytes(db['bytes'])} "
                   f"on disk after fill + compact")
    out += ["", "## Bourbon Table 3: cache = 25% of the database", ""] + reads_table(d, "t3")
    out += ["", "## Bourbon Table 2: cache = 1% of the database (data on storage)", ""]
    out += reads_table(d, "t2")
    out += ["", "## 1 KiB values (separated in Augur), cache = 25%", ""] + reads_table(d, "sep")
    out += ["", "## PebblesDB's setting: database 3× the cache", ""]
    if "pebbles_cache" in d["config"]:
        out.append(f"Cache {human_bytes(d['config']['pebbles_cache'])} per engine.")
        out.append("")
    out += pebbles_table(d)
    out += ["", "## Commands", "", "```"] + d.get("commands", []) + ["```", ""]
    path = os.path.join(r.a.out_dir, "beyond-memory.md")
    old = open(path).read() if os.path.exists(path) else ""
    if "## Findings" in old:
        start = old.index("## Findings")
        kept = old[start:old.index("## Setup", start)]
        text = "\n".join(out)
        text = text[:text.index("## Findings")] + kept + text[text.index("## Setup"):]
    else:
        text = "\n".join(out)
    with open(path, "w") as f:
        f.write(text)
    log(f"wrote {path}")


def main():
    a = parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    os.makedirs(a.out_dir, exist_ok=True)
    r = Run(a)
    if os.path.exists(r.json_path):
        r.data = json.load(open(r.json_path))
        r.commands = r.data.get("commands", [])
    if a.render_only:
        render(r)
        return
    fs = subprocess.run(["df", "--output=fstype", a.work_dir], capture_output=True, text=True).stdout.split()
    if fs and fs[-1] in ("tmpfs", "ramfs"):
        sys.exit(f"{a.work_dir} is on {fs[-1]}: the databases must be on disk")
    parts = a.parts.split(",")
    if not a.peers_bin:
        sys.exit("--peers-bin is required (a build with --features augur-cli/rocksdb,...)")
    r.data["config"].update({"num": a.num, "sep_num": a.sep_num, "pebbles_num": a.pebbles_num,
                             "reads": a.reads, "rounds": a.rounds})
    for part in parts:
        if part in ("t3", "t2", "sep"):
            part_reads(r, part)
        elif part == "pebbles":
            part_pebbles(r)
        else:
            sys.exit(f"unknown part {part}")
        render(r)
    if not a.keep:
        for name in list(r.data["dbs"]):
            shutil.rmtree(os.path.join(a.work_dir, name), ignore_errors=True)
    render(r)


if __name__ == "__main__":
    main()
