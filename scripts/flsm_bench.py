#!/usr/bin/env python3
"""FLSM (PebblesDB-style fragmented compaction) against leveled compaction and the peers: the
shape of the PebblesDB thesis's Figure 5.1(a), then reads on every settled store. Runs
`augur bench` (the peers build, see scripts/bench_range.sh), keeps every JSON record in $OUT
and renders $REPORT.

For each key count of SIZES (db_bench fillrandom: that many puts of random key numbers, 16-byte
keys, 128-byte values, values inline in every engine):

  1. fills: Augur-leveled and Augur-FLSM (`--compaction=flsm`) each fill their own database
     (fillrandom then waitforcompaction in one process = "settled"; FILL_ROUNDS times,
     alternating the order, the last fill kept); then RocksDB, LevelDB and fjall once each.
     Write amplification = the settled io-measured one ((fillrandom's + waitforcompaction's
     bytes passed to `write` per /proc/self/io) ÷ fillrandom's user bytes), total write IO =
     those bytes;
  2. reads on the settled Augur stores, in fresh processes with --use_existing_db, ROUNDS
     alternating rounds of readrandom, readmissing, seekrandom and seekrandom + 100 nexts, each
     store on its learned path (`--learning=at-build`) and its baseline path (`never`), so
     both paths read the very same files;
  3. parallel seeks on the FLSM store: PSEEK_FLAG=0 vs =2 (seekrandom, seekrandom+100);
  4. each peer's store read in rounds alternating with FLSM-learned's (the anchor; Augur-
     leveled's when FLSM could not run), so peer ratios come from the same rounds. At most two
     stores exist at a time: leveled's is deleted before the peers, each peer's after its reads.

Every benchmark runs twice per process and the second, warm run is kept; tables give the
median of the rounds (every round's value is in the JSON), ratios are between medians of the
same rounds. A run that fails or passes its time limit is recorded (the report lists it) and
the rest goes on; a configuration that failed is not retried in later rounds.

Env (defaults; QUICK=1 changes some):
  AUGUR        binary (/work/target-peers/release/augur)
  SIZES        key counts ("1000000 10000000 30000000"; QUICK: "20000 60000")
  ROUNDS       read rounds (5; QUICK: 2)            FILL_ROUNDS  Augur fills per store (1)
  OPS          reads per readrandom/readmissing/seekrandom run (200000; QUICK: 2000);
               seekrandom+100 runs OPS/2
  READ_BENCHES subset of "readrandom readmissing seekrandom seekrandom+100"
  PEERS        "rocksdb leveldb fjall" (empty: none)
  FLSM_FLAGS   flags selecting FLSM ("--compaction=flsm"; passed on every command of that store,
               which must be reopened with the style it was created with; FLSM_FLAGS= makes
               the FLSM store a second leveled one: a pipeline test on a binary without FLSM)
  PSEEK_FLAG   parallel-seek flag ("--parallel-seek-threads"); PSEEK_THREADS ("0 2"; empty: skip)
  AUGUR_FLAGS  extra flags for both Augur stores; EXTRA_FLAGS: for every command
  KEY_SIZE (16), VALUE_SIZE (128), VSEP (Augur's --value-separation-threshold, 1048576:
               values inline), CACHE (peers' block cache, 1 GiB), MEMTABLE_MB (engine
               default; QUICK: 1)
  DB           tmpfs directory for sizes <= SHM_MAX (/dev/shm/augur-flsm; SHM_MAX 10000000)
  DISK_DB      directory for larger sizes (/work/flsm-bench-db)
  FILL_TIMEOUT / RUN_TIMEOUT  seconds per fill / read process (14400 / 1200)
  OUT          JSON directory (docs/benchmarks/flsm; QUICK: /tmp/augur-flsm-quick)
  REPORT       markdown report (docs/benchmarks/flsm.md; QUICK: $OUT/flsm.md)
  RENDER_ONLY=1  only render $REPORT from $OUT (every size-*.json there)
  KEEP_DBS=1   leave the stores in place at the end

Usage: scripts/flsm_bench.py                          # everything (hours: mind a session's limit)
       SIZES=1000000 scripts/flsm_bench.py            # one size; sizes can be run apart: the
                                                      # report covers every size-N.json in $OUT
       QUICK=1 scripts/flsm_bench.py                  # pipeline smoke test (about 20 s here)
       RENDER_ONLY=1 scripts/flsm_bench.py
"""
import json
import os
import re
import shlex
import shutil
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench_common import (BenchFailed, dir_bytes, fmt, human_bytes, kept_findings,  # noqa: E402
                          last_record, log, machine, median_or_none, medians, ratio, run_bench,
                          save_commands, shown_path, table)
