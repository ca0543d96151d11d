#!/usr/bin/env python3
"""Renders the results of scripts/bench_report.sh (issue 5) as docs/benchmarks/REPORT.md.

Usage: python3 scripts/report.py OUT_DIR REPORT_MD
Reads every JSON array OUT_DIR/<section>-<run>.json written by `augur bench --json` (the
section is the letter before the first '-': A engines, B 1 KiB values, C YCSB, D datasets,
E latency vs memory, F the harness side of the db_bench cross-check), OUT_DIR/machine.txt,
OUT_DIR/commands.txt, OUT_DIR/dbbench.txt, and the outputs of the scripts that sections G-I
run: OUT_DIR/G-strings/runs.tsv (scripts/string_keys_bench.sh), OUT_DIR/H-beyond/
beyond-memory.json (scripts/beyond_memory_bench.py) and OUT_DIR/I-server.json
(scripts/server_bench.py); and writes:
  OUT_DIR/results.csv   every record flattened (section, run, label, engine, benchmark, the
                        scalar fields, config.*, a few stats.* digests)
  OUT_DIR/*.png         the plots
  REPORT_MD             the tables and plots; every number comes from the files above.
The Findings of an existing REPORT_MD (from the "findings" marker to "## Targets") are kept;
above them the report lists every comparison of the run in which a peer did better than Augur.
Needs matplotlib (pip install matplotlib).
"""
import csv
import glob
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import beyond_memory_bench as beyond  # noqa: E402
from bench_common import fmt, human_bytes, kept_findings  # noqa: E402
from json_tools import uniq  # noqa: E402

if len(sys.argv) != 3:
    sys.exit(__doc__)
OUT, REPORT = sys.argv[1], sys.argv[2]
REPORT_DIR = os.path.dirname(os.path.abspath(REPORT))
LEARNED, BASELINE = "augur-learned", "augur-baseline"
# The targets of issue 5 ("Measure and report"): learned-path speedup over RocksDB, and Augur's
# write amplification with 1 KiB values relative to RocksDB without BlobDB.
TARGET_SPEEDUP = {"readrandom": 2.0, "readmissing": 2.0, "fillrandom": 1.0}
TARGET_WA_RATIO = 1 / 3
FINDINGS = "<!-- findings: written by hand after a run -->"
# (how far behind, text): every comparison of this run in which a peer did better than Augur.
BEHIND = []


# --- loading ---------------------------------------------------------------------------------


def load_records():
    """Every record of every OUT/*.json, tagged with `_section` and `_run` (file stem)."""
    recs = []
    for path in sorted(glob.glob(os.path.join(OUT, "*.json"))):
        run = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, list):
            continue
        for r in data:
            r["_section"] = run.split("-")[0]
            r["_run"] = run
            recs.append(r)
    return recs


def label(r):
    """The configuration's label (`--compare`), or the engine of a single-configuration run."""
    return (r.get("config") or {}).get("label") or r.get("engine", "?")


def bench_name(r):
    """The benchmark, with the nexts of a seekrandom that reads more than one entry."""
    n = (r.get("config") or {}).get("seek_nexts") or 0
    if r["benchmark"] == "seekrandom" and n:
        return f"seekrandom ({n} nexts)"
    return r["benchmark"]


def model_memory(r):
    """(total model bytes, entries, model bytes per entry) from an Augur record's stats."""
    s = r.get("stats") or {}
    total = (s.get("index_memory") or {}).get("total_model_bytes")
    entries = sum(lv.get("entries", 0) for lv in s.get("levels", []))
    if total is None:
        return None, None, None
    return total, entries, total / max(entries, 1)


def labels_of(recs):
    return uniq(label(r) for r in recs)


def find(recs, bench, lab):
    return next((r for r in recs if bench_name(r) == bench and label(r) == lab), None)


# --- formatting ------------------------------------------------------------------------------


def us_cell(r):
    """µs/op, with p99 when the run recorded latencies."""
    if r is None:
        return "-"
    cell = fmt(r["micros_per_op"])
    if r.get("p99_us") is not None:
        cell += f" (p99 {fmt(r['p99_us'], 2)})"
    return cell


def ratio(slow, fast):
    """slow / fast as `1.23×` (`-` when either is missing)."""
    if slow is None or fast is None or fast <= 0:
        return "-"
    return f"{slow / fast:.2f}×"


