#!/usr/bin/env python3
"""Renders the lazy-learning study of scripts/lazy_study.sh (issue 10 item 5) as markdown.

Usage: python3 scripts/lazy_report.py [--out DIR] [--report FILE]
  --out     directory with <workload>-<policy>.json, commands.txt, machine.txt and, when
            written by hand after a run, findings.md (rendered as the Findings section)
            (default docs/benchmarks/lazy)
  --report  markdown written (default docs/benchmarks/lazy-learning.md)

Each JSON file is the array `augur bench --json` writes for one (workload, policy): ycsb-load,
flush, waitforcompaction, waitforlearning, [learn,] the workload, waitforlearning. The tables
follow the seed's Tables 3-5 (../shared/papers/bourbon-range-queries-lazy-learning.txt §5.4):
models learned, get and put latency, learning time, per policy and workload. Phases:

  before run  the load and its settling (ycsb-load, flush, waitforcompaction, the first
              waitforlearning) and, for offline, `learn` (Db::learn_all): the run record's
              `*_before` fields, counted from the database's creation
  run         the workload record itself (`learning_during` fields of the harness)
  backlog     the waitforlearning after the run: models the run queued but had not learned

Models learned count background and offline models (Stats::models_built) plus, under
at-build, every table written (each carries a model). Learning time adds background/offline
training and training inside flushes and compactions. Every number comes from the JSON files.
With matplotlib installed it also draws OUT/lazy-learning.png (optional).
"""
import argparse
import glob
import json
import os
import sys

POLICIES = ["never", "at-build", "always", "cost-benefit", "lazy", "offline"]
WORKLOAD_TITLES = {
    "ycsb-b": "B",
    "ycsb-b-hot": "B′ (hot spots)",
}
# Issue 10's target: on B′, lazy learns fewer models than cost-benefit with a get latency
# within 5% of cost-benefit's.
TARGET_GET_RATIO = 1.05


def load(out):
    """{(workload, policy): {"before": [records], "run": record, "after": [records]}}."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, list):
            continue
        idx = next(
            (i for i, r in enumerate(data) if r.get("benchmark") in WORKLOAD_TITLES), None
        )
        if idx is None:
            continue
        run = data[idx]
        # The row label is the file name after the workload: the policy, or lazy-k<K> for
        # the extra lazy runs of LAZY_KS.
        stem = os.path.splitext(os.path.basename(path))[0]
        prefix = run["benchmark"] + "-"
        label = stem[len(prefix) :] if stem.startswith(prefix) else stem
        runs[(run["benchmark"], label)] = {
            "before": data[:idx],
            "run": run,
            "after": data[idx + 1 :],
        }
    return runs


def label_order(label):
    """lazy-k<K> rows by K, other extra rows by name."""
    if label.startswith("lazy-k") and label[6:].isdigit():
        return (0, int(label[6:]), label)
    return (1, 0, label)


def total(records, field):
    return sum(r.get(field) or 0 for r in records)


def phases(entry):
    """The per-phase figures of one (workload, policy)."""
    run, after = entry["run"], entry["after"]
    return {
        "models_before": run.get("models_learned_before") or 0,
        "models_run": run.get("models_learned") or 0,
        "models_after": total(after, "models_learned"),
        "skipped_run": run.get("models_skipped") or 0,
        "learned_end": run.get("learned_files_end"),
        "files_end": run.get("files_end"),
        "tables_run": run.get("tables_created") or 0,
        "learning_before": run.get("learning_s_before") or 0.0,
        "learning_run": run.get("learning_s") or 0.0,
        "learning_after": total(after, "learning_s"),
        "get_mean": run.get("read_mean_us"),
        "get_p99": run.get("read_p99_us"),
        "put_mean": run.get("update_mean_us"),
        "put_p99": run.get("update_p99_us"),
        "kops": (run.get("ops_per_sec") or 0) / 1000,
        "model_fraction": run.get("model_path_fraction"),
        "reads": run.get("reads"),
        "updates": run.get("updates"),
        "ops": run.get("ops"),
    }


def models_run(x):
    """Models the run caused: learned during it plus its backlog."""
    return x["models_run"] + x["models_after"]


def models_total(x):
    """Models of the whole experiment: load and settling, run, backlog."""
    return x["models_before"] + models_run(x)


def fmt(v, digits=2):
    if v is None:
        return "–"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{digits}f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render(out, report):
    runs = load(out)
    if not runs:
        sys.exit(f"no study results (<workload>-<policy>.json) in {out}")
    workloads = [w for w in WORKLOAD_TITLES if any(k[0] == w for k in runs)]
    policies = [p for p in POLICIES if any(k[1] == p for k in runs)]
    policies += sorted({k[1] for k in runs} - set(policies), key=label_order)
    figures = {k: phases(v) for k, v in runs.items()}

    def cell(w, p, f):
        x = figures.get((w, p))
        return f(x) if x else "–"

    md = render_intro(out, runs)
    md += file_section(os.path.join(out, "findings.md"), ["## Findings", ""],
                       lambda f: [f.read().strip()])
    md += file_section(os.path.join(out, "machine.txt"), ["Machine and run:", ""],
                       lambda f: [f"- {line.strip()}" for line in f if line.strip()])
    md += render_models(workloads, policies, cell)
    md += render_latency(workloads, policies, cell)
    md += render_learning_time(workloads, policies, cell)
    md += render_target(figures, policies)
    plot = plot_figures(out, figures, workloads, policies)
    if plot:
        md += [f"![models and get latency]({os.path.relpath(plot, os.path.dirname(os.path.abspath(report)))})", ""]
    md += file_section(os.path.join(out, "commands.txt"),
                       ["## Commands", "", "Exactly as run, from the repository root:", "", "```sh"],
                       lambda f: [line.rstrip("\n") for line in f if line.strip()] + ["```"])
    os.makedirs(os.path.dirname(os.path.abspath(report)), exist_ok=True)
    with open(report, "w") as f:
        f.write("\n".join(md))


def file_section(path, head, lines):
    """`head`, then `lines(f)` of the open file `path`, then a blank line; nothing when there
    is no such file (the hand-written findings, the machine notes, the commands)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return head + lines(f) + [""]


