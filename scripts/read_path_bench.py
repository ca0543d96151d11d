#!/usr/bin/env python3
"""Issue 12's measurements in one run: point lookups on the learned path against Augur's own
baseline path, RocksDB and LevelDB; the model chooser (`--index=auto`) on every dataset; two
reader threads; the lookup breakdown (Bourbon Fig. 8); training cost. Runs `augur bench` (the
peers build, see README) and `index_bench` (the index-only example), keeps every JSON record
in $OUT/records.jsonl and renders $REPORT.

Sections:
  A. NUM random 16-byte keys, 64-byte values inline, filled and settled once per engine
     (Augur with at-build PLR models; RocksDB; LevelDB). ROUNDS alternating rounds of
     readrandom (second of two runs per process kept): Augur learned (`--learning=at-build`),
     Augur baseline (`--learning=never`, the same files), RocksDB, LevelDB; then Augur learned
     with 2 threads; then the per-step breakdown of both Augur paths (`stats`).
  B. Every dataset of ../shared/datasets (u64 keys big-endian; words as text) and the synthetic
     seg1, seg10, normal, lognormal (DS_NUM keys): one store with at-build PLR and one with
     `--index=auto --model-memory-budget=fence`; ROUNDS alternating rounds of readrandom:
     baseline (never, on the PLR store), learned (PLR store), auto (auto store). Model memory
     of both stores against fence pointers' (the auto budget).
  C. Training: `index_bench` PLR/PGM/RS train ns per key at δ = 8 (2M synthetic keys and the
     u64 datasets), and at-build training's share of flush + compaction time on a
     TRAIN_NUM-key write-only run (fillrandom + compact) per type: work (training thread
     time) and wait (what it added to the wall time).

Env (defaults): AUGUR (/work/target-peers/release/augur), INDEX_BENCH
(target/release/examples/index_bench), NUM (10000000), DS_NUM (1000000), TRAIN_NUM (5000000),
ROUNDS (3), READS (1000000), PEERS ("rocksdb leveldb"), DB (/dev/shm/augur-readpath),
OUT (docs/benchmarks/read-path), REPORT (docs/benchmarks/read-path.md), SECTIONS ("A B C"),
QUICK=1 (small sizes, 1 round, for a pipeline check), RESUME=1 (keep the sections of
$OUT/results.json not in SECTIONS), RENDER_ONLY=1 (render $REPORT from $OUT/results.json; the
Findings section of an existing report is kept).
"""
import glob
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from bench_common import (BenchFailed, fmt, kept_findings, last_record, log, machine,  # noqa: E402
                          median_or_none, run_bench, table)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICK = os.environ.get("QUICK") == "1"
AUGUR = os.environ.get("AUGUR", "/work/target-peers/release/augur")
INDEX_BENCH = os.environ.get("INDEX_BENCH", os.path.join(ROOT, "target/release/examples/index_bench"))
NUM = int(os.environ.get("NUM", "20000" if QUICK else "10000000"))
DS_NUM = int(os.environ.get("DS_NUM", "20000" if QUICK else "1000000"))
TRAIN_NUM = int(os.environ.get("TRAIN_NUM", "20000" if QUICK else "5000000"))
ROUNDS = int(os.environ.get("ROUNDS", "1" if QUICK else "3"))
READS = int(os.environ.get("READS", "2000" if QUICK else "1000000"))
PEERS = os.environ.get("PEERS", "rocksdb leveldb").split()
DB = os.environ.get("DB", "/dev/shm/augur-readpath")
OUT = os.environ.get("OUT", "/tmp/augur-readpath-quick" if QUICK else os.path.join(ROOT, "docs/benchmarks/read-path"))
REPORT = os.environ.get("REPORT", os.path.join(OUT, "read-path.md") if QUICK else os.path.join(ROOT, "docs/benchmarks/read-path.md"))
SECTIONS = os.environ.get("SECTIONS", "A B C").split()
DATASETS = os.path.join(ROOT, "..", "shared", "datasets")
SYNTHETIC = ["seg1", "seg10", "normal", "lognormal"]
COMMON = ["--key_size=16", "--value_size=64", "--cache_size=1073741824"]
AUGUR_COMMON = ["--value-separation-threshold=1048576"]
RAW = os.path.join(OUT, "records.jsonl")
COMMANDS = []


def bench(args, tag, timeout=7200):
    try:
        return run_bench(AUGUR, args, raw_path=RAW, tag=tag, timeout=timeout, commands=COMMANDS)
    except BenchFailed as e:
        log(f"FAILED {tag}: {e.short()}")
        return None


def micros(records, name="readrandom"):
    r = last_record(records or [], name)
    return r.get("micros_per_op") if r else None


