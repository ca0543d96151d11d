#!/usr/bin/env python3
"""Plots and tables of scripts/bench_zoo.sh results (issue 4, the learned-index study's figures).

Usage: python3 scripts/plot_zoo.py [ZOO_JSONL] [OUT_DIR]
       (defaults /tmp/augur-zoo/zoo.jsonl and docs/benchmarks/zoo)
Writes fig6-<dataset>.png, fig8-uniform.png, fig9-compaction.png, fig12-ycsb.png and prints
markdown tables of the same numbers. Needs matplotlib (pip install matplotlib).
"""
import collections
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else "/tmp/augur-zoo/zoo.jsonl"
out = sys.argv[2] if len(sys.argv) > 2 else "docs/benchmarks/zoo"
os.makedirs(out, exist_ok=True)
rows = [json.loads(line) for line in open(src) if line.strip()]
TYPES = ["fence", "plr", "pgm", "rs", "rmi", "fiting", "plex"]
MARKERS = dict(zip(TYPES, "sovD^<>"))


def points(fig, ds, variant=None):
    """(type, bound) -> {us, model_bytes_per_key, learn_s} for one sweep."""
    res, keys, base = {}, {}, None
    sel = [r for r in rows if r["fig"] == fig and r["dataset"] == ds
           and (variant is None or r.get("variant", "") == variant)]
    for r in sel:
        k = (r["index"], r["bound"])
        if r["benchmark"] == "learn":
            res.setdefault(k, {})["model_bytes"] = r.get("model_bytes", 0)
            res[k]["entries"] = r.get("entries", 0)
            res[k]["learn_s"] = r["seconds"]
        elif r["benchmark"] == "readrandom":
            res.setdefault(k, {})["us"] = r["micros_per_op"]
            keys[k] = r.get("num", None)
            if r["index"] == "baseline":
                base = r["micros_per_op"]
    return res, base


def per_key(v):
    """Model bytes per table entry of one configuration."""
    return v.get("model_bytes", 0) / max(v.get("entries", 0), 1)


def sweep_plot(ax, res, base, title):
    for t in TYPES:
        pts = sorted((b, v) for (ty, b), v in res.items() if ty == t and "us" in v)
        if not pts:
            continue
        xs = [max(per_key(v), 1e-4) for _, v in pts]  # log axis: 0 plotted at 1e-4
        ys = [v["us"] for _, v in pts]
        ax.plot(xs, ys, marker=MARKERS[t], label=t)
    if base:
        ax.axhline(base, color="gray", linestyle="--", label="baseline (block fences)")
    ax.set_xscale("log")
    ax.set_xlabel("index memory (bytes per key)")
    ax.set_ylabel("readrandom µs/op")
    ax.set_title(title)
    ax.legend(fontsize=7)


def table(res, base):
    bounds = sorted({b for (_, b) in res if b})
    print("| index | " + " | ".join(f"δ={b}" for b in bounds) + " |")
    print("|---|" + "---|" * len(bounds))
    for t in TYPES:
        cells = []
        for b in bounds:
            v = res.get((t, b))
            if not v or "us" not in v:
                cells.append("")
                continue
            cells.append(f"{v['us']:.3f} µs / {per_key(v):.3f} B")
        if any(cells):
            print(f"| {t} | " + " | ".join(cells) + " |")
    if base:
        print(f"\nbaseline (never policy, block fence pointers): {base:.3f} µs/op\n")


# Figure 6
for ds in ["uniform", "ipv4_asn", "words"]:
    res, base = points("fig6", ds)
    if not res:
        continue
    fig, ax = plt.subplots(figsize=(6, 4))
    sweep_plot(ax, res, base, f"Fig. 6: {ds}")
    fig.tight_layout()
    fig.savefig(f"{out}/fig6-{ds}.png", dpi=120)
    print(f"\n### Fig. 6, {ds} (µs/op / model bytes per key)\n")
    table(res, base)

# Figure 8
variants = sorted({r.get("variant", "") for r in rows if r["fig"] == "fig8"})
if variants:
    fig, axes = plt.subplots(1, len(variants), figsize=(5 * len(variants), 4), squeeze=False)
    for ax, v in zip(axes[0], variants):
        res, base = points("fig8", "uniform", v)
        sweep_plot(ax, res, base, v or "default")
        print(f"\n### Fig. 8, uniform, {v}\n")
        table(res, base)
    fig.tight_layout()
    fig.savefig(f"{out}/fig8-uniform.png", dpi=120)

# Figure 9
f9 = [r for r in rows if r["fig"] == "fig9"]
if f9:
    agg = collections.OrderedDict()
    for r in f9:
        a = agg.setdefault(r["index"], collections.Counter())
        for k in ["flush_s", "flush_training_s", "compaction_s", "compaction_training_s"]:
            a[k] += r.get(k, 0.0)
        if r["benchmark"] == "fillrandom":
            a["fill_s"] += r["seconds"]
    print("\n### Fig. 9, write-only (fillrandom + full compaction)\n")
    print("| index | flush+compaction s | of which training s | training share | vs never |")
    print("|---|---|---|---|---|")
    never = agg.get("never", {}).get("flush_s", 0) + agg.get("never", {}).get("compaction_s", 0)
    labels, total, train = [], [], []
    for t, a in agg.items():
        work = a["flush_s"] + a["compaction_s"]
        tr = a["flush_training_s"] + a["compaction_training_s"]
        print(f"| {t} | {work:.2f} | {tr:.2f} | {100 * tr / max(work, 1e-9):.1f}% | "
              f"{work / max(never, 1e-9):.2f}× |")
        labels.append(t)
        total.append(work - tr)
        train.append(tr)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(labels, total, label="flush + compaction without training")
    ax.bar(labels, train, bottom=total, label="at-build training")
    ax.set_ylabel("seconds")
    ax.set_title("Fig. 9: compaction time with at-build training")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(f"{out}/fig9-compaction.png", dpi=120)

# Figure 12
f12 = [r for r in rows if r["fig"] == "fig12" and r["benchmark"].startswith("ycsb-")
       and r["benchmark"] != "ycsb-load"]
if f12:
    workloads = sorted({r["benchmark"] for r in f12})
    types = [t for t in TYPES if any(r["index"] == t for r in f12)]
    print("\n### Fig. 12, YCSB throughput (kops/s)\n")
    print("| index | δ | " + " | ".join(workloads) + " |")
    print("|---|---|" + "---|" * len(workloads))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(len(types), 1)
    for i, t in enumerate(types):
        by = {r["benchmark"]: r for r in f12 if r["index"] == t}
        ys = [by[w]["ops_per_sec"] / 1e3 if w in by else 0 for w in workloads]
        bound = next(r["bound"] for r in f12 if r["index"] == t)
        print(f"| {t} | {bound} | " + " | ".join(f"{y:.1f}" for y in ys) + " |")
        ax.bar([j + i * width for j in range(len(workloads))], ys, width, label=t)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
    ax.set_xticklabels(workloads)
    ax.set_ylabel("kops/s")
    ax.set_title("Fig. 12: YCSB per index type")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(f"{out}/fig12-ycsb.png", dpi=120)