def render_intro(out, runs):
    """The title, what the study is and its setup, from the records of any run."""
    any_run = next(iter(runs.values()))["run"]
    config = any_run.get("config") or {}
    hot_run = next((v["run"] for k, v in runs.items() if k[0] == "ycsb-b-hot"), {})
    hot_ops = 100 * (hot_run.get("hotspot_ops_fraction") or 0.9)
    hot_data = 100 * (hot_run.get("hotspot_data_fraction") or 0.01)
    md = ["# Lazy learning study (issue 10 item 5)", ""]
    md.append(
        "The Bourbon range-query follow-up's Tables 3–5 (`../shared/papers/"
        "bourbon-range-queries-lazy-learning.txt` §5.4) on Augur: YCSB B and its hot-spot "
        f"variant B′ (`ycsb-b-hot`: 95% reads, 5% updates, {hot_ops:g}% of the operations on "
        f"the first {hot_data:g}% of the records, zipfian "
        "within each part), one fresh database per workload and learning policy, loaded with "
        "`ycsb-load` and settled before the run. Produced by `scripts/lazy_study.sh` and "
        "`scripts/lazy_report.py`; every number comes from the JSON files in "
        f"`{out}`."
    )
    md.append("")
    md.append(
        f"Setup: {config.get('num')} records, {any_run.get('ops')} operations per run, "
        f"{config.get('value_size')}-byte values (value-separation threshold "
        f"{config.get('value_separation_threshold')}), memtable "
        f"{(config.get('memtable_size_bytes') or 0) / 2**20:.0f} MiB, tables "
        f"{(config.get('target_file_size_bytes') or 0) / 2**20:.0f} MiB, index "
        f"{config.get('index')} (δ = {config.get('error_bound')}), T_wait "
        f"{config.get('learning_wait_ms')} ms, lazy: a file of n keys is learned after "
        f"max(K, n × rate) lookups past its bloom filter, K = {config.get('lazy_learning_reads')}, "
        f"rate = {config.get('lazy_learning_reads_per_key')} (rows lazy-k*: rate 0, the given K), "
        f"keys `--insert-order={config.get('insert_order')}`"
        f", load order {config.get('load_order') or 'sequential'}."
    )
    md.append("")
    return md


def policy_table(workloads, policies, cell, columns):
    """A table with a row per policy and, for each workload `w`, the columns `columns(w)`:
    (header, f) pairs, f giving a cell's text from the figures of (w, policy)."""
    header = ["policy"]
    for w in workloads:
        header += [title for title, _ in columns(w)]
    rows = []
    for p in policies:
        row = [p]
        for w in workloads:
            row += [cell(w, p, f) for _, f in columns(w)]
        rows.append(row)
    return table(header, rows)


def render_models(workloads, policies, cell):
    """Table 3: models learned in the run, before it and in total, per policy and workload."""

    def columns(w):
        return [
            (
                f"{WORKLOAD_TITLES[w]}: run (+backlog)",
                lambda x: f"{x['models_run']}"
                + (f" (+{x['models_after']})" if x["models_after"] else "")
                + (f" (skipped {x['skipped_run']})" if x["skipped_run"] else ""),
            ),
            ("before run", lambda x: str(x["models_before"])),
            ("total", lambda x: str(models_total(x))),
            ("learned / live files", lambda x: f"{fmt(x['learned_end'])} / {fmt(x['files_end'])}"),
        ]

    return [
        "## Models learned (Table 3)",
        "",
        "Models learned during the run (+ the run's backlog, learned after it ended), before "
        "the run (load, settling, and `learn` for offline), and in total; then the live "
        "files with a model / live files at the end of the run. At-build counts every table "
        "written (each carries a model); the files cost-benefit decided to skip during the "
        "run are in parentheses.",
        "",
        policy_table(workloads, policies, cell, columns),
        "",
    ]