def find(d, key):
    """The first value of `key` anywhere in the nested dict `d`."""
    if isinstance(d, dict):
        if key in d:
            return d[key]
        for v in d.values():
            x = find(v, key)
            if x is not None:
                return x
    return None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def q(a, b):
    return a / b if a and b else None


# ---- A: 10M uniform keys -------------------------------------------------------------------

def section_a():
    res = {"num": NUM, "reads": {}, "threads": {}, "breakdown": {}, "fills": {}}
    stores = {"augur": AUGUR_COMMON}
    for p in PEERS:
        stores[p] = [f"--engine={p}"]
    for name, flags in stores.items():
        d = os.path.join(DB, "A-" + name)
        shutil.rmtree(d, ignore_errors=True)
        learning = ["--learning=at-build"] if name == "augur" else []
        recs = bench([f"--db={d}", f"--num={NUM}"] + COMMON + flags + learning +
                     ["--benchmarks=fillrandom,waitforcompaction"], f"A-fill-{name}")
        res["fills"][name] = micros(recs, "fillrandom")
    variants = {"learned": ("augur", ["--learning=at-build"]),
                "baseline": ("augur", ["--learning=never"])}
    for p in PEERS:
        variants[p] = (p, [])
    for rnd in range(ROUNDS):
        for label, (store, extra) in variants.items():
            recs = bench([f"--db={os.path.join(DB, 'A-' + store)}", f"--num={NUM}", "--use_existing_db",
                          f"--reads={READS}"] + COMMON + stores[store] + extra +
                         ["--benchmarks=readrandom,readrandom"], f"A-read-{label}-{rnd}")
            res["reads"].setdefault(label, []).append(micros(recs))
        for t in (1, 2):
            recs = bench([f"--db={os.path.join(DB, 'A-augur')}", f"--num={NUM}", "--use_existing_db",
                          f"--reads={READS}", f"--threads={t}"] + COMMON + stores["augur"] +
                         ["--learning=at-build", "--benchmarks=readrandom,readrandom"], f"A-threads{t}-{rnd}")
            res["threads"].setdefault(str(t), []).append(micros(recs))
    for label in ("learned", "baseline"):
        _, extra = variants[label]
        recs = bench([f"--db={os.path.join(DB, 'A-augur')}", f"--num={NUM}", "--use_existing_db",
                      f"--reads={READS}"] + COMMON + AUGUR_COMMON + extra +
                     ["--benchmarks=readrandom,readrandom"], f"A-breakdown-{label}")
        res["breakdown"][label] = find(last_record(recs or [], "readrandom") or {}, "lookup_breakdown")
    for name in stores:
        shutil.rmtree(os.path.join(DB, "A-" + name), ignore_errors=True)
    return res


# ---- B: datasets and the model chooser -----------------------------------------------------

def dataset_sources():
    out = []
    for path in sorted(glob.glob(os.path.join(DATASETS, "*.u64"))):
        out.append((os.path.basename(path)[:-4], [f"--keys={path}"]))
    for path in sorted(glob.glob(os.path.join(DATASETS, "*.txt"))):
        out.append((os.path.basename(path)[:-4], [f"--keys-text={path}"]))
    for dist in SYNTHETIC:
        out.append((dist, [f"--distribution={dist}", f"--num={DS_NUM}"]))
    return out


def section_b():
    res = {}
    stores = {"plr": ["--index=plr"], "auto": ["--index=auto", "--model-memory-budget=fence"]}
    reads = {"baseline": ("plr", ["--learning=never"]), "learned": ("plr", ["--learning=at-build"]),
             "auto": ("auto", ["--learning=at-build"])}
    for name, source in dataset_sources():
        r = {"reads": {}, "model_bytes": {}, "models": {}, "entries": None}
        for store, flags in stores.items():
            d = os.path.join(DB, f"B-{store}")
            shutil.rmtree(d, ignore_errors=True)
            recs = bench([f"--db={d}"] + source + COMMON + AUGUR_COMMON + flags +
                         ["--learning=at-build", "--benchmarks=fillrandom,compact"], f"B-fill-{name}-{store}")
            st = (last_record(recs or [], "compact") or {}).get("stats") or {}
            r["model_bytes"][store] = find(st, "total_model_bytes")
            r["models"][store] = find(st, "models_by_kind")
            r["entries"] = r["entries"] or (last_record(recs or [], "fillrandom") or {}).get("ops")
        for rnd in range(ROUNDS):
            for label, (store, extra) in reads.items():
                recs = bench([f"--db={os.path.join(DB, 'B-' + store)}", "--use_existing_db",
                              f"--reads={READS}"] + source + COMMON + AUGUR_COMMON + stores[store] +
                             extra + ["--benchmarks=readrandom,readrandom"], f"B-read-{name}-{label}-{rnd}")
                r["reads"].setdefault(label, []).append(micros(recs))
        res[name] = r
    for store in stores:
        shutil.rmtree(os.path.join(DB, f"B-{store}"), ignore_errors=True)
    return res