def behind(where, peer, augur, other, unit, higher_is_better=False):
    """Records in BEHIND that `peer` did better than Augur (`augur`, `other` in `unit`)."""
    if not augur or not other:
        return
    factor = other / augur if higher_is_better else augur / other
    if factor > 1:
        BEHIND.append((factor, f"{where}: {peer} {fmt(other)} {unit}, Augur {fmt(augur)} "
                               f"{unit} ({factor:.2f}× behind)"))


def behind_list():
    """The BEHIND comparisons, furthest behind first, as a markdown list."""
    md = ["### Where Augur is behind (computed from this run)\n",
          "Every comparison of the sections below in which a peer did better than Augur "
          "(augur-learned in A, C and D, Augur's best learned mode in G, Augur learned in H, "
          "augur-server in I), furthest behind first:\n"]
    if not BEHIND:
        return md + ["None: no peer did better than Augur in this run.\n"]
    return md + ["\n".join(f"- {text}" for _, text in sorted(BEHIND, reverse=True)) + "\n"]


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def rel(path):
    """A path relative to REPORT.md's directory, for image links."""
    return os.path.relpath(os.path.abspath(path), REPORT_DIR)


def save(fig, name):
    path = os.path.join(OUT, name)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"![{name}]({rel(path)})\n"


def labelled(ax, ylabel, title, name):
    """Labels the plot `ax` and saves its figure as OUT/name; returns the image link."""
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return "\n" + save(ax.figure, name)


def grouped_bars(ax, groups, series, value, log=False):
    """Bars of value(group, series) for every group (x) and series (color)."""
    width = 0.8 / max(len(series), 1)
    top = 0.0
    for i, s in enumerate(series):
        ys = [value(g, s) for g in groups]
        top = max([top] + [y for y in ys if y is not None])
        xs = [j + i * width for j in range(len(groups))]
        ax.bar([x for x, y in zip(xs, ys) if y is not None],
               [y for y in ys if y is not None], width, label=s)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))])
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize=8)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(top=top * 4 if top > 0 else None)  # room for the legend
    elif top > 0:
        ax.set_ylim(0, top * 1.25)
    ax.legend(fontsize=7, loc="upper left", ncol=min(len(series), 3))


def peers_of(labs):
    return [lab for lab in labs if lab not in (LEARNED, BASELINE)]


# --- CSV -------------------------------------------------------------------------------------


