#!/usr/bin/env python3
"""Issue 10's measurements: range queries against the peers, learned vs baseline seeks,
value-log readahead, parallel scans. Runs `augur bench` (built with the peers by
scripts/bench_range.sh), keeps every JSON record in $OUT, and renders $REPORT.

The machine these numbers come from is a shared 2-core VM whose speed drifts by tens of
percent within minutes, so every comparison is measured in ROUNDS alternating rounds (each
round runs every configuration once, in a fresh process, on the same databases) and the
tables give the median of the rounds (and every round's value in the JSON). Ratios are taken
between medians of the same run.

Sections (SECTIONS env var, default all):
  A  engines, 16-byte keys, 64-byte values, NUM keys: readseq, seekrandom with 0, 10 and 100
     nexts, on settled databases (fillrandom + compact)
  B  YCSB-E on NUM records (ycsb-load; each round: ycsb-c as warm-up, then ycsb-e)
  C  1 KiB values, NUM_1K keys, values separated (Augur, RocksDB BlobDB, fjall blob files) and
     inline peers: readseq, seekrandom with 10 and 100 nexts
  CI section C with the values inline in every engine (Augur's separation threshold above
     the value size): the iterator stacks without value-log reads (not in the default list)
  D  readahead of separated values: Augur's 1 KiB database on disk, cold cache (page cache
     dropped before each run) and warm, readahead 1 vs 64, fetch threads 0 / 2 / 8
  E  learned vs baseline seek (the seed's Table 2) on synthetic and real key sets, range
     lengths 1, 16, 128, 256, 1024 entries
  F  parallel scans of 64K-key ranges with 1 KiB separated values: 1 vs 2 threads, and the
     learned (balanced) vs key-space split on the real key sets
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench_common import (fmt, kept_findings, last_record, log, machine, medians, ratio,  # noqa: E402
                          run_bench, save_commands)
from json_tools import save_json, uniq  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUGUR = os.environ.get("AUGUR", os.path.join(ROOT, "target", "release", "augur"))
DB = os.environ.get("DB", "/dev/shm/augur-range")
DISK_DB = os.environ.get("DISK_DB", os.path.join(ROOT, "..", "augur-range-disk"))
OUT = os.environ.get("OUT", os.path.join(ROOT, "docs", "benchmarks", "range"))
REPORT = os.environ.get("REPORT", os.path.join(ROOT, "docs", "benchmarks", "range-queries.md"))
DATASETS = os.environ.get("DATASETS", os.path.join(ROOT, "..", "shared", "datasets"))
SECTIONS = os.environ.get("SECTIONS", "A B C D E F").split()
QUICK = os.environ.get("QUICK") == "1"
ROUNDS = int(os.environ.get("ROUNDS", "2" if QUICK else "5"))
NUM = int(os.environ.get("NUM", "20000" if QUICK else "10000000"))
NUM_1K = int(os.environ.get("NUM_1K", "20000" if QUICK else "1000000"))
OPS = int(os.environ.get("OPS", "2000" if QUICK else "200000"))
E_NUM = int(os.environ.get("E_NUM", "20000" if QUICK else "5000000"))
E_ROUNDS = int(os.environ.get("E_ROUNDS", str(min(ROUNDS, 3))))
E_OPS = float(os.environ.get("E_OPS", "1000000"))
CACHE = os.environ.get("CACHE", str(1 << 30))
COMMANDS = []


def bench(args, tag):
    """Runs one `augur bench` command (no time limit); returns its JSON records (also kept in
    $OUT/raw.jsonl)."""
    return run_bench(AUGUR, args, raw_path=os.path.join(OUT, "raw.jsonl"), tag=tag, timeout=None,
                     commands=COMMANDS)


def save(name, data):
    save_json(OUT, name, data)


def label(r):
    return r["config"].get("label") or r["config"].get("engine") or "augur"


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def last_per_label(records, bench_name):
    """The last record of `bench_name` per label (earlier ones are warm-ups)."""
    out = {}
    for r in records:
        if r["benchmark"] == bench_name:
            out[label(r)] = r
    return out


def engine_rounds(base, specs, tag):
    """For each (name, extra flags, reads) of `specs`: ROUNDS rounds of `--compare` on the
    existing databases, each benchmark run twice per process (the second, warm run kept);
    returns {name: {label: (median µs, [µs per round])}}."""
    rows = {}
    for name, extra, reads in specs:
        bench_name = name.split("+")[0]
        rounds = []
        for _ in range(ROUNDS):
            recs = bench(["--compare", "--use_existing_db"] + base + extra +
                         [f"--reads={max(reads, 1)}", f"--benchmarks={bench_name},{bench_name}"],
                         f"{tag}-{name}")
            rounds.append({k: r["micros_per_op"] for k, r in last_per_label(recs, bench_name).items()})
        rows[name] = medians(rounds)
    return rows


# ---------------------------------------------------------------- A: engines, 64-byte values
def section_a():
    db = os.path.join(DB, "A")
    shutil.rmtree(db, ignore_errors=True)
    base = [f"--db={db}", f"--num={NUM}", "--key_size=16", "--value_size=64", f"--cache_size={CACHE}"]
    bench(["--compare"] + base + ["--benchmarks=fillrandom,compact"], "A-fill")
    rows = engine_rounds(base, [
        ("readseq", [], max(OPS * 10, 1)),
        ("seekrandom+0", ["--seek_nexts=0"], OPS),
        ("seekrandom+10", ["--seek_nexts=10"], OPS),
        ("seekrandom+100", ["--seek_nexts=100"], OPS // 2),
    ], "A")
    save("A.json", rows)
    shutil.rmtree(db, ignore_errors=True)
    return rows


# ---------------------------------------------------------------- B: YCSB-E
def section_b():
    db = os.path.join(DB, "B")
    shutil.rmtree(db, ignore_errors=True)
    base = [f"--db={db}", f"--num={NUM}", f"--cache_size={CACHE}"]
    bench(["--compare"] + base + ["--benchmarks=ycsb-load"], "B-load")
    rounds = []
    for _ in range(ROUNDS):
        recs = bench(["--compare", "--use_existing_db"] + base +
                     [f"--reads={OPS}", "--benchmarks=ycsb-c,ycsb-e"], "B-ycsb-e")
        rounds.append({k: r["micros_per_op"] for k, r in last_per_label(recs, "ycsb-e").items()})
    rows = {"ycsb-e": medians(rounds)}
    save("B.json", rows)
    shutil.rmtree(db, ignore_errors=True)
    return rows


# ---------------------------------------------------------------- C: 1 KiB separated values
def section_c(threshold=1024, name="C"):
    db = os.path.join(DB, name)
    shutil.rmtree(db, ignore_errors=True)
    base = [f"--db={db}", f"--num={NUM_1K}", "--value_size=1024",
            f"--value-separation-threshold={threshold}", f"--cache_size={CACHE}"]
    bench(["--compare"] + base + ["--benchmarks=fillrandom,compact,waitforcompaction"], f"{name}-fill")
    rows = engine_rounds(base, [
        ("readseq", [], OPS * 2),
        ("seekrandom+10", ["--seek_nexts=10"], OPS // 4),
        ("seekrandom+100", ["--seek_nexts=100"], OPS // 20),
    ], name)
    save(f"{name}.json", rows)
    shutil.rmtree(db, ignore_errors=True)
    return rows


def section_c_inline():
    """Section C with every engine keeping the 1 KiB values inline (Augur's threshold above
    the value size): what the iterator stack does without the value log's random reads."""
    return section_c(threshold=1 << 20, name="CI")