# ---- C: training cost ----------------------------------------------------------------------

def section_c():
    res = {"index_bench": [], "share": {}}
    if os.path.exists(INDEX_BENCH):
        files = sorted(glob.glob(os.path.join(DATASETS, "*.u64")))
        for kind in ("plr/8", "pgm/8", "rs/8"):
            out = subprocess.run([INDEX_BENCH, "2000000"] + files,
                                 env=dict(os.environ, ZOO_FILTER=kind), capture_output=True, text=True)
            COMMANDS.append(f"ZOO_FILTER={kind} {os.path.relpath(INDEX_BENCH, ROOT)} 2000000 ../shared/datasets/*.u64")
            for line in out.stdout.splitlines()[1:]:
                parts = line.split()
                if len(parts) >= 3 and parts[1] == kind:
                    res["index_bench"].append({"dataset": parts[0], "index": kind, "train_ns_per_key": float(parts[2])})
    else:
        log(f"no {INDEX_BENCH}: cargo build --release -p augur --example index_bench")
    for t in ("never", "plr", "pgm", "rs"):
        d = os.path.join(DB, "C")
        shutil.rmtree(d, ignore_errors=True)
        flags = ["--learning=never"] if t == "never" else ["--learning=at-build", f"--index={t}"]
        recs = bench([f"--db={d}", "--distribution=uniform-sparse", f"--num={TRAIN_NUM}", "--seed=301",
                      "--load-order=random"] + COMMON + AUGUR_COMMON + flags +
                     ["--benchmarks=fillrandom,compact"], f"C-train-{t}")
        st = (last_record(recs or [], "compact") or {}).get("stats") or {}
        total = (find(st, "flush_ns") or 0) + (find(st, "compaction_ns") or 0)
        work = (find(st, "flush_training_ns") or 0) + (find(st, "compaction_training_ns") or 0)
        res["share"][t] = {"build_s": total / 1e9, "work_s": work / 1e9,
                           "wait_s": (find(st, "at_build_training_wait_ns") or 0) / 1e9}
        shutil.rmtree(d, ignore_errors=True)
    return res


# ---- report --------------------------------------------------------------------------------