from flsm_stats import flsm_section, level_guards, structure_markdown  # noqa: E402
from json_tools import find_key, save_json, uniq  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICK = os.environ.get("QUICK") == "1"
AUGUR = os.environ.get("AUGUR", "/work/target-peers/release/augur")
SIZES = [int(x) for x in os.environ.get("SIZES", "20000 60000" if QUICK else
                                        "1000000 10000000 30000000").split()]
ROUNDS = int(os.environ.get("ROUNDS", "2" if QUICK else "5"))
FILL_ROUNDS = int(os.environ.get("FILL_ROUNDS", "1"))
OPS = int(os.environ.get("OPS", "2000" if QUICK else "200000"))
ALL_READS = ["readrandom", "readmissing", "seekrandom", "seekrandom+100"]
READ_BENCHES = [b for b in os.environ.get("READ_BENCHES", " ".join(ALL_READS)).split()]
PEERS = os.environ.get("PEERS", "rocksdb leveldb fjall").split()
FLSM_FLAGS = shlex.split(os.environ.get("FLSM_FLAGS", "--compaction=flsm"))
PSEEK_FLAG = os.environ.get("PSEEK_FLAG", "--parallel-seek-threads")
PSEEK_THREADS = [int(x) for x in os.environ.get("PSEEK_THREADS", "0 2").split()]
AUGUR_FLAGS = shlex.split(os.environ.get("AUGUR_FLAGS", ""))
EXTRA_FLAGS = shlex.split(os.environ.get("EXTRA_FLAGS", ""))
KEY_SIZE = int(os.environ.get("KEY_SIZE", "16"))
VALUE_SIZE = int(os.environ.get("VALUE_SIZE", "128"))
VSEP = int(os.environ.get("VSEP", str(1 << 20)))
CACHE = os.environ.get("CACHE", str(1 << 30))
MEMTABLE_MB = os.environ.get("MEMTABLE_MB", "1" if QUICK else "")
DB = os.environ.get("DB", "/dev/shm/augur-flsm")
SHM_MAX = int(os.environ.get("SHM_MAX", "10000000"))
DISK_DB = os.path.normpath(os.environ.get("DISK_DB", os.path.join(ROOT, "..", "flsm-bench-db")))
FILL_TIMEOUT = float(os.environ.get("FILL_TIMEOUT", "14400"))
RUN_TIMEOUT = float(os.environ.get("RUN_TIMEOUT", "1200"))
OUT = os.environ.get("OUT", "/tmp/augur-flsm-quick" if QUICK else
                     os.path.join(ROOT, "docs", "benchmarks", "flsm"))
REPORT = os.environ.get("REPORT", os.path.join(OUT, "flsm.md") if QUICK else
                        os.path.join(ROOT, "docs", "benchmarks", "flsm.md"))
RENDER_ONLY = os.environ.get("RENDER_ONLY") == "1"
KEEP_DBS = os.environ.get("KEEP_DBS") == "1"
KNOBS = ["QUICK", "AUGUR", "SIZES", "ROUNDS", "FILL_ROUNDS", "OPS", "READ_BENCHES", "PEERS",
         "FLSM_FLAGS", "PSEEK_FLAG", "PSEEK_THREADS", "AUGUR_FLAGS", "EXTRA_FLAGS", "KEY_SIZE",
         "VALUE_SIZE", "VSEP", "CACHE", "MEMTABLE_MB", "DB", "SHM_MAX", "DISK_DB",
         "FILL_TIMEOUT", "RUN_TIMEOUT", "OUT", "REPORT"]
COMMANDS = []

AUGUR_STORES = ["leveled", "flsm"]
NAMES = {"leveled": "Augur-leveled", "flsm": "Augur-FLSM", "rocksdb": "RocksDB",
         "leveldb": "LevelDB", "fjall": "fjall"}
# Benchmark name in the report -> (augur bench benchmark, flags, reads per run).
READS = {"readrandom": ("readrandom", [], 1), "readmissing": ("readmissing", [], 1),
         "seekrandom": ("seekrandom", ["--seek_nexts=0"], 1),
         "seekrandom+100": ("seekrandom", ["--seek_nexts=100"], 2)}
PSEEK_READS = ["seekrandom", "seekrandom+100"]
# The targets at the largest size.
WA_VS_LEVELED, WA_VS_ROCKSDB, FILL_SPEEDUP = 0.5, 0.4, 1.5
READ_SLOWDOWN, READ_VS_ROCKSDB, SEEK_SLOWDOWN, SEEK100_SLOWDOWN = 1.10, 2.0, 1.30, 1.15


# ---------------------------------------------------------------- configurations
def base_dir(num):
    return os.path.join(DB if num <= SHM_MAX else DISK_DB, str(num))


def db_dir(num, store):
    return os.path.join(base_dir(num), store)


