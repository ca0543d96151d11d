#!/usr/bin/env python3
"""Scans over two or more existing databases in alternating rounds (issue 28's 1 KiB
separated scans against LevelDB): on a shared, noisy machine one run per engine drifts by
±30%, so each round runs every engine once, back to back, and the report takes medians.

  scripts/scan_rounds.py --augur <build with the peers> --rounds 5 \\
      --engine 'Augur leveled=--db=/var/tmp/augur-prof --value-separation-threshold=1024' \\
      --engine 'LevelDB=--db=/var/tmp/leveldb-prof --engine=leveldb' \\
      [--num 2000000 --value-size 1024 --seeks 50000] [--out docs/benchmarks/scan-rounds.json]

Each process runs its benchmark twice (`readseq,readseq`, `seekrandom,seekrandom`): the
first pass is a fresh process's (mappings faulted in, Augur's value checksums verified once
per mapping), the second a warm one. The databases must exist and be settled; nothing is
written to them.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench_common import fmt, log, machine, run_bench, table  # noqa: E402
from json_tools import save_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANS = (("readseq", "readseq", []), ("seek+10", "seekrandom", ["--seek_nexts=10"]),
         ("seek+100", "seekrandom", ["--seek_nexts=100"]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--augur", default=os.path.join(ROOT, "target", "release", "augur"))
    p.add_argument("--engine", action="append", required=True, help="NAME=ARGS (space-separated)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--num", type=int, default=2_000_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--seeks", type=int, default=50_000)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "scan-rounds.json"))
    a = p.parse_args()
    engines = [e.split("=", 1) for e in a.engine]
    runs = {name: {scan: {"first": [], "warm": []} for scan, _, _ in SCANS} for name, _ in engines}
    commands = []
    raw = os.path.splitext(a.out)[0] + "-raw.jsonl"
    for r in range(a.rounds):
        for scan, bench, extra in SCANS:
            for name, args in engines:
                argv = args.split() + [f"--num={a.num}", "--key_size=16", f"--value_size={a.value_size}",
                                       "--use_existing_db", f"--benchmarks={bench},{bench}"] + extra
                if bench == "seekrandom":
                    argv.append(f"--reads={a.seeks}")
                recs = [x for x in run_bench(a.augur, argv, raw_path=raw, tag=f"{name} {scan} round {r}",
                                             timeout=600, commands=commands if r == 0 else None)
                        if x.get("benchmark") == bench]
                runs[name][scan]["first"].append(recs[0]["micros_per_op"])
                runs[name][scan]["warm"].append(recs[-1]["micros_per_op"])
    med = {n: {s: {k: statistics.median(v) for k, v in d.items()} for s, d in runs[n].items()}
           for n in runs}
    base = engines[-1][0]
    body = [[n] + [f"{fmt(med[n][s][k])} ({med[base][s][k] / med[n][s][k]:.2f}×)"
                   for s, _, _ in SCANS for k in ("first", "warm")] for n, _ in engines]
    print("\n".join(table(["engine"] + [f"{s} {k} µs" for s, _, _ in SCANS for k in ("first", "warm")],
                          body)))
    print(f"(median of {a.rounds} rounds; in parentheses: speed ÷ {base})")
    save_json(os.path.dirname(a.out), os.path.basename(a.out),
              {"machine": machine(ROOT, []), "rounds": a.rounds, "runs": runs, "medians": med,
               "commands": commands})
    log("done: " + a.out)


if __name__ == "__main__":
    main()