# ---------------------------------------------------------------- D: readahead, cold and warm
def section_d():
    db = os.path.join(DISK_DB, "D")
    shutil.rmtree(db, ignore_errors=True)
    base = [f"--db={db}", f"--num={NUM_1K}", "--value_size=1024", "--value-separation-threshold=1024"]
    bench(base + ["--benchmarks=fillrandom,compact"], "D-fill")
    configs = [("pread", 1, 0), ("pread", 64, 0), ("pread", 64, 2), ("pread", 64, 8),
               ("mmap", 1, 0), ("mmap", 64, 0), ("mmap", 64, 2)]
    reads = OPS // 2
    cold_rounds, warm_rounds = [], []
    for _ in range(max(2, ROUNDS // 2)):
        cold, warm = {}, {}
        for mode, ra, ft in configs:
            key = f"{mode} readahead={ra} fetch_threads={ft}"
            drop_caches()
            recs = bench(["--use_existing_db"] + base +
                         [f"--read-mode={mode}", f"--scan-readahead={ra}", f"--scan-fetch-threads={ft}",
                          f"--reads={reads}", "--benchmarks=readseq,readseq"], "D-readseq")
            runs = [r for r in recs if r["benchmark"] == "readseq"]
            cold[key] = runs[0]["micros_per_op"]
            warm[key] = runs[-1]["micros_per_op"]
        cold_rounds.append(cold)
        warm_rounds.append(warm)
    rows = {"cold": medians(cold_rounds), "warm": medians(warm_rounds)}
    save("D.json", rows)
    shutil.rmtree(db, ignore_errors=True)
    return rows


# ---------------------------------------------------------------- E: learned vs baseline seek
LENGTHS = [1, 16, 128, 256, 1024]


def key_sources():
    out = [("uniform (db_bench keys)", [f"--num={E_NUM}"]),
           ("linear", ["--distribution=linear", f"--num={E_NUM}"]),
           ("seg1", ["--distribution=seg1", f"--num={E_NUM}"])]
    for f in sorted(os.listdir(DATASETS)):
        path = os.path.join(DATASETS, f)
        if f.endswith(".u64"):
            out.append((f[:-4], [f"--keys={path}"] + (["--num=20000"] if QUICK else [])))
        elif f.endswith(".txt"):
            out.append((f[:-4], [f"--keys-text={path}"] + (["--num=20000"] if QUICK else [])))
    return out


def section_e():
    """One database per key set, built with at-build models; each round seeks it once with
    `--learning=never` (the models are ignored: fence pointers and binary search) and once
    with `at-build`, so both paths read the very same files."""
    rows = {}
    for name, source in key_sources():
        db = os.path.join(DB, "E", "db")
        shutil.rmtree(db, ignore_errors=True)
        bench([f"--db={db}", "--learning=at-build", "--value-separation-threshold=1000000"] + source +
              ["--benchmarks=fillrandom,compact"], f"E-fill-{name}")
        per_length = {}
        for length in LENGTHS:
            # About a second per run: a seek costs ~2 µs, a next ~0.1 µs.
            reads = int(E_OPS / (2 + 0.1 * length)) if not QUICK else 200
            rounds = []
            for _ in range(E_ROUNDS):
                r = {}
                for policy in ("never", "at-build"):
                    recs = bench([f"--db={db}", "--use_existing_db", f"--learning={policy}",
                                  "--value-separation-threshold=1000000"] + source +
                                 [f"--seek_nexts={length - 1}", f"--reads={reads}",
                                  "--benchmarks=seekrandom,seekrandom"], f"E-{name}-{length}")
                    r[policy] = last_record(recs, "seekrandom")["micros_per_op"]
                rounds.append(r)
            per_length[str(length)] = medians(rounds)
        rows[name] = per_length
        shutil.rmtree(db, ignore_errors=True)
    save("E.json", rows)
    return rows


# ---------------------------------------------------------------- F: parallel scans
def section_f():
    out = {}
    # F1: 1 vs 2 threads, db_bench keys, 1 KiB separated values.
    db = os.path.join(DB, "F1")
    shutil.rmtree(db, ignore_errors=True)
    base = [f"--db={db}", f"--num={NUM_1K}", "--value_size=1024", "--value-separation-threshold=1024"]
    bench(base + ["--benchmarks=fillrandom,compact"], "F1-fill")
    scans = 10 if QUICK else 60
    rounds = []
    for _ in range(ROUNDS):
        r = {}
        for threads, parts in ((1, 0), (2, 0), (2, 8)):
            recs = bench(["--use_existing_db"] + base +
                         [f"--reads={scans}", f"--scan-threads={threads}", f"--scan-partitions={parts}",
                          "--scan-range-keys=65536", "--benchmarks=scanparallel,scanparallel"], "F1")
            last = last_record(recs, "scanparallel")
            r[f"threads={threads} partitions={parts or threads}"] = last["micros_per_op"]
        rounds.append(r)
    out["threads"] = medians(rounds)
    shutil.rmtree(db, ignore_errors=True)
    # F2: balanced vs key-space split on the real key sets (2 threads, one partition each).
    splits = {}
    for name, source in key_sources()[3:]:
        if "--keys-text" in source[0]:
            continue
        db = os.path.join(DB, "F2")
        shutil.rmtree(db, ignore_errors=True)
        base = [f"--db={db}", "--value_size=1024", "--value-separation-threshold=1024"] + source
        bench(base + ["--benchmarks=fillrandom,compact"], f"F2-fill-{name}")
        rounds, imbalance = [], {}
        for _ in range(ROUNDS):
            r = {}
            for split, parts in (("keyspace", 2), ("balanced", 2), ("keyspace", 8)):
                recs = bench(["--use_existing_db"] + base +
                             [f"--reads={scans // 2}", "--scan-threads=2", f"--scan-split={split}",
                              f"--scan-partitions={parts}", "--scan-range-keys=65536",
                              "--benchmarks=scanparallel,scanparallel"], f"F2-{name}")
                last = last_record(recs, "scanparallel")
                key = f"{split} partitions={parts}"
                r[key] = last["micros_per_op"]
                imbalance.setdefault(key, []).append(last.get("partition_imbalance"))
            rounds.append(r)
        splits[name] = {"times": medians(rounds),
                        "imbalance": {k: statistics.median(v) for k, v in imbalance.items()}}
        shutil.rmtree(db, ignore_errors=True)
    out["splits"] = splits
    save("F.json", out)
    return out


# ---------------------------------------------------------------- rendering
def render():
    def load(name):
        p = os.path.join(OUT, name)
        return json.load(open(p)) if os.path.exists(p) else None

    lines = ["# Range queries: engines, learned seeks, readahead, parallel scans", "",
             "<!-- Generated by scripts/range_bench.py; regenerate instead of editing (except Findings). -->", "",
             "## Findings", "", kept_findings(REPORT), "", "## Setup", "",
             f"Machine: {machine(ROOT)}. Every number is the median of alternating rounds ({rounds_note()}) "
             "(each round runs every configuration once, in its own process, on the same databases; "
             "each benchmark runs twice per process and the second, warm run is kept). Databases "
             f"on tmpfs (`{DB}`) unless noted. Cells: µs per operation (lower is better); ratios: "
             "the other's µs ÷ augur-learned's (> 1: Augur faster).", ""]
    engine_sections = [
        ("A", f"A. Engines: {NUM:,} keys, 16-byte keys, 64-byte values, settled (fillrandom + compact)"),
        ("B", f"B. YCSB-E: {NUM:,} records, {OPS:,} operations per round (ycsb-c warm-up first)"),
        ("C", f"C. 1 KiB values, {NUM_1K:,} keys, separated from 1024 bytes (Augur's value log, "
              "RocksDB BlobDB, fjall blob files; `rocksdb`, `leveldb`, `fjall` keep them inline)"),
        ("CI", f"CI. 1 KiB values inline in every engine, {NUM_1K:,} keys (Augur's separation "
               "threshold above the value size)"),
    ]
    for section, title in engine_sections:
        rows = load(f"{section}.json")
        if rows:
            lines += table_engines(title, rows)
    d = load("D.json")
    if d:
        lines += [f"## D. Readahead of separated values ({NUM_1K:,} keys, 1 KiB values, database on disk)", "",
                  "readseq µs per entry; *cold*: the page cache dropped right before the run; *warm*: the "
                  "second pass of the same process.", "",
                  "| configuration | cold | warm |", "|---|---|---|"]
        for k in d["cold"]:
            lines.append(f"| {k} | {fmt(d['cold'][k][0])} | {fmt(d['warm'][k][0])} |")
        lines.append("")
    e = load("E.json")
    if e:
        lines += ["## E. Learned vs baseline seek (the seed's Table 2)", "",
                  f"Median of {E_ROUNDS} rounds. Synthetic sets: {E_NUM:,} keys; real sets: every key.", "",
                  "seekrandom reading L entries per seek (the seek, then L − 1 nexts) on one "
                  "settled database per key set (64-byte values inline) whose files carry models: "
                  "`--learning=never` (the models ignored: fence pointers and binary search) vs "
                  "`at-build` (the file's model predicts the position), alternating in each round. "
                  "Cells: never µs / learned µs = speedup.", "",
                  "| key set | " + " | ".join(f"L = {n}" for n in LENGTHS) + " |",
                  "|---|" + "---|" * len(LENGTHS)]
        for name, per in e.items():
            cells = []
            for n in LENGTHS:
                m = per.get(str(n))
                if not m:
                    cells.append("-")
                    continue
                base, learned = m["never"][0], m["at-build"][0]
                cells.append(f"{fmt(base, 2)} / {fmt(learned, 2)} = {ratio(base, learned)}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    f = load("F.json")
    if f:
        t = f["threads"]
        one = t.get("threads=1 partitions=1", [None])[0]
        lines += [f"## F. Parallel scans of 64K-key ranges, 1 KiB separated values", "",
                  f"F1: {NUM_1K:,} db_bench keys (about 63% present, so a range of 65,536 key numbers "
                  "holds about 41,000 entries), µs per range scan:", "",
                  "| configuration | µs per scan | speedup over 1 thread |", "|---|---|---|"]
        for k, (v, _) in t.items():
            lines.append(f"| {k} | {fmt(v)} | {ratio(one, v)} |")
        lines += ["", "F2: every key of each real key set, 65,536-key ranges, 2 threads: the "
                  "key-space split (one partition per thread, and 8 partitions shared by the "
                  "threads) vs the learned, balanced split. *imbalance*: largest partition ÷ "
                  "mean partition.", "",
                  "| key set | keyspace ×2 µs (imbalance) | balanced ×2 µs (imbalance) | keyspace ×8 µs | balanced vs keyspace ×2 |",
                  "|---|---|---|---|---|"]
        for name, s in f["splits"].items():
            tm, im = s["times"], s["imbalance"]
            ks, bal, ks8 = tm["keyspace partitions=2"][0], tm["balanced partitions=2"][0], tm["keyspace partitions=8"][0]
            lines.append(f"| {name} | {fmt(ks)} ({im['keyspace partitions=2']:.2f}) | "
                         f"{fmt(bal)} ({im['balanced partitions=2']:.2f}) | {fmt(ks8)} | {ratio(ks, bal)} |")
        lines.append("")
    lines += ["## Exact commands", "", "Run in this order by `scripts/bench_range.sh` "
              "(`scripts/range_bench.py`); every JSON record is in `docs/benchmarks/range/raw.jsonl`.", "", "```sh"]
    cmds = load("commands.json") or []
    lines += cmds
    lines += ["```", ""]
    with open(REPORT, "w") as fh:
        fh.write("\n".join(lines))
    log(f"wrote {REPORT}")


def table_engines(title, rows):
    labels = uniq(k for per in rows.values() for k in per)
    lines = [f"## {title}", "",
             "| benchmark | " + " | ".join(labels) + " | " +
             " | ".join(f"learned vs {l}" for l in labels if l != "augur-learned") + " |",
             "|---|" + "---|" * (len(labels) * 2 - 1)]
    for name, per in rows.items():
        learned = per.get("augur-learned", [None])[0]
        cells = [fmt(per[l][0]) if l in per else "-" for l in labels]
        ratios = [ratio(per[l][0], learned) if l in per else "-" for l in labels if l != "augur-learned"]
        lines.append(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return lines + [""]


def rounds_note():
    """How many rounds each section's saved medians came from (sections may be rerun apart)."""
    notes = []
    for s in ["A", "B", "C", "CI", "D", "E", "F"]:
        p = os.path.join(OUT, f"{s}.json")
        if not os.path.exists(p):
            continue
        counts = set()

        def walk(x):
            if isinstance(x, list) and len(x) == 2 and isinstance(x[1], list):
                counts.add(len(x[1]))
            elif isinstance(x, dict):
                for v in x.values():
                    walk(v)
        walk(json.load(open(p)))
        if counts:
            notes.append(f"{s}: {'/'.join(str(c) for c in sorted(counts))}")
    return "rounds per section: " + ", ".join(notes) if notes else "no sections"


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(DB, exist_ok=True)
    os.makedirs(DISK_DB, exist_ok=True)
    if "render" not in SECTIONS:
        open(os.path.join(OUT, "raw.jsonl"), "a").close()
    sections = {"A": section_a, "B": section_b, "C": section_c, "CI": section_c_inline, "D": section_d,
                "E": section_e, "F": section_f}
    for s in SECTIONS:
        if s in sections:
            log(f"section {s}")
            sections[s]()
            save_commands(OUT, COMMANDS)
    render()


if __name__ == "__main__":
    main()