def store_args(num, store):
    """The flags every command on `store` (an Augur store or a peer) at size `num` takes."""
    args = [f"--db={db_dir(num, store)}", f"--num={num}", f"--key_size={KEY_SIZE}",
            f"--value_size={VALUE_SIZE}", f"--cache_size={CACHE}"]
    if MEMTABLE_MB:
        args.append(f"--memtable-mb={MEMTABLE_MB}")
    if store in AUGUR_STORES:
        # An explicit threshold: one configuration (without it `bench` runs inline and
        # separated); above the value size the values stay inline, as in the peers.
        args += [f"--value-separation-threshold={VSEP}"] + AUGUR_FLAGS
        if store == "flsm":
            args += FLSM_FLAGS
    else:
        args.append(f"--engine={store}")
    return args + EXTRA_FLAGS


def variant(label):
    """A read configuration's label -> (store, extra flags). Labels: `leveled-learned`,
    `flsm-baseline`, `flsm-learned pseek=2`, `rocksdb`, ..."""
    m = re.fullmatch(r"(leveled|flsm)-(learned|baseline)(?: pseek=(\d+))?", label)
    if not m:
        return label, []
    extra = ["--learning=" + ("at-build" if m.group(2) == "learned" else "never")]
    if m.group(3) is not None:
        extra.append(f"{PSEEK_FLAG}={m.group(3)}")
    return m.group(1), extra


def display(label):
    store, _ = variant(label)
    if store not in NAMES:
        return label
    return (NAMES[store] + label[len(store):]).replace("-learned", " learned").replace("-baseline", " baseline")


def label_key(label):
    """Canonical order of read configurations: leveled, FLSM (learned before baseline, parallel
    seek threads ascending), then the peers in PEERS order."""
    store, extra = variant(label)
    stores = AUGUR_STORES + PEERS
    m = re.search(r"pseek=(\d+)", label)
    return (stores.index(store) if store in stores else len(stores), store,
            "baseline" in label, int(m.group(1)) if m else -1, label)


def bench_key(name):
    return (ALL_READS.index(name) if name in ALL_READS else len(ALL_READS), name)


# ---------------------------------------------------------------- running
def bench(args, tag, timeout):
    return run_bench(AUGUR, args, raw_path=os.path.join(OUT, "raw.jsonl"), tag=tag,
                     timeout=timeout, commands=COMMANDS,
                     extra_raw={"run": RUN_ID})


def fail(state, phase, label, err):
    """Records a failed run in the size's state and says so clearly on stderr."""
    hint = ""
    store, extra = variant(label)
    if store == "flsm" and any(f in err.stderr_tail for f in ("unexpected argument", "invalid value")):
        flags = FLSM_FLAGS + [e for e in extra if e.startswith(PSEEK_FLAG)]
        hint = (f" — does {AUGUR} know {' '.join(flags)}? (rebuild the peers build once the "
                "flag exists)") if flags else ""
    msg = f"{phase}: {display(label)} failed: {err.short()}{hint}"
    log("ERROR " + msg)
    if err.stderr_tail:
        log("stderr tail:\n" + err.stderr_tail)
    state["failures"].append({"phase": phase, "label": label, "command": err.cmd,
                              "reason": err.reason, "stderr_tail": err.stderr_tail,
                              "message": msg})


def fill(num, store, state, tag):
    """Fills `store` afresh and settles it; returns the fill's summary (None on failure)."""
    db = db_dir(num, store)
    shutil.rmtree(db, ignore_errors=True)
    os.makedirs(os.path.dirname(db), exist_ok=True)
    args = store_args(num, store) + (["--learning=at-build"] if store in AUGUR_STORES else [])
    try:
        recs = bench(args + ["--benchmarks=fillrandom,waitforcompaction"], tag, FILL_TIMEOUT)
    except BenchFailed as e:
        fail(state, "fill", store, e)
        shutil.rmtree(db, ignore_errors=True)
        return None
    f, w = last_record(recs, "fillrandom"), last_record(recs, "waitforcompaction") or {}
    if not f:
        fail(state, "fill", store, BenchFailed(" ".join(args), "no fillrandom record"))
        return None
    fill_io, settle_io = f.get("io_bytes_written"), w.get("io_bytes_written")
    user = (fill_io / f["io_write_amplification"] if fill_io and f.get("io_write_amplification")
            else f["ops"] * (KEY_SIZE + VALUE_SIZE))
    total_io = fill_io + (settle_io or 0) if fill_io is not None else None
    stats = w.get("stats") or f.get("stats") or {}
    out = {"micros_per_op": f["micros_per_op"], "ops_per_sec": f.get("ops_per_sec"),
           "fill_s": f.get("seconds"), "settle_s": w.get("seconds"), "cpu_s": f.get("cpu_s"),
           "fill_io_bytes": fill_io, "settle_io_bytes": settle_io, "total_io_bytes": total_io,
           "user_bytes": user, "settled_wa": total_io / user if total_io and user else None,
           "fill_end_wa": f.get("io_write_amplification"),
           "engine_wa": f.get("write_amplification"),
           "db_bytes_fill_end": f.get("db_bytes"), "db_bytes_settled": dir_bytes(db),
           "space_amplification": f.get("space_amplification"),
           "peak_rss_mb": w.get("peak_rss_mb") or f.get("peak_rss_mb")}
    if store in AUGUR_STORES and isinstance(stats, dict):
        out["counters"] = stats.get("counters")
        out["levels"] = [{"level": lv.get("level", i), "files": lv.get("files"), "bytes": lv.get("bytes")}
                         for i, lv in enumerate(stats.get("levels") or []) if isinstance(lv, dict)]
        out["flsm"] = flsm_section(stats)
        out["level_guards"] = level_guards(stats)
        out["stats_keys"] = sorted(stats)
        out["compaction_style"] = find_key(stats, "compaction_style")
        style = out["compaction_style"]
        if style is not None and str(style).lower() != store:
            msg = (f"fill: {display(store)}'s stats report compaction style {style!r}, not {store!r}: "
                   "the flag did not take effect?")
            log("WARNING " + msg)
            state["failures"].append({"phase": "fill", "label": store, "command": " ".join(args),
                                      "reason": "wrong compaction style", "stderr_tail": "",
                                      "message": msg})
    log(f"{display(store)} at {num:,}: fillrandom {fmt(out['micros_per_op'])} µs/op, settled write amp "
        f"{fmt(out['settled_wa'], 2)}, write IO {human_bytes(total_io)}")
    return out