def render_latency(workloads, policies, cell):
    """Table 4: get and put latency, throughput and the model-path share."""

    def columns(w):
        t = WORKLOAD_TITLES[w]
        return [
            (f"{t}: get", lambda x: f"{fmt(x['get_mean'])} ({fmt(x['get_p99'])})"),
            (f"{t}: put", lambda x: f"{fmt(x['put_mean'])} ({fmt(x['put_p99'])})"),
            (f"{t}: kops/s", lambda x: fmt(x["kops"], 1)),
            (
                f"{t}: model path",
                lambda x: "–"
                if x["model_fraction"] is None
                else f"{100 * x['model_fraction']:.1f}%",
            ),
        ]

    return [
        "## Get and put latency (Table 4)",
        "",
        "Mean (p99) latency in µs of the run's reads (gets) and updates (puts), as measured "
        "by the harness per operation; throughput of the whole run in kops/s; share of the "
        "SSTable lookups served on the model path.",
        "",
        policy_table(workloads, policies, cell, columns),
        "",
    ]


def render_learning_time(workloads, policies, cell):
    """Table 5: seconds of training during the run (+ backlog) and before it."""

    def columns(w):
        return [
            (
                f"{WORKLOAD_TITLES[w]}: run (+backlog)",
                lambda x: fmt(x["learning_run"], 3)
                + (f" (+{fmt(x['learning_after'], 3)})" if x["models_after"] else ""),
            ),
            ("before run", lambda x: fmt(x["learning_before"], 3)),
        ]

    return [
        "## Learning time (Table 5)",
        "",
        "Seconds of training during the run (+ backlog) / before the run: background and "
        "offline training plus the training inside flushes and compactions (at-build).",
        "",
        policy_table(workloads, policies, cell, columns),
        "",
    ]


def render_target(figures, policies):
    """The issue's target: lazy learns fewer models than cost-benefit on B′ at a close get
    latency."""
    md = []
    md.append("## Target: lazy vs cost-benefit on B′")
    md.append("")
    md.append(
        "Issue 10: lazy learns fewer models than cost-benefit on B′ with a mean get latency "
        f"within {100 * (TARGET_GET_RATIO - 1):.0f}% of cost-benefit's. Models are counted "
        "for the run (run + backlog) and for the whole experiment (load and settling "
        "included, as the seed's Table 3 counts offline models)."
    )
    md.append("")
    hot = "ycsb-b-hot"
    cb = figures.get((hot, "cost-benefit"))
    lazies = [p for p in policies if p == "lazy" or p.startswith("lazy-k")]
    rows = []
    for p in lazies:
        lazy = figures.get((hot, p))
        if not (lazy and cb and lazy["get_mean"] and cb["get_mean"]):
            continue
        ratio = lazy["get_mean"] / cb["get_mean"]
        fewer_run = models_run(lazy) < models_run(cb)
        fewer_total = models_total(lazy) < models_total(cb)
        close = ratio <= TARGET_GET_RATIO
        rows.append(
            [
                p,
                f"{models_run(lazy)} vs {models_run(cb)}",
                f"{models_total(lazy)} vs {models_total(cb)}",
                f"{fmt(lazy['get_mean'])} vs {fmt(cb['get_mean'])} ({ratio:.3f})",
                ("met" if fewer_total and close else "not met")
                + f" (run: {'fewer' if fewer_run else 'not fewer'}, "
                + f"total: {'fewer' if fewer_total else 'not fewer'}, "
                + f"get {'within' if close else 'beyond'} {TARGET_GET_RATIO})",
            ]
        )
    if rows:
        header = [
            "lazy run",
            "models, run: lazy vs cost-benefit",
            "models, total",
            "get µs: lazy vs cost-benefit (ratio)",
            "target",
        ]
        md.append(table(header, rows))
    else:
        md.append("Not measured (needs ycsb-b-hot with lazy and cost-benefit).")
    md.append("")
    md.append(
        "One run per cell: on a shared or busy machine the latency of a single run varies "
        "by more than 5%, so compare repeated runs before concluding on latency."
    )
    md.append("")
    return md


def plot_figures(out, figures, workloads, policies):
    """Bar charts of models learned and mean get latency; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(workloads))
    for i, w in enumerate(workloads):
        xs = [j + i * width for j in range(len(policies))]
        models = [models_run(figures[(w, p)]) if (w, p) in figures else 0 for p in policies]
        gets = [(figures.get((w, p)) or {}).get("get_mean") or 0 for p in policies]
        axes[0].bar(xs, models, width, label=WORKLOAD_TITLES[w])
        axes[1].bar(xs, gets, width, label=WORKLOAD_TITLES[w])
    for ax, title in zip(axes, ["models learned in the run (+backlog)", "mean get latency (µs)"]):
        ax.set_xticks([j + width * (len(workloads) - 1) / 2 for j in range(len(policies))])
        ax.set_xticklabels(policies, rotation=30)
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    path = os.path.join(out, "lazy-learning.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/benchmarks/lazy")
    ap.add_argument("--report", default="docs/benchmarks/lazy-learning.md")
    a = ap.parse_args()
    render(a.out, a.report)


if __name__ == "__main__":
    main()