def render(data):
    md = ["# Issue 12: the read path — measurements", "",
          "<!-- Generated by scripts/read_path_bench.py; rerun instead of editing. -->", "",
          f"Machine: {machine(ROOT)}", "",
          f"Rounds: {data.get('rounds', ROUNDS)} (alternating; medians; the second of two runs per "
          f"process kept). Reads per run: {data.get('reads', READS):,}. Stores in tmpfs ({DB}).", ""]
    targets = []
    a = data.get("A")
    if a:
        m = {k: median_or_none(v) for k, v in a["reads"].items()}
        t1, t2 = median_or_none(a["threads"].get("1", [])), median_or_none(a["threads"].get("2", []))
        md += [f"## A. {a['num']:,} random keys (16 B keys, 64 B values inline, settled)", ""]
        rows = [[k, fmt(v), fmt(q(v, m.get("learned")), 2) + "×"] for k, v in m.items()]
        md += table(["readrandom", "µs/op (median)", "÷ Augur learned"], rows)
        md += ["", f"2 threads: {fmt(t1)} → {fmt(t2)} µs/op aggregate = {fmt(q(t1, t2), 2)}× one thread.", ""]
        targets += [("readrandom (learned) ≤ 0.95 µs", fmt(m.get("learned")) + " µs", (m.get("learned") or 9) <= 0.95),
                    ("readrandom RocksDB ÷ learned ≥ 3×", fmt(q(m.get("rocksdb"), m.get("learned")), 2) + "×",
                     (q(m.get("rocksdb"), m.get("learned")) or 0) >= 3),
                    ("2 threads ≥ 1.8× one thread", fmt(q(t1, t2), 2) + "×", (q(t1, t2) or 0) >= 1.8)]
        bd = a.get("breakdown") or {}
        steps = sorted({s for b in bd.values() if b for s in (b.get("avg_step_ns") or {})})
        if steps:
            md += ["Per-step breakdown (ns, sampled lookups; Bourbon Fig. 8):", ""]
            md += table(["path"] + steps + ["total"],
                        [[p] + [fmt((b.get("avg_step_ns") or {}).get(s), 0) for s in steps] +
                         [fmt(b.get("avg_total_ns"), 0)] for p, b in bd.items() if b])
            md += [""]
    b = data.get("B")
    if b:
        md += ["## B. Datasets: learned and `--index=auto` (budget = fence pointers' memory) vs the baseline path", ""]
        rows, gains, autos = [], [], []
        for name, r in b.items():
            m = {k: median_or_none(v) for k, v in r["reads"].items()}
            g, ga = q(m.get("baseline"), m.get("learned")), q(m.get("baseline"), m.get("auto"))
            gains.append(g)
            autos.append(ga)
            models = ", ".join(f"{x['index']}/w{x.get('max_window')}×{x['files']}" for x in (r["models"].get("auto") or []))
            rows.append([name, fmt(m.get("baseline")), fmt(m.get("learned")), fmt(m.get("auto")),
                         fmt(g, 2) + "×", fmt(ga, 2) + "×", fmt(r["model_bytes"].get("plr"), 0),
                         fmt(r["model_bytes"].get("auto"), 0), models])
        md += table(["dataset", "baseline µs", "learned µs", "auto µs", "learned ÷", "auto ÷",
                     "PLR model B", "auto model B", "auto's choices"], rows)
        gm = geomean(gains)
        md += ["", f"Geomean learned vs baseline: {fmt(gm, 2)}×; auto vs baseline: min {fmt(min([x for x in autos if x] or [0]), 2)}×, "
               f"geomean {fmt(geomean(autos), 2)}×.", ""]
        targets += [("learned vs baseline geomean ≥ 1.6×", fmt(gm, 2) + "×", (gm or 0) >= 1.6),
                    ("auto ≥ 1.0× baseline on every dataset", fmt(min([x for x in autos if x] or [0]), 2) + "× (min)",
                     all(x and x >= 1.0 for x in autos))]
    c = data.get("C")
    if c:
        md += ["## C. Training cost", ""]
        if c["index_bench"]:
            kinds = sorted({x["index"] for x in c["index_bench"]})
            sets = list(dict.fromkeys(x["dataset"] for x in c["index_bench"]))
            cell = {(x["dataset"], x["index"]): x["train_ns_per_key"] for x in c["index_bench"]}
            md += table(["train ns/key"] + sets, [[k] + [fmt(cell.get((s, k)), 1) for s in sets] for k in kinds])
            plr = [v for (s, k), v in cell.items() if k == "plr/8"]
            targets.append(("PLR training ≤ 10 ns/key", f"{fmt(min(plr), 1)}–{fmt(max(plr), 1)}" if plr else "-",
                            bool(plr) and max(plr) <= 10))
        rows = []
        for t, s in c["share"].items():
            rows.append([t, fmt(s["build_s"], 2), fmt(s["work_s"], 3), fmt(100 * s["work_s"] / s["build_s"], 1) + "%" if s["build_s"] else "-",
                         fmt(s["wait_s"], 3), fmt(100 * s["wait_s"] / s["build_s"], 1) + "%" if s["build_s"] else "-"])
            if t != "never" and s["build_s"]:
                targets.append((f"at-build {t}: training adds ≤ 5% to flush+compaction wall time",
                                f"{100 * s['wait_s'] / s['build_s']:.1f}%", s["wait_s"] / s["build_s"] <= 0.05))
                targets.append((f"at-build {t}: training work (CPU) ≤ 5% of flush+compaction time",
                                f"{100 * s['work_s'] / s['build_s']:.1f}%", s["work_s"] / s["build_s"] <= 0.05))
        md += [""]
        md += table(["index", "flush+compaction s", "training work s", "work share", "waited s", "wall share"], rows)
        md += ["", "Training work is the CPU time of the thread that trained (since commit f69af7d; "
               "before, its wall time, which on 2 cores also counted waiting for a core); "
               "flush + compaction is wall time.", ""]
    md = md[:7] + ["## Findings", "", kept_findings(REPORT, "## Targets"), "", "## Targets", ""] + table(["target", "measured", "met"],
                                             [[t, v, "yes" if ok else "**no**"] for t, v, ok in targets]) + [""] + md[7:]
    md += ["## Commands", "", "```"] + COMMANDS + ["```", ""]
    with open(REPORT, "w") as f:
        f.write("\n".join(md))
    log(f"wrote {REPORT}")


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(DB, exist_ok=True)
    data_path = os.path.join(OUT, "results.json")
    data = {}
    if os.path.exists(data_path) and os.environ.get("RESUME") == "1":
        data = json.load(open(data_path))
    if os.environ.get("RENDER_ONLY") == "1":
        data = json.load(open(data_path))
        COMMANDS.extend(data.get("commands", []))
        render(data)
        return
    for s, fn in (("A", section_a), ("B", section_b), ("C", section_c)):
        if s in SECTIONS:
            data[s] = fn()
            data.update(commands=COMMANDS, rounds=ROUNDS, reads=READS)
            json.dump(data, open(data_path, "w"), indent=1)
    render(data)
    shutil.rmtree(DB, ignore_errors=True)


if __name__ == "__main__":
    main()