def read_rounds(num, labels, names, phase, state):
    """ROUNDS rounds; each runs every benchmark of `names` on every configuration of `labels`
    (order reversed on odd rounds), one process each. Returns {name: {label: [median, [µs]]}}."""
    per = {n: [] for n in names}
    dead = set()
    for i in range(ROUNDS):
        for name in names:
            bench_name, flags, div = READS[name]
            r = {}
            for label in (labels if i % 2 == 0 else labels[::-1]):
                if label in dead:
                    continue
                store, extra = variant(label)
                args = (store_args(num, store) + extra + flags +
                        ["--use_existing_db", f"--reads={max(OPS // div, 1)}",
                         f"--benchmarks={bench_name},{bench_name}"])
                try:
                    rec = last_record(bench(args, f"{num}-{phase}-{name}", RUN_TIMEOUT), bench_name)
                except BenchFailed as e:
                    fail(state, f"{phase} {name}", label, e)
                    dead.add(label)
                    continue
                if rec:
                    r[label] = rec["micros_per_op"]
            per[name].append(r)
    return {n: medians(rs) for n, rs in per.items()}


def save(name, data):
    save_json(OUT, name, data)


def knob_values():
    return {k: os.environ[k] for k in KNOBS if k in os.environ}


def measure_size(num):
    base = base_dir(num)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base, exist_ok=True)
    need = 2 * num * (KEY_SIZE + VALUE_SIZE) * 1.6
    free = shutil.disk_usage(base).free
    if free < need:
        log(f"warning: {base} has {human_bytes(free)} free; two stores of {num:,} keys may need "
            f"about {human_bytes(need)}")
    state = {"num": num, "run": RUN_ID, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
             "storage": base, "tmpfs": num <= SHM_MAX, "complete": False,
             "settings": {"rounds": ROUNDS, "fill_rounds": FILL_ROUNDS, "ops": OPS,
                          "key_size": KEY_SIZE, "value_size": VALUE_SIZE, "vsep": VSEP,
                          "cache": CACHE, "memtable_mb": MEMTABLE_MB or None,
                          "flsm_flags": FLSM_FLAGS, "pseek_flag": PSEEK_FLAG,
                          "augur_flags": AUGUR_FLAGS, "extra_flags": EXTRA_FLAGS,
                          "augur": AUGUR, "env": knob_values()},
             "fills": {}, "reads": {}, "failures": [], "anchor": None}
    name = f"size-{num}.json"
    save(name, state)
    # 1. The Augur pair: FILL_ROUNDS fills each, order alternating; the last fill is the store.
    failed = set()
    for r in range(FILL_ROUNDS):
        for store in AUGUR_STORES if r % 2 == 0 else AUGUR_STORES[::-1]:
            if store in failed:
                continue
            s = fill(num, store, state, f"{num}-fill-{store}")
            if s is None:
                failed.add(store)
            else:
                state["fills"].setdefault(store, []).append(s)
            save(name, state)
    ok = [s for s in AUGUR_STORES if s not in failed]
    # 2. Learned and baseline path of both stores, alternating.
    labels = [f"{s}-{p}" for s in ok for p in ("learned", "baseline")]
    if labels and READ_BENCHES:
        state["reads"]["augur"] = read_rounds(num, labels, READ_BENCHES, "augur", state)
        save(name, state)
    # 3. FLSM's parallel seeks.
    pseek = [n for n in PSEEK_READS if n in READ_BENCHES]
    if "flsm" in ok and PSEEK_THREADS and pseek:
        state["reads"]["pseek"] = read_rounds(num, [f"flsm-learned pseek={t}" for t in PSEEK_THREADS],
                                              pseek, "pseek", state)
        save(name, state)
    # 4. The peers, each alternating with the anchor (FLSM-learned, or leveled-learned).
    anchor = "flsm" if "flsm" in ok else ("leveled" if "leveled" in ok else None)
    state["anchor"] = anchor and f"{anchor}-learned"
    for s in ok:
        if s != anchor and not KEEP_DBS:
            shutil.rmtree(db_dir(num, s), ignore_errors=True)
    for peer in PEERS:
        s = fill(num, peer, state, f"{num}-fill-{peer}")
        if s is None:
            save(name, state)
            continue
        state["fills"][peer] = [s]
        save(name, state)
        if READ_BENCHES:
            labels = [peer] + ([state["anchor"]] if anchor else [])
            state["reads"].setdefault("pairs", {})[peer] = {
                "anchor": state["anchor"],
                "rows": read_rounds(num, labels, READ_BENCHES, f"pair-{peer}", state)}
        if not KEEP_DBS:
            shutil.rmtree(db_dir(num, peer), ignore_errors=True)
        save(name, state)
    if not KEEP_DBS:
        shutil.rmtree(base, ignore_errors=True)
    state["complete"] = True
    state["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save(name, state)
    return state


def preflight():
    """Says early whether this binary knows the FLSM and parallel-seek flags."""
    import subprocess
    try:
        helps = "".join(subprocess.run([AUGUR] + a + ["--help"], capture_output=True, text=True,
                                       timeout=60).stdout for a in ([], ["bench"]))
    except (OSError, subprocess.SubprocessError) as e:
        sys.exit(f"cannot run {AUGUR}: {e}")
    for flag in [f.split("=")[0] for f in FLSM_FLAGS if f.startswith("--")] + \
            ([PSEEK_FLAG] if PSEEK_THREADS else []):
        if flag not in helps:
            log(f"warning: `{AUGUR} --help` does not mention {flag}: the runs that need it "
                "will fail (and be listed in the report's Failures)")


# ---------------------------------------------------------------- rendering
def load_sizes():
    out = []
    for f in os.listdir(OUT):
        m = re.fullmatch(r"size-(\d+)\.json", f)
        if m:
            with open(os.path.join(OUT, f)) as fh:
                out.append(json.load(fh))
    return sorted(out, key=lambda d: d["num"])


FILL_FIELDS = ["micros_per_op", "ops_per_sec", "fill_s", "settle_s", "fill_io_bytes", "settle_io_bytes",
               "total_io_bytes", "user_bytes", "settled_wa", "fill_end_wa", "engine_wa",
               "db_bytes_settled", "space_amplification"]


def fill_median(d, store):
    """Median over the fill rounds of each numeric field (None when `store` never filled)."""
    rounds = d["fills"].get(store) or []
    if not rounds:
        return None
    out = {k: median_or_none([r.get(k) for r in rounds]) for k in FILL_FIELDS}
    out["rounds"] = len(rounds)
    out["last"] = rounds[-1]
    return out


def read_cell(d, label, name):
    """(median µs, ratio base µs) of `label` for benchmark `name`: Augur variants from the
    Augur rounds, peers from their pair rounds (with the anchor's median of those rounds)."""
    augur = (d["reads"].get("augur") or {}).get(name) or {}
    if label in augur:
        return augur[label][0], None
    pair = ((d["reads"].get("pairs") or {}).get(label) or {})
    rows = (pair.get("rows") or {}).get(name) or {}
    if label in rows:
        anchor = rows.get(pair.get("anchor"))
        return rows[label][0], anchor[0] if anchor else None
    return None, None


def target_rows(d):
    """The issue's targets, computed from size `d`'s data."""
    f = {s: fill_median(d, s) for s in AUGUR_STORES + ["rocksdb"]}
    rows = []

    def add(what, value, op, bound, detail):
        if value is None:
            result = "not measured"
        else:
            result = "**met**" if (value <= bound if op == "≤" else value >= bound) else "**missed**"
        rows.append([what, "-" if value is None else f"{value:.2f}", f"{op} {bound:.2f}", result, detail])

    def wa(s):
        return f[s] and f[s]["settled_wa"]

    def q(a, b):
        return a / b if a is not None and b else None
    add("Augur-FLSM write amp. ÷ Augur-leveled's", q(wa("flsm"), wa("leveled")), "≤", WA_VS_LEVELED,
        f"{fmt(wa('flsm'), 2)} vs {fmt(wa('leveled'), 2)} (settled, io-measured)")
    add("Augur-FLSM write amp. ÷ RocksDB's", q(wa("flsm"), wa("rocksdb")), "≤", WA_VS_ROCKSDB,
        f"{fmt(wa('flsm'), 2)} vs {fmt(wa('rocksdb'), 2)}")
    lev_us, flsm_us = (f["leveled"] or {}).get("micros_per_op"), (f["flsm"] or {}).get("micros_per_op")
    add("fillrandom throughput: Augur-FLSM ÷ Augur-leveled", q(lev_us, flsm_us), "≥", FILL_SPEEDUP,
        f"{fmt(flsm_us)} vs {fmt(lev_us)} µs/op")
    for name, bound, what in (("readrandom", READ_SLOWDOWN, "readrandom (learned): FLSM µs ÷ leveled µs"),
                              ("seekrandom", SEEK_SLOWDOWN, "seekrandom (learned): FLSM µs ÷ leveled µs"),
                              ("seekrandom+100", SEEK100_SLOWDOWN,
                               "seekrandom+100 (learned): FLSM µs ÷ leveled µs")):
        a, _ = read_cell(d, "flsm-learned", name)
        b, _ = read_cell(d, "leveled-learned", name)
        add(what, q(a, b), "≤", bound, f"{fmt(a)} vs {fmt(b)} µs/op")
        if name == "readrandom":
            pair = ((d["reads"].get("pairs") or {}).get("rocksdb") or {})
            rocks, anchor = read_cell(d, "rocksdb", name)
            if pair.get("anchor") != "flsm-learned":
                anchor = None
            add("readrandom: RocksDB µs ÷ Augur-FLSM (learned) µs", q(rocks, anchor), "≥", READ_VS_ROCKSDB,
                f"{fmt(rocks)} vs {fmt(anchor)} µs/op (same rounds)")
    return rows


def store_order(d):
    return uniq(s for s in AUGUR_STORES + PEERS + sorted(d["fills"]) if s in d["fills"])


def render_writes(sizes):
    sizes = [d for d in sizes if d["fills"]]
    if not sizes:
        return ["## Writes", "", "No fill succeeded (see Failures).", ""]
    md = ["## Writes: the shape of Figure 5.1(a)", "",
          "fillrandom then waitforcompaction in one process. *Write IO*: bytes the process passed "
          "to `write` calls (`/proc/self/io` `wchar`: WAL, flushes, compactions) during both; "
          "*write amp.*: that ÷ the fill's user bytes (num × (key + value)); *at fill end*: only "
          "what was written until the last put. Medians over the fill rounds.", ""]
    stores = uniq(s for d in sizes for s in store_order(d))
    hdr = ["engine"] + [f"{d['num']:,} keys" for d in sizes]
    rows_io = [[NAMES.get(s, s)] + [human_bytes((fill_median(d, s) or {}).get("total_io_bytes")) for d in sizes]
               for s in stores]
    rows_wa = [[NAMES.get(s, s)] + [fmt((fill_median(d, s) or {}).get("settled_wa"), 2) for d in sizes]
               for s in stores]
    md += ["Total write IO:", ""] + table(hdr, rows_io) + ["", "Write amplification (settled, io-measured):", ""]
    md += table(hdr, rows_wa) + [""]
    for d in sizes:
        lev = fill_median(d, "leveled")
        md += [f"### {d['num']:,} keys", ""]
        rows = []
        for s in store_order(d):
            m = fill_median(d, s)
            rows.append([NAMES.get(s, s), fmt(m["micros_per_op"]), fmt(m["ops_per_sec"]),
                         ratio(lev and lev["micros_per_op"], m["micros_per_op"]),
                         fmt(m["settled_wa"], 2), fmt(m["fill_end_wa"], 2), human_bytes(m["total_io_bytes"]),
                         human_bytes(m["user_bytes"]), fmt(m["settle_s"], 2), human_bytes(m["db_bytes_settled"]),
                         str(m["rounds"])])
        md += table(["engine", "fillrandom µs/op", "ops/s", "throughput ÷ Augur-leveled's",
                     "write amp. settled", "at fill end", "write IO", "user bytes",
                     "waitforcompaction s", "store after settling", "fills"], rows) + [""]
        # Augur's own counters, cumulative over fill + settle.
        rows = []
        for s in AUGUR_STORES:
            m = fill_median(d, s)
            if not m:
                continue
            c = m["last"].get("counters") or {}
            lv = " ".join(f"L{x['level']}:{x['files']}" for x in m["last"].get("levels") or [] if x.get("files"))
            app = c.get("compaction_bytes_appended")
            rows.append([NAMES[s], str(m["last"].get("compaction_style") or "-"),
                         human_bytes(c.get("wal_bytes_written")), human_bytes(c.get("flush_bytes_written")),
                         human_bytes(c.get("compaction_bytes_read")), human_bytes(c.get("compaction_bytes_written")),
                         human_bytes(app), fmt(c.get("compactions"), 0), fmt(c.get("write_stalls"), 0),
                         fmt(m["last"].get("engine_wa"), 2), lv or "-"])
        if rows:
            md += ["Augur's counters (last fill, fill + settle; *appended*: compaction output added to the "
                   "next level as FLSM fragments without rewriting it, the rest of *compaction written* "
                   "rewrote data): ", ""]
            md += table(["store", "style (stats)", "WAL", "flushed", "compaction read", "compaction written",
                         "of which appended", "compactions", "write stalls",
                         "write amp. at fill end (counters)", "files per level"], rows) + [""]
        md += render_flsm_structure(d)
    return md


def render_flsm_structure(d):
    """FLSM's guards from its stats JSON: tolerant of any layout (and of its absence)."""
    m = fill_median(d, "flsm")
    if not m:
        return []
    return structure_markdown(m["last"])


def render_reads(sizes):
    if not any(d["reads"] for d in sizes):
        return []
    md = ["## Reads on the settled stores", "",
          "µs per operation (lower is better), median of the rounds. *learned*: `--learning=at-build` "
          "(the files' models); *baseline*: `--learning=never` on the same files (fence pointers and "
          "binary search). Augur's four configurations alternate in one set of rounds; each peer "
          "alternates with the anchor (Augur-FLSM learned unless noted) in rounds of its own, and its "
          "ratio is taken against the anchor's median of those rounds. Ratios: other µs ÷ anchor µs "
          "(> 1: the anchor is faster).", ""]
    for d in sizes:
        augur = d["reads"].get("augur") or {}
        pairs = d["reads"].get("pairs") or {}
        names = sorted(uniq(list(augur) + [n for p in pairs.values() for n in (p.get("rows") or {})]),
                       key=bench_key)
        if not names:
            continue
        anchor = d.get("anchor") or "flsm-learned"
        labels = sorted(uniq([l for n in names for l in (augur.get(n) or {})] + list(pairs)), key=label_key)
        md += [f"### {d['num']:,} keys" + ("" if anchor == "flsm-learned" else
                                            f" (anchor: {display(anchor)}; Augur-FLSM did not run)"), ""]
        # Ratios for the other learned paths and the peers (baseline paths: the next section).
        rated = [l for l in labels if l != anchor and not l.endswith("-baseline")]
        rows, rrows = [], []
        for n in names:
            a_aug = (augur.get(n) or {}).get(anchor, [None])[0]
            rows.append([n] + [fmt(read_cell(d, l, n)[0]) for l in labels])
            cells = []
            for l in rated:
                v, base = read_cell(d, l, n)
                cells.append(ratio(v, base if l in pairs else a_aug))
            rrows.append([n] + cells)
        md += table(["benchmark µs/op"] + [display(l) for l in labels], rows) + [""]
        if rated:
            md += table(["benchmark"] + [f"{display(l)} ÷ {display(anchor)}" for l in rated], rrows) + [""]
    # What the learned models buy.
    rows = []
    for d in sizes:
        augur = d["reads"].get("augur") or {}
        for n in sorted(augur, key=bench_key):
            per = augur[n]
            cells = [f"{d['num']:,}", n]
            for s in ("flsm", "leveled"):
                b, l = per.get(f"{s}-baseline", [None])[0], per.get(f"{s}-learned", [None])[0]
                cells += [fmt(b), fmt(l), ratio(b, l)]
            rows.append(cells)
    if rows:
        md += ["## What learned models buy on FLSM", "",
               "The same settled store read on the baseline path (`--learning=never`) and the learned "
               "path (`at-build`), alternating in each round; speedup = baseline µs ÷ learned µs. "
               "Augur-leveled alongside for comparison.", ""]
        md += table(["keys", "benchmark", "FLSM baseline µs", "FLSM learned µs", "FLSM speedup",
                     "leveled baseline µs", "leveled learned µs", "leveled speedup"], rows) + [""]
    threads = sorted({int(l.rsplit("=", 1)[1]) for d in sizes for per in (d["reads"].get("pseek") or {}).values()
                      for l in per})
    rows = []
    for d in sizes if threads else []:
        p = d["reads"].get("pseek") or {}
        for n in sorted(p, key=bench_key):
            us = {t: p[n].get(f"flsm-learned pseek={t}", [None])[0] for t in threads}
            rows.append([f"{d['num']:,}", n] + [fmt(us[t]) for t in threads] +
                        [ratio(us[threads[0]], us[t]) for t in threads[1:]])
    if rows:
        flag = uniq(d["settings"].get("pseek_flag", PSEEK_FLAG) for d in sizes if d["reads"].get("pseek"))
        md += ["## FLSM parallel seeks", "",
               f"Augur-FLSM's settled store on the learned path with `{'/'.join(flag)}=N`, alternating in "
               f"each round: µs per seek (seekrandom) and per seek + 100 nexts; speedup = the "
               f"{threads[0]}-thread µs ÷ the N-thread µs.", ""]
        md += table(["keys", "benchmark"] + [f"{t} threads µs" for t in threads] +
                    [f"speedup {t} vs {threads[0]}" for t in threads[1:]], rows) + [""]
    return md


def render():
    sizes = load_sizes()
    lines = ["# FLSM: fragmented compaction against leveled and the peers", "",
             "<!-- Generated by scripts/flsm_bench.py; regenerate instead of editing (except Findings). -->", "",
             "## Findings", "", kept_findings(REPORT), "", "## Setup", ""]
    paths = uniq(d["storage"].rsplit("/", 1)[0] for d in sizes)
    lines += [f"Machine: {machine(ROOT, [p for p in paths if os.path.exists(p)])}.", ""]
    if not sizes:
        lines += ["No data yet.", ""]
    else:
        s0 = sizes[-1]["settings"]
        lines += [f"Binary `{s0['augur']}`. Workload: db_bench `fillrandom` (N puts of random key "
                  f"numbers from [0, N), with repeats: about 63% present), {s0['key_size']}-byte keys, "
                  f"{s0['value_size']}-byte values, no compression, values inline in every engine "
                  f"(Augur's separation threshold {s0['vsep']:,} bytes), memtable "
                  f"{(s0['memtable_mb'] + ' MiB') if s0.get('memtable_mb') else 'the engine default (64 MiB)'} "
                  f"in every engine, peers' block cache {int(s0['cache']):,} bytes. Augur-FLSM is Augur "
                  f"with `{' '.join(s0['flsm_flags'])}`. Each benchmark runs twice per read process "
                  "and the second, warm run is kept.", ""]
        lines += table(["keys", "stores in", "read rounds", "ops per read run", "Augur fill rounds",
                        "finished", "failed runs", "started"],
                       [[f"{d['num']:,}", f"`{d['storage']}`" + (" (tmpfs)" if d.get("tmpfs") else " (disk)"),
                         str(d["settings"]["rounds"]), f"{d['settings']['ops']:,}",
                         str(d["settings"]["fill_rounds"]), "yes" if d.get("complete") else "**no**",
                         str(len(d.get("failures") or [])),
                         d.get("started", "-")] for d in sizes]) + [""]
        big = max((d for d in sizes if d["fills"]), key=lambda d: d["num"], default=None)
        if big:
            lines += [f"## Targets at the largest size measured ({big['num']:,} keys)", "",
                      "Computed from the data below (medians; read ratios from the same rounds).", ""]
            lines += table(["target", "measured", "required", "result", "values"], target_rows(big)) + [""]
        lines += render_writes(sizes)
        lines += render_reads(sizes)
        fails = [(d["num"], f) for d in sizes for f in d.get("failures") or []]
        if fails:
            lines += ["## Failures", "", "Runs that failed or passed their time limit (not retried in "
                      "later rounds; their cells are `-`):", ""]
            for num, f in fails:
                lines.append(f"- {num:,} keys, {f['message']}  \n  `{f['command']}`")
            lines.append("")
    lines += ["## Exact commands", "",
              "`scripts/flsm_bench.py` with " + (", ".join(f"{k}={v}" for k, v in
                                                        sorted(sizes[-1]["settings"]["env"].items()))
                                                if sizes and sizes[-1]["settings"].get("env") else "the defaults") +
              f"; every JSON record is in `{shown_path(os.path.join(OUT, 'raw.jsonl'), ROOT)}` (gzipped before "
              f"committing: `raw.jsonl.gz`), each "
              "size's medians and rounds in `size-N.json` beside it. The commands, in order (each read "
              "command runs once per round):", "", "```sh"]
    p = os.path.join(OUT, "commands.json")
    lines += json.load(open(p)) if os.path.exists(p) else []
    lines += ["```", ""]
    os.makedirs(os.path.dirname(os.path.abspath(REPORT)), exist_ok=True)
    with open(REPORT, "w") as fh:
        fh.write("\n".join(lines))
    log(f"wrote {REPORT}")


RUN_ID = time.strftime("%Y%m%d-%H%M%S")


def main():
    os.makedirs(OUT, exist_ok=True)
    if not RENDER_ONLY:
        if not os.access(AUGUR, os.X_OK):
            sys.exit(f"no executable augur at {AUGUR} (set AUGUR)")
        unknown = [b for b in READ_BENCHES if b not in READS]
        if unknown:
            sys.exit(f"unknown READ_BENCHES {unknown} (known: {' '.join(ALL_READS)})")
        preflight()
        for num in SIZES:
            log(f"size {num:,} (stores in {base_dir(num)})")
            try:
                state = measure_size(num)
            finally:
                save_commands(OUT, COMMANDS)
            for f in state["failures"]:
                log(f"FAILED at {num:,}: {f['message']}")
            try:
                render()
            except Exception:  # noqa: BLE001 - the data is saved; RENDER_ONLY=1 can redo it
                log("rendering failed (the JSON is saved; fix and rerun with RENDER_ONLY=1):\n"
                    + traceback.format_exc())
    else:
        render()


if __name__ == "__main__":
    main()
