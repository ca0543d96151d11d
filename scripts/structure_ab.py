#!/usr/bin/env python3
"""Same-run A/B of two `augur` binaries on the db_bench workloads (issue 24's check that the
structural step cost no speed).

  scripts/structure_ab.py BASE_BIN NEW_BIN [--num N] [--rounds R] [--out FILE.json]

Each round runs, for each binary (alternating which goes first), on a fresh database:
  augur bench --db DIR --num N --benchmarks fillrandom,flush,waitforcompaction,readrandom,seekrandom
              --seek_nexts 100 --json FILE
and the script prints micros/op per benchmark and binary and the median NEW/BASE ratio of
micros/op over the rounds (below 1: NEW is faster).

--realtime runs each bench under `chrt -f 50` (SCHED_FIFO; needs root or CAP_SYS_NICE): on a
machine busy with other work (compiles, other benchmarks) the bench's threads then run
whenever they are ready, which cuts the round-to-round spread from ~10% to ~2-3% here
(session 31). It does not make a busy machine quiet: caches and memory bandwidth are shared.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

BENCHMARKS = "fillrandom,flush,waitforcompaction,readrandom,seekrandom"
REPORTED = ("fillrandom", "readrandom", "seekrandom")


def run(binary, num, workdir, benchmarks=BENCHMARKS, realtime=False):
    db = os.path.join(workdir, "db")
    out = os.path.join(workdir, "result.json")
    shutil.rmtree(db, ignore_errors=True)
    prefix = ["chrt", "-f", "50"] if realtime else []
    subprocess.run(prefix + [binary, "bench", "--db", db, "--num", str(num), "--benchmarks", benchmarks,
                    "--seek_nexts", "100", "--json", out],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        records = json.load(f)
    shutil.rmtree(db, ignore_errors=True)
    return {r["benchmark"]: r["micros_per_op"] for r in records if r["benchmark"] in REPORTED}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--num", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("--benchmarks", default=BENCHMARKS,
                   help="the bench list (default: %(default)s)")
    p.add_argument("--realtime", action="store_true",
                   help="run each bench under chrt -f 50 (SCHED_FIFO) on a busy machine")
    a = p.parse_args()
    results = {"base": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="structure-ab-") as work:
        for rnd in range(a.rounds):
            order = [("base", a.base), ("new", a.new)]
            if rnd % 2:
                order.reverse()
            for name, binary in order:
                r = run(binary, a.num, work, a.benchmarks, a.realtime)
                results[name].append(r)
                print(f"round {rnd} {name:<4} " + "  ".join(
                    f"{b} {r[b]:.3f} us/op" for b in REPORTED if b in r), flush=True)
    ratios = {}
    for b in [b for b in REPORTED if b in results["base"][0]]:
        per_round = [n[b] / o[b] for o, n in zip(results["base"], results["new"])]
        ratios[b] = statistics.median(per_round)
        print(f"{b}: new/base micros/op median {ratios[b]:.3f} "
              f"(rounds: {', '.join(f'{x:.3f}' for x in per_round)})")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"num": a.num, "rounds": a.rounds, "realtime": a.realtime, "base": a.base, "new": a.new,
                       "results": results, "median_ratio": ratios}, f, indent=1)


if __name__ == "__main__":
    main()
