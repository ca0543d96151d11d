#!/usr/bin/env python3
"""Hashes in augur-server (issue 43, item 3): what they cost the string path, and HSET/HGET
against redis-server. Same run, loopback, alternating which server goes first each round.

  scripts/hash_bench.py --base BIN --new BIN [--rounds 3] [--requests 200000]

  1. strings: `redis-benchmark -t get,set -n N -P 16 -r 1000000` against augur-server built
     before hashes (--base) and with them (--new), each on a fresh database; new/base.
  2. hashes: `redis-benchmark -t hset -n N -P 16 -r 1000000` (HSET myhash
     element:__rand_int__ …: one hash of up to 1M fields) and the custom line
     `HGET myhash element:__rand_int__`, against redis-server 7.0 (appendonly yes,
     appendfsync everysec, no RDB) and --new (--sync everysec); augur/redis. Then the same at
     -P 1 with N/4 requests.

Prints a Markdown table per phase. Needs redis-server and redis-benchmark. BENCH_DIR
(default /tmp/augur-hash-bench) is wiped at start.
"""
import argparse
import csv
import io
import os
import shutil
import socket
import subprocess
import time

BASE_PORT, NEW_PORT, REDIS_PORT = 6511, 6512, 6513


def wait_pong(port, limit=60):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"nothing answers on port {port}")


def start_augur(binary, port, directory):
    proc = subprocess.Popen(
        [binary, "--db", directory, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_pong(port)
    return proc


def start_redis(port, directory):
    os.makedirs(directory, exist_ok=True)
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "yes",
         "--appendfsync", "everysec", "--dir", directory],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_pong(port)
    return proc


def bench(port, args):
    """redis-benchmark's CSV rows: {test: (rps, p50, p99)}."""
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", "50", "--csv", *args],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = {}
    for row in csv.DictReader(io.StringIO(out)):
        rows[row["test"]] = (float(row["rps"]), row["p50_latency_ms"], row["p99_latency_ms"])
    return rows


def table(title, left, right, runs):
    print(f"\n### {title}\n")
    print(f"| round | test | {left} rps | p50 / p99 ms | {right} rps | p50 / p99 ms | {left}/{right} |")
    print("|---|---|---|---|---|---|---|")
    ratios = {}
    for rnd, test, a, b in runs:
        ratio = a[0] / b[0]
        ratios.setdefault(test, []).append(ratio)
        print(f"| {rnd} | {test} | {a[0]:,.0f} | {a[1]} / {a[2]} | {b[0]:,.0f} | {b[1]} / {b[2]} | {ratio:.3f} |")
    print()
    for test, rs in ratios.items():
        rs = sorted(rs)
        print(f"- {test}: {left}/{right} median {rs[len(rs) // 2]:.3f} (rounds {', '.join(f'{r:.3f}' for r in rs)})")


def alternate(rounds, servers, args_list):
    """For each round, each args: run on both servers, the first alternating."""
    runs = []
    for rnd in range(rounds):
        for args in args_list:
            order = servers if rnd % 2 == 0 else servers[::-1]
            got = {}
            for name, port in order:
                got[name] = bench(port, args)
            for test in got[servers[0][0]]:
                runs.append((rnd, test, got[servers[0][0]][test], got[servers[1][0]][test]))
    return runs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=200000)
    a = p.parse_args()
    root = os.environ.get("BENCH_DIR", "/tmp/augur-hash-bench")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    n = str(a.requests)
    quarter = str(a.requests // 4)
    print(f"load at start: {os.getloadavg()}")

    procs = [start_augur(a.base, BASE_PORT, f"{root}/base"), start_augur(a.new, NEW_PORT, f"{root}/new")]
    try:
        runs = alternate(a.rounds, [("new", NEW_PORT), ("base", BASE_PORT)],
                         [["-t", "get,set", "-n", n, "-P", "16", "-r", "1000000"]])
        table("Strings: before and after hashes (-P 16)", "new", "base", runs)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()

    procs = [start_augur(a.new, NEW_PORT, f"{root}/hashes"), start_redis(REDIS_PORT, f"{root}/redis")]
    try:
        hget = ["HGET", "myhash", "element:__rand_int__"]
        for pipeline, count in [("16", n), ("1", quarter)]:
            common = ["-n", count, "-P", pipeline, "-r", "1000000"]
            runs = alternate(a.rounds, [("augur", NEW_PORT), ("redis", REDIS_PORT)],
                             [["-t", "hset", *common], [*common, *hget]])
            table(f"Hashes against redis-server (-P {pipeline})", "augur", "redis", runs)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
    print(f"\nload at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
