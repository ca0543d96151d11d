#!/usr/bin/env python3
"""Hashes in augur-server (issue 43, item 3): what they cost the string path, and HSET/HGET
against redis-server. Same run, loopback, alternating which server goes first each round.

  scripts/hash_bench.py --base BIN --new BIN [--rounds 3] [--requests 200000]
                        [--phases instructions,strings,hashes]

  0. instructions: each binary under valgrind's callgrind, on a fresh database, counts the
     instructions the server executes (all its threads) during `redis-benchmark -t set`, then
     `-t get`, then (--new) `-t hset` and the HGET line, each `-n N/4 -c 1 -P 16 -r 1000000`:
     instructions per request, which the machine's load does not change.
  1. strings: `redis-benchmark -t get,set -n N -P 16 -r 1000000` against augur-server built
     before hashes (--base) and with them (--new), each on a fresh database; new/base.
  2. hashes: `redis-benchmark -t hset -n N -P 16 -r 1000000` (HSET myhash
     element:__rand_int__ …: one hash of up to 1M fields) and the custom line
     `HGET myhash element:__rand_int__`, against redis-server 7.0 (appendonly yes,
     appendfsync everysec, no RDB) and --new (--sync everysec); augur/redis. Then the same at
     -P 1 with N/4 requests.

Prints a Markdown table per phase: throughput, latency, and the server's CPU time per request
(user + system, from /proc: steadier than throughput on a shared machine). Needs redis-server and redis-benchmark. BENCH_DIR
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
    PIDS[port] = proc.pid
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
    PIDS[port] = proc.pid
    wait_pong(port)
    return proc


PIDS = {}


def cpu_seconds(port):
    """User + system CPU time the server on `port` has used (from /proc)."""
    fields = open(f"/proc/{PIDS[port]}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(port, args):
    """redis-benchmark's CSV rows: {test: (rps, p50, p99, server CPU µs per request)}; one
    test per run (a run of several tests is split), so the CPU time is the test's own."""
    tests = args[args.index("-t") + 1].split(",") if "-t" in args else [None]
    rows = {}
    for test in tests:
        run_args = list(args)
        if test is not None:
            run_args[args.index("-t") + 1] = test
        requests = int(run_args[run_args.index("-n") + 1])
        before = cpu_seconds(port)
        out = subprocess.run(
            ["redis-benchmark", "-p", str(port), "-c", "50", "--csv", *run_args],
            capture_output=True, text=True, check=True,
        ).stdout
        cpu_us = (cpu_seconds(port) - before) * 1e6 / requests
        for row in csv.DictReader(io.StringIO(out)):
            rows[row["test"]] = (float(row["rps"]), row["p50_latency_ms"],
                                 row["p99_latency_ms"], cpu_us)
    return rows


def instructions(binary, directory, tests, requests):
    """Instructions per request of `binary` for each test (redis-benchmark args), counted by
    callgrind between a zero and a dump of its counters."""
    out_dir = f"{directory}-callgrind"
    os.makedirs(out_dir)
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir}/cg.out",
         binary, "--db", directory, "--port", str(NEW_PORT)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    per_request = {}
    try:
        wait_pong(NEW_PORT, limit=300)
        for name, args in tests:
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                           capture_output=True)
            # One client: every read of the server holds the same 16 commands, so the count
            # does not depend on how the load batched them.
            subprocess.run(["redis-benchmark", "-p", str(NEW_PORT), "-c", "1", "-q",
                            "-n", str(requests), *args], check=True, capture_output=True)
            before = set(os.listdir(out_dir))
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                           capture_output=True)
            dumped = sorted(set(os.listdir(out_dir)) - before)
            text = open(os.path.join(out_dir, dumped[-1])).read()
            total = int(text.split("\nsummary: ", 1)[1].split()[0])
            per_request[name] = total / requests
    finally:
        proc.terminate()
        proc.wait()
    return per_request


def table(title, left, right, runs):
    print(f"\n### {title}\n")
    print(f"| round | test | {left} rps | p50 / p99 ms | CPU µs/req | {right} rps | p50 / p99 ms "
          f"| CPU µs/req | rps {left}/{right} | CPU {left}/{right} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, cpu = {}, {}
    for rnd, test, a, b in runs:
        ratio = a[0] / b[0]
        ratios.setdefault(test, []).append(ratio)
        cpu.setdefault(test, []).append(a[3] / b[3])
        print(f"| {rnd} | {test} | {a[0]:,.0f} | {a[1]} / {a[2]} | {a[3]:.2f} | {b[0]:,.0f} "
              f"| {b[1]} / {b[2]} | {b[3]:.2f} | {ratio:.3f} | {a[3] / b[3]:.3f} |")
    print()
    for test, rs in ratios.items():
        rs, cs = sorted(rs), sorted(cpu[test])
        print(f"- {test}: throughput {left}/{right} median {rs[len(rs) // 2]:.3f} "
              f"(rounds {', '.join(f'{r:.3f}' for r in rs)}); server CPU per request "
              f"{left}/{right} median {cs[len(cs) // 2]:.3f} (rounds {', '.join(f'{c:.3f}' for c in cs)})")


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
    p.add_argument("--phases", default="strings,hashes")
    a = p.parse_args()
    phases = a.phases.split(",")
    root = os.environ.get("BENCH_DIR", "/tmp/augur-hash-bench")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    n = str(a.requests)
    quarter = str(a.requests // 4)
    print(f"load at start: {os.getloadavg()}")

    if "instructions" in phases:
        print("\n### Instructions per request (callgrind; every server thread)\n")
        print("| round | test | new | base | new/base |")
        print("|---|---|---|---|---|")
        small = a.requests // 4
        strings = [("SET", ["-t", "set", "-P", "16", "-r", "1000000"]),
                   ("GET", ["-t", "get", "-P", "16", "-r", "1000000"])]
        hashes = [("HSET", ["-t", "hset", "-P", "16", "-r", "1000000"]),
                  ("HGET", ["-P", "16", "-r", "1000000", "HGET", "myhash",
                            "element:__rand_int__"])]
        for rnd in range(a.rounds):
            new = instructions(a.new, f"{root}/cg-new-{rnd}", strings + hashes, small)
            base = instructions(a.base, f"{root}/cg-base-{rnd}", strings, small)
            for test in ["SET", "GET"]:
                print(f"| {rnd} | {test} | {new[test]:,.0f} | {base[test]:,.0f} "
                      f"| {new[test] / base[test]:.4f} |")
            for test in ["HSET", "HGET"]:
                print(f"| {rnd} | {test} | {new[test]:,.0f} | — | — |")
    procs = []
    if "strings" in phases:
        procs = [start_augur(a.base, BASE_PORT, f"{root}/base"), start_augur(a.new, NEW_PORT, f"{root}/new")]
    try:
        if procs:
            runs = alternate(a.rounds, [("new", NEW_PORT), ("base", BASE_PORT)],
                             [["-t", "get,set", "-n", n, "-P", "16", "-r", "1000000"]])
            table("Strings: before and after hashes (-P 16)", "new", "base", runs)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()

    if "hashes" not in phases:
        return
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