def write_csv(recs):
    """Every record flattened into OUT/results.csv."""
    rows = []
    for r in recs:
        row = {"section": r["_section"], "run": r["_run"], "label": label(r),
               "engine": r.get("engine"), "benchmark": r.get("benchmark")}
        for k, v in r.items():
            if k.startswith("_") or k in row or k in ("config", "stats") \
                    or isinstance(v, (dict, list)):
                continue
            row[k] = v
        for k, v in (r.get("config") or {}).items():
            row[f"config.{k}"] = v
        s = r.get("stats")
        if s:
            total, entries, per_key = model_memory(r)
            row["stats.entries"] = entries
            row["stats.total_model_bytes"] = total
            row["stats.model_bytes_per_key"] = per_key
            row["stats.fence_and_filter_bytes"] = (s.get("index_memory") or {}).get(
                "fence_and_filter_bytes")
            row["stats.model_path_fraction"] = (s.get("learning") or {}).get(
                "model_path_fraction")
            lb = s.get("lookup_breakdown") or {}
            row["stats.breakdown.samples"] = lb.get("samples")
            row["stats.breakdown.avg_total_ns"] = lb.get("avg_total_ns")
            for step, ns in (lb.get("avg_step_ns") or {}).items():
                row[f"stats.breakdown.{step}_ns"] = ns
        rows.append(row)
    fields = uniq(k for row in rows for k in row)
    path = os.path.join(OUT, "results.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


# --- sections --------------------------------------------------------------------------------


def section_a(recs):
    md = ["## A. Engines: 16-byte keys, 64-byte values\n"]
    if not recs:
        return md + ["Not run.\n"]
    labs = labels_of(recs)
    benches = uniq(bench_name(r) for r in recs)
    peers = peers_of(labs)
    first = recs[0]["config"]
    md.append(f"{first['num']:,} key numbers drawn as db_bench does (fillrandom writes with "
              f"repeats), {first['reads']:,} operations per read benchmark, single thread, "
              f"peers' block cache {first['cache_bytes']:,} bytes. Cells: mean µs/op "
              "(p99 µs). Ratios: other µs/op ÷ augur-learned µs/op (> 1: Augur's learned "
              "path is faster).\n")
    header = ["benchmark"] + [f"{lab} µs/op" for lab in labs]
    if LEARNED in labs:
        header += [f"learned vs {o}" for o in labs if o != LEARNED]
    rows = []
    for b in benches:
        row = [b] + [us_cell(find(recs, b, lab)) for lab in labs]
        if LEARNED in labs:
            fast = find(recs, b, LEARNED)
            for o in labs:
                if o == LEARNED:
                    continue
                slow = find(recs, b, o)
                row.append(ratio(slow and slow["micros_per_op"], fast and fast["micros_per_op"]))
                if o in peers:
                    behind(f"A {b}", o, fast and fast["micros_per_op"],
                           slow and slow["micros_per_op"], "µs/op")
        rows.append(row)
    md.append(table(header, rows))
    md.append("\nAfter fillrandom (before compaction): write amplification measured from "
              "`/proc/self/io` for every engine, Augur's own counters, space amplification "
              "(database bytes ÷ live key + value bytes).\n")
    rows = []
    for lab in labs:
        r = find(recs, "fillrandom", lab)
        if r:
            rows.append([lab, fmt(r.get("io_write_amplification"), 2),
                         fmt(r.get("write_amplification"), 2),
                         fmt(r.get("space_amplification"), 2),
                         fmt((r.get("db_bytes") or 0) / 2**20, 1)])
    md.append(table(["label", "write amp. (io)", "write amp. (Augur counters)",
                     "space amp.", "database MiB"], rows))

    plotted = [b for b in benches if b != "compact"]
    fig, ax = plt.subplots(figsize=(8, 4))
    grouped_bars(ax, plotted, labs, lambda b, lab: (find(recs, b, lab) or {}).get(
        "micros_per_op"), log=True)
    ax.set_ylabel("µs/op (log scale, lower is better)")
    ax.set_title("Engines: 16-byte keys, 64-byte values")
    md.append("\n" + save(fig, "A-engines.png"))

    # Bourbon-style breakdown of the readrandom lookups (sampled by the engine).
    aug = [(lab, find(recs, "readrandom", lab)) for lab in (BASELINE, LEARNED)]
    aug = [(lab, r) for lab, r in aug if r and (r.get("stats") or {}).get("lookup_breakdown")]
    if aug:
        md.append("\n### Lookup breakdown (readrandom)\n\n"
                  "Average time per step of the engine's sampled point lookups "
                  "(`stats.lookup_breakdown`, ns; each sampled lookup also pays for its own "
                  "timers, so the totals are not the benchmark's µs/op; *(unattributed)* is "
                  "the sampled total minus the steps).\n")
        steps = uniq(k for _, r in aug for k in r["stats"]["lookup_breakdown"]["avg_step_ns"])
        # Per label: step -> ns, plus the part of the sampled total no step accounts for.
        ns = {}
        for lab, r in aug:
            lb = r["stats"]["lookup_breakdown"]
            ns[lab] = dict(lb["avg_step_ns"])
            ns[lab]["(unattributed)"] = max(lb["avg_total_ns"] - sum(lb["avg_step_ns"].values()), 0)
        steps.append("(unattributed)")
        rows = [[s] + [fmt(ns[lab].get(s), 1) for lab, _ in aug] for s in steps]
        rows.append(["**total**"] + [fmt(r["stats"]["lookup_breakdown"]["avg_total_ns"], 1)
                                      for _, r in aug])
        rows.append(["samples"] + [str(r["stats"]["lookup_breakdown"]["samples"])
                                   for _, r in aug])
        md.append(table(["step (ns)"] + [lab for lab, _ in aug], rows))
        fig, ax = plt.subplots(figsize=(5, 4))
        bottoms = [0.0] * len(aug)
        for s in steps:
            ys = [ns[lab].get(s, 0) for lab, _ in aug]
            ax.bar([lab for lab, _ in aug], ys, 0.5, bottom=bottoms, label=s)
            bottoms = [b + y for b, y in zip(bottoms, ys)]
        ax.set_ylabel("ns per lookup (sampled)")
        ax.set_title("readrandom lookup breakdown")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        md.append("\n" + save(fig, "A-breakdown.png"))
    return md


def settled_wa(recs, lab):
    """Write amplification of fillrandom including the flushes and compactions it left
    behind: (fillrandom's + waitforcompaction's io bytes) / fillrandom's user bytes. None
    without a waitforcompaction record."""
    f, w = find(recs, "fillrandom", lab), find(recs, "waitforcompaction", lab)
    if not f or not w or not f.get("io_write_amplification"):
        return None
    user = f["io_bytes_written"] / f["io_write_amplification"]
    return (f["io_bytes_written"] + w["io_bytes_written"]) / user


def section_b(recs):
    md = ["## B. 1 KiB values: value separation and write amplification\n"]
    if not recs:
        return md + ["Not run.\n"]
    labs = labels_of(recs)
    first = recs[0]["config"]
    md.append(f"{first['num']:,} key numbers, {first['value_size']}-byte values; Augur "
              f"separates values of at least {first['value_separation_threshold']} bytes into "
              "its value log, `rocksdb-blobdb` puts them in blob files from the same size, "
              "`rocksdb` keeps them inline. Write amplification: bytes the process handed to "
              "`write` calls (`/proc/self/io`) ÷ user bytes — *settled* counts fillrandom "
              "plus the `waitforcompaction` after it (the flushes and compactions the fill "
              "caused), *at fill end* only what was written until the last put; space "
              "amplification: database bytes ÷ live bytes after the fill.\n")
    rows = []
    for lab in labs:
        f, rd = find(recs, "fillrandom", lab), find(recs, "readrandom", lab)
        rows.append([lab, us_cell(f), us_cell(rd),
                     fmt(settled_wa(recs, lab), 2),
                     fmt(f and f.get("io_write_amplification"), 2),
                     fmt(f and f.get("write_amplification"), 2),
                     fmt(f and f.get("space_amplification"), 2)])
    md.append(table(["label", "fillrandom µs/op", "readrandom µs/op", "write amp. settled (io)",
                     "write amp. at fill end (io)", "at fill end (Augur counters)",
                     "space amp."], rows))
    wa = {lab: settled_wa(recs, lab) or
          (find(recs, "fillrandom", lab) or {}).get("io_write_amplification")
          for lab in labs}
    refs = [p for p in ("rocksdb", "rocksdb-blobdb") if wa.get(p)]
    augs = [a for a in (BASELINE, LEARNED) if wa.get(a) is not None]
    if refs and augs:
        md.append(f"\nAugur's write amplification ÷ the peer's (io-measured; the issue's "
                  f"target against `rocksdb` is ≤ {TARGET_WA_RATIO:.2f}):\n")
        md.append(table(["Augur label"] + [f"÷ {p}" for p in refs],
                        [[a] + [f"{wa[a] / wa[p]:.2f}" for p in refs] for a in augs]))
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = list(range(len(labs)))
    ax.bar([x - 0.2 for x in xs], [wa.get(lab) or 0 for lab in labs], 0.4,
           label="settled, io-measured (/proc/self/io)")
    own = [(find(recs, "fillrandom", lab) or {}).get("write_amplification") for lab in labs]
    ax.bar([x + 0.2 for x, o in zip(xs, own) if o is not None], [o for o in own if o is not None],
           0.4, label="Augur's counters")
    if wa.get("rocksdb"):
        ax.axhline(wa["rocksdb"] * TARGET_WA_RATIO, color="gray", linestyle="--",
                   label="1/3 of rocksdb (target)")
    ax.set_xticks(xs)
    ax.set_xticklabels(labs, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.35 * max([w or 0 for w in wa.values()] + [o or 0 for o in own] + [1]))
    ax.set_ylabel("write amplification of fillrandom")
    ax.set_title("1 KiB values: write amplification")
    ax.legend(fontsize=7)
    md.append("\n" + save(fig, "B-write-amplification.png"))
    return md


def section_c(recs):
    md = ["## C. YCSB\n"]
    if not recs:
        return md + ["Not run.\n"]
    labs = labels_of(recs)
    work = uniq(bench_name(r) for r in recs)
    first = recs[0]["config"]
    md.append(f"{first['num']:,} records loaded by `ycsb-load`, then {first['reads']:,} "
              f"operations per workload, in the order run (one database per label), "
              f"{first['value_size']}-byte values. Cells: throughput in kops/s (p99 µs). "
              "Ratios: augur-learned's throughput ÷ the other's (> 1: Augur faster).\n")
    header = ["workload"] + [f"{lab} kops/s" for lab in labs]
    if LEARNED in labs:
        header += [f"learned vs {o}" for o in labs if o != LEARNED]

    def kops(w, lab):
        r = find(recs, w, lab)
        return r and r["ops_per_sec"] / 1e3

    rows = []
    for w in work:
        row = [w]
        for lab in labs:
            r = find(recs, w, lab)
            cell = fmt(kops(w, lab), 1)
            if r and r.get("p99_us") is not None:
                cell += f" (p99 {fmt(r['p99_us'], 2)})"
            row.append(cell)
        if LEARNED in labs:
            row += [ratio(kops(w, LEARNED), kops(w, o)) for o in labs if o != LEARNED]
            for o in peers_of(labs):
                behind(f"C {w}", o, kops(w, LEARNED), kops(w, o), "kops/s", True)
        rows.append(row)
    md.append(table(header, rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    grouped_bars(ax, work, labs, kops)
    ax.set_ylabel("kops/s (higher is better)")
    ax.set_title("YCSB throughput")
    md.append("\n" + save(fig, "C-ycsb.png"))
    return md


def section_d(recs):
    md = ["## D. Real datasets: learned vs baseline per dataset\n"]
    if not recs:
        return md + ["Not run.\n"]
    runs = uniq(r["_run"] for r in recs)
    labs = labels_of(recs)
    peers = peers_of(labs)
    md.append("Every key of each dataset in `../shared/datasets/` written once in shuffled "
              "order (fillrandom), fully compacted, then readrandom of present keys; 16-byte "
              "keys (u64 keys big-endian, padded; words as-is), 64-byte values. Cells: "
              "readrandom µs/op. Speedup: other µs/op ÷ augur-learned µs/op.\n")
    header = (["dataset", "keys"] + [f"{lab} µs/op" for lab in labs]
              + [f"learned vs {o}" for o in labs if o != LEARNED])
    rows, speed = [], {}
    for run in runs:
        rr = [r for r in recs if r["_run"] == run]
        name = run.split("-", 1)[1]
        us = {lab: (find(rr, "readrandom", lab) or {}).get("micros_per_op") for lab in labs}
        keys = rr[0]["config"]["num"]
        rows.append([name, f"{keys:,}"] + [fmt(us[lab]) for lab in labs]
                    + [ratio(us[o], us.get(LEARNED)) for o in labs if o != LEARNED])
        speed[name] = {o: (us[o] / us[LEARNED] if us.get(o) and us.get(LEARNED) else None)
                       for o in labs if o != LEARNED}
        for o in peers:
            behind(f"D {name} readrandom", o, us.get(LEARNED), us[o], "µs/op")
    md.append(table(header, rows))
    series = [o for o in [BASELINE] + peers if o in labs]
    fig, ax = plt.subplots(figsize=(8, 4))
    grouped_bars(ax, list(speed), [f"vs {o}" for o in series],
                 lambda d, s: speed[d].get(s[3:]))
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=0.8)
    ax.set_ylabel("readrandom speedup of augur-learned (×)")
    ax.set_title("Speedup per dataset (other µs/op ÷ augur-learned µs/op)")
    md.append("\n" + save(fig, "D-speedup.png"))
    return md


def section_e(recs):
    md = ["## E. Latency vs model memory (ipv4_asn)\n"]
    reads = [r for r in recs if r["benchmark"] == "readrandom"]
    if not reads:
        return md + ["Not run.\n"]
    first = reads[0]["config"]
    md.append(f"`{os.path.basename(first['key_source'].split(':', 1)[-1])}`, {first['num']:,} "
              "keys, values separated (threshold 0), at-build learning, one fresh database "
              "per configuration. Memory = `stats.index_memory.total_model_bytes` ÷ entries "
              "of every level. Cells: readrandom µs/op / model bytes per key. *baseline* = "
              "`--learning=never` (block fence pointers, no model).\n")
    base = next((r for r in reads if r["config"]["learning"] == "never"), None)
    learned = [r for r in reads if r["config"]["learning"] != "never"]
    known = ["fence", "plr", "pgm", "rs", "rmi", "fiting", "plex"]
    types = sorted(uniq(r["config"]["index"] for r in learned),
                   key=lambda t: known.index(t) if t in known else len(known))
    bounds = sorted({r["config"]["error_bound"] for r in learned})
    at = {(r["config"]["index"], r["config"]["error_bound"]): r for r in learned}
    rows = []
    for t in types:
        row = [t]
        for b in bounds:
            r = at.get((t, b))
            row.append(f"{fmt(r['micros_per_op'])} / {fmt(model_memory(r)[2])} B"
                       if r else "-")
        rows.append(row)
    md.append(table(["index"] + [f"δ={b}" for b in bounds], rows))
    if base:
        md.append(f"\nbaseline: {fmt(base['micros_per_op'])} µs/op, "
                  f"{fmt(model_memory(base)[2])} model B/key.\n")
    fig, ax = plt.subplots(figsize=(6, 4))
    for t, marker in zip(types, "sovD^<>p"):
        pts = sorted((model_memory(at[(t, b)])[2], at[(t, b)]["micros_per_op"])
                     for b in bounds if (t, b) in at)
        ax.plot([max(x, 1e-4) for x, _ in pts], [y for _, y in pts], marker=marker, label=t)
    if base:
        ax.axhline(base["micros_per_op"], color="gray", linestyle="--",
                   label="baseline (never)")
    ax.set_xscale("log")
    ax.set_xlabel("model memory (bytes per key, log scale)")
    ax.set_ylabel("readrandom µs/op")
    ax.set_title("Latency vs memory, error bounds " + ", ".join(map(str, bounds)))
    ax.legend(fontsize=7)
    md.append("\n" + save(fig, "E-latency-memory.png"))
    return md


def section_f():
    md = ["## F. Cross-check against RocksDB's db_bench\n"]
    return md + [read_text("dbbench.txt")
                 or "Not run (needs `db_bench` from rocksdb-tools and a RocksDB build).\n"]


def command_of(script):
    """The line of commands.txt that ran `script`, as a fenced block ("" when none)."""
    line = next((c for c in read_text("commands.txt").splitlines() if script in c), None)
    return f"\n```sh\n{line}\n```\n" if line else ""


STR_AUGUR = {"never": "augur-baseline", "plr": "augur-plr", "string": "augur-string",
             "auto": "augur-auto"}


def section_g(rows):
    md = ["## G. String keys\n"]
    if not rows:
        return md + ["Not run.\n"]
    # (set, mode) -> the rounds' (readrandom µs, seekrandom µs, model bytes, disk bytes)
    runs = {}
    for _, name, mode, read, seek, model, disk, *_ in rows:
        runs.setdefault((name, mode), []).append((float(read), float(seek), int(model),
                                                  int(disk)))
    med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in runs.items()}
    sets, modes = uniq(s for s, _ in runs), uniq(m for _, m in runs)
    name = lambda m: STR_AUGUR.get(m, m)  # noqa: E731
    md.append("Each key set (`../shared/datasets/` text files, one key per line, and the "
              "synthetic `composite` and `redis` keys) written with 100-byte values, compacted, "
              "then readrandom and seekrandom with 10 nexts, one fresh database per mode, in "
              "memory; medians over the rounds. Augur's modes: `--learning never` "
              "(augur-baseline), `--index plr`, `--index auto` (the chooser). Ratios: "
              "baseline µs ÷ mode µs and RocksDB µs ÷ mode µs (> 1: the mode is faster); disk: "
              "database bytes ÷ RocksDB's.\n" + command_of("string_keys_bench.sh"))
    for s in sets:
        base, rocks = med.get((s, "never")), med.get((s, "rocksdb"))
        out = []
        for m in [m for m in modes if (s, m) in med]:
            read, seek, model, disk = med[(s, m)]
            out.append([name(m), fmt(read), fmt(seek),
                        ratio(base and base[0], read) if m in STR_AUGUR else "-",
                        ratio(base and base[1], seek) if m in STR_AUGUR else "-",
                        ratio(rocks and rocks[0], read), ratio(rocks and rocks[1], seek),
                        f"{model:,}", f"{disk:,}", ratio(disk, rocks and rocks[3])])
        md.append(f"\n### {s}\n")
        md.append(table(["mode", "readrandom µs/op", "seekrandom+10 µs/op", "read vs baseline",
                         "seek vs baseline", "read vs RocksDB", "seek vs RocksDB",
                         "model bytes", "disk bytes", "disk ÷ RocksDB"], out))
        learned = [med[(s, m)] for m in modes if m in STR_AUGUR and m != "never"
                   and (s, m) in med]
        for m in [m for m in modes if m not in STR_AUGUR and (s, m) in med]:
            for i, bench in enumerate(("readrandom", "seekrandom+10")):
                behind(f"G {s} {bench}", m, min((x[i] for x in learned), default=None),
                       med[(s, m)][i], "µs/op")
    by_label = {(s, name(m)): v for (s, m), v in med.items()}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, i, bench in zip(axes, (0, 1), ("readrandom", "seekrandom (10 nexts)")):
        grouped_bars(ax, sets, [name(m) for m in modes],
                     lambda s, lab: (by_label.get((s, lab)) or [None] * 4)[i], log=True)
        ax.set_ylabel("µs/op (log scale, lower is better)")
        ax.set_title(f"String keys: {bench}")
    return md + ["\n" + save(fig, "G-strings.png")]


def section_h(data):
    md = ["## H. Storage-resident: direct reads, cache = 25% of the database\n"]
    if data is None:
        return md + ["Not run (needs RocksDB built in).\n"]
    dbs = "; ".join(f"`{n}` {d['num']:,} keys, {human_bytes(d['bytes'])} on disk"
                    for n, d in sorted(data["dbs"].items()))
    md.append("Bourbon's Table 3 setting (part `t3` of `scripts/beyond_memory_bench.py`): "
              "16-byte keys and 64-byte values inline, each database filled and fully "
              f"compacted once on disk ({dbs}), then readrandom with `--use_direct_reads=1` and "
              "a cache of 25% of the database's bytes (the first readrandom of each process "
              "warms the cache, the second is measured), uniform and hotspot (80% of the "
              "lookups on 25% of the keys). Medians over the rounds; the inner `augur bench` "
              "commands are in `H-beyond/beyond-memory.json`.\n"
              + command_of("beyond_memory_bench.py"))
    md.append("\n".join(beyond.reads_table(data, "t3")) + "\n")
    cells = [c for c in data["cells"] if c["part"] == "t3"]
    dists = uniq(c["dist"] for c in cells)
    labels = uniq(c["label"] for c in cells)
    us = {(d, lab): beyond.med([c for c in cells if (c["dist"], c["label"]) == (d, lab)],
                               beyond.us) for d in dists for lab in labels}
    for d in dists:
        behind(f"H {d} readrandom (direct reads)", "RocksDB", us.get((d, "Augur learned")),
               us.get((d, "RocksDB")), "µs/op")
    _, ax = plt.subplots(figsize=(6, 4))
    grouped_bars(ax, dists, labels, lambda d, lab: us.get((d, lab)))
    return md + [labelled(ax, "readrandom µs/op (lower is better)",
                          "Direct reads, cache = 25% of the database", "H-beyond.png")]


def section_i(data):
    md = ["## I. augur-server against redis-server\n"]
    if data is None:
        return md + ["Not run (needs redis-server and redis-tools).\n"]
    load = data.get("load", {})
    md.append(f"{data['keys']:,} keys `key:%012d` with 100-byte values loaded into each "
              "server through `redis-cli --pipe` (augur-server `--sync everysec`; redis-server "
              "appendonly, appendfsync everysec, no snapshots), then `redis-benchmark -c 50 "
              f"-n {data['requests']:,} -r {data['keys']:,}` per test at pipeline depth 16 "
              f"and 1 over the loaded keys; {data['redis_server'].split(' sha')[0]}. Medians "
              "over the rounds; ratio = augur ops/s ÷ redis ops/s (> 1: augur-server "
              "faster).\n" + command_of("server_bench.py"))
    # (test, pipeline) -> server -> the rounds' rows
    cells = {}
    for e in data["loaded"]:
        for test, row in e["rows"].items():
            cells.setdefault((test, e["pipeline"]), {}).setdefault(e["server"], []).append(row)
    get = lambda rows, k: rows and statistics.median(r[k] for r in rows)  # noqa: E731
    rows, groups, rps = [], [], {}
    for (test, pipe), by in cells.items():
        a, r = by.get("augur"), by.get("redis")
        g = f"{test} -P {pipe}"
        groups.append(g)
        rps[g] = {"augur-server": get(a, "rps"), "redis-server": get(r, "rps")}
        rows.append([test, pipe, fmt(get(a, "rps"), 0), fmt(get(r, "rps"), 0),
                     fmt(data["summary"]["loaded"].get(f"P{pipe} {test}"), 2),
                     fmt(get(a, "p99_ms"), 3), fmt(get(r, "p99_ms"), 3)])
        behind(f"I {g}", "redis-server", get(a, "rps"), get(r, "rps"), "ops/s", True)
    md.append(table(["test", "pipeline", "augur ops/s", "redis ops/s", "augur ÷ redis",
                     "augur p99 ms", "redis p99 ms"], rows))
    if load:
        md.append("\nLoad and memory: " + "; ".join(
            f"{k}-server loaded in {v['seconds']:.1f} s, RSS anonymous "
            f"{v['rss_anon_kib'] / 1024:,.0f} MiB + file-backed {v['rss_file_kib'] / 1024:,.0f} MiB"
            for k, v in load.items()) + ".\n")
    _, ax = plt.subplots(figsize=(8, 4))
    grouped_bars(ax, groups, ["augur-server", "redis-server"], lambda g, s: rps[g][s],
                 log=True)
    return md + [labelled(ax, "ops/s (log scale, higher is better)",
                          "Loaded keys: augur-server vs redis-server", "I-server.png")]


def targets(a, b):
    """The issue's targets, computed from sections A and B."""
    rows = []
    for bench, want in TARGET_SPEEDUP.items():
        fast, slow = find(a, bench, LEARNED), find(a, bench, "rocksdb")
        if fast and slow:
            got = slow["micros_per_op"] / fast["micros_per_op"]
            rows.append([f"{bench}: augur-learned vs rocksdb ≥ {want:g}×", f"{got:.2f}×",
                         "yes" if got >= want else "no"])
    rocks = settled_wa(b, "rocksdb")
    for lab in (BASELINE, LEARNED):
        mine = settled_wa(b, lab)
        if rocks and mine is not None:
            got = mine / rocks
            rows.append([f"1 KiB values: {lab} settled write amp. ÷ rocksdb's ≤ "
                         f"{TARGET_WA_RATIO:.2f}",
                         f"{got:.2f}", "yes" if got <= TARGET_WA_RATIO else "no"])
    if not rows:
        return ["Needs sections A and B with RocksDB built in.\n"]
    return [table(["target", "measured", "met"], rows)]


def read_text(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read()


def read_json(name):
    """OUT/name parsed, or None when it is missing."""
    text = read_text(name)
    return json.loads(text) if text else None


def main():
    recs = load_records()
    by = lambda s: [r for r in recs if r["_section"] == s]  # noqa: E731
    csv_path = write_csv(recs)
    machine = [line.split(": ", 1) for line in read_text("machine.txt").splitlines()
               if ": " in line]
    info = dict(machine)
    # The sections first: they fill BEHIND, which leads the Findings.
    sections = [section_a(by("A")), section_b(by("B")), section_c(by("C")),
                section_d(by("D")), section_e(by("E")), section_f(),
                section_g([r.split("\t") for r in read_text("G-strings/runs.tsv").splitlines()]),
                section_h(read_json("H-beyond/beyond-memory.json")),
                section_i(read_json("I-server.json"))]
    # Hand-written findings: from the marker to the next heading of the existing report.
    hand = kept_findings(REPORT, "## Targets")
    hand = hand[hand.index(FINDINGS):] if FINDINGS in hand else FINDINGS
    md = ["# Augur benchmark report\n",
          "<!-- Generated by scripts/report.py from the files in "
          f"{rel(OUT)}/; regenerate instead of editing (except Findings below the marker). -->\n",
          "## Findings\n"]
    md += behind_list()
    md += [hand + "\n", "## Targets (issue 5)\n"]
    md += targets(by("A"), by("B"))
    md += ["\n## How to regenerate\n",
           "```sh\n" + info.get("command", "scripts/bench_report.sh") + "\n```\n",
           "Raw data: every JSON record, the logs and `results.csv` (all records flattened) "
           f"in `{rel(OUT)}/`.\n",
           "\n## Machine\n"]
    md.append(table(["item", "value"], [[k, v] for k, v in machine if k != "command"]))
    md.append("\nEvery benchmark single-threaded (but I's servers and clients), one run per "
              "number unless the section says rounds, databases under the directory above "
              "(but H's, on disk).\n")
    for part in sections:
        md.append("")
        md += part
    cmds = read_text("commands.txt").strip()
    if cmds:
        md += ["\n## Exact commands\n",
               "Run from the repository root, in this order:\n",
               "```sh\n" + cmds + "\n```\n"]
    os.makedirs(REPORT_DIR, exist_ok=True)
    with open(REPORT, "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    print(f"wrote {REPORT} and {csv_path} ({len(recs)} records)")


main()
