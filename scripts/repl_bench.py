#!/usr/bin/env python3
"""Replication measurements for docs/benchmarks/replication.md (issue 44 item 2).

1. SET throughput of a primary alone against a primary with two replicas (redis-benchmark
   -t set -P 16), alternating rounds on fresh databases, with the replicas' lag sampled
   every 100 ms during the run (primary offset minus each replica's applied offset) and the
   time they take to catch up once the load stops.
2. A full sync of KEYS distinct keys: bytes sent against the checkpoint's files and the
   primary's directory, and the time from the replica's start to its link being up.

Run as root under a real-time class on a shared machine:
    chrt -f 50 python3 scripts/repl_bench.py
Environment: BIN (augur-server), N (requests per run, 1000000), KEYS (1000000), ROUNDS (2),
SYNC (1: also measure the full sync; 0 skips it).

PIN=1 stands in for replicas on machines of their own: the primary and redis-benchmark run
on CPU 0 (`taskset -c 0`), in the alone runs as in the replicated ones, and the two
replicas on CPU 1, so the ratio measures what feeding two replicas costs the primary rather
than the replicas' own apply work taking the primary's cores. (Do not combine it with
`chrt -f`: two FIFO tasks on one CPU take turns only when one blocks.) Each run also
reports the CPU seconds (utime + stime) every server spent during the load.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

BIN = os.environ.get("BIN", "target/release/augur-server")
N = int(os.environ.get("N", "1000000"))
KEYS = int(os.environ.get("KEYS", "1000000"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
SYNC = os.environ.get("SYNC", "1") != "0"
PIN = os.environ.get("PIN", "0") == "1"
# CPU lists for `taskset -c` under PIN: the primary and the client; the replicas.
PRIMARY_CPUS, REPLICA_CPUS = "0", "1"
ROOT = tempfile.mkdtemp(prefix="repl-bench-")
procs = []


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True).stdout


def info(port):
    out = {}
    for line in cli(port, "info", "replication").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def pinned(cmd, cpus):
    return ["taskset", "-c", cpus, *cmd] if PIN else cmd


def cpu_seconds(p):
    """utime + stime of process `p` so far, in seconds."""
    fields = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(name, port, *args, cpus=PRIMARY_CPUS):
    db = os.path.join(ROOT, name)
    log = open(db + ".log", "w")
    p = subprocess.Popen(pinned([BIN, "--db", db, "--port", str(port), *args], cpus),
                         stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    while cli(port, "ping").strip() != "PONG":
        time.sleep(0.05)
    return p, db


def stop(p, port):
    cli(port, "shutdown", "nosave")
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


def wait_up(port):
    while info(port).get("master_link_status") != "up":
        time.sleep(0.02)


def bench(port):
    cmd = ["redis-benchmark", "-p", str(port), "-t", "set", "-P", "16", "-n", str(N), "-r",
           str(KEYS), "-d", "64", "-c", "50", "-q"]
    out = subprocess.run(pinned(cmd, PRIMARY_CPUS), capture_output=True, text=True).stdout
    m = re.findall(r"([0-9.]+) requests per second", out)
    return float(m[-1])


def run_alone(r):
    p, _ = start(f"alone{r}", 7301)
    cpu = cpu_seconds(p)
    rps = bench(7301)
    cpu = cpu_seconds(p) - cpu
    stop(p, 7301)
    return rps, cpu


def run_replicated(r):
    p, _ = start(f"prim{r}", 7311)
    reps = [start(f"rep{r}-{i}", 7312 + i, "--replicaof", "127.0.0.1", "7311",
                  cpus=REPLICA_CPUS) for i in range(2)]
    for i in range(2):
        wait_up(7312 + i)
    import threading
    lags, done = [], threading.Event()

    def sample():
        while not done.is_set():
            primary = int(info(7311).get("master_repl_offset", 0))
            lag = max(primary - int(info(7312 + i).get("slave_repl_offset", 0)) for i in range(2))
            lags.append(lag)
            time.sleep(0.1)

    t = threading.Thread(target=sample)
    cpu = [cpu_seconds(x) for x in [p] + [rp for rp, _ in reps]]
    t.start()
    rps = bench(7311)
    ended = time.time()
    done.set()
    t.join()
    target = int(info(7311)["master_repl_offset"])
    while any(int(info(7312 + i).get("slave_repl_offset", 0)) < target for i in range(2)):
        time.sleep(0.01)
    catch_up = time.time() - ended
    cpu = [cpu_seconds(x) - c for x, c in zip([p] + [rp for rp, _ in reps], cpu)]
    for i, (rp, _) in enumerate(reps):
        stop(rp, 7312 + i)
    stop(p, 7311)
    return (rps, max(lags or [0]), sorted(lags)[len(lags) // 2] if lags else 0, catch_up,
            target, cpu)


def full_sync():
    p, db = start("big", 7321)
    # KEYS distinct keys of 64-byte values, through redis-cli --pipe.
    payload = bytearray()
    value = b"v" * 64
    for i in range(KEYS):
        k = b"key:%012d" % i
        payload += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n" % (len(k), k, value)
    subprocess.run(["redis-cli", "-p", "7321", "--pipe"], input=bytes(payload),
                   capture_output=True)
    cli(7321, "save")
    du = int(subprocess.run(["du", "-sb", db], capture_output=True, text=True).stdout.split()[0])
    t0 = time.time()
    rp, rdb = start("big-replica", 7322, "--replicaof", "127.0.0.1", "7321")
    wait_up(7322)
    took = time.time() - t0
    log = open(db + ".log").read()
    m = re.search(r"full sync of (\d+) files, (\d+) bytes", log)
    files, sent = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    rlog = open(rdb + ".log").read()
    m = re.search(r"full sync done: \d+ files, \d+ bytes in ([0-9.]+) s", rlog)
    transfer = float(m.group(1)) if m else 0.0
    keys = cli(7322, "dbsize").strip()
    stop(rp, 7322)
    stop(p, 7321)
    return du, files, sent, took, transfer, keys


try:
    alone, repl = [], []
    for r in range(ROUNDS):
        alone.append(run_alone(r))
        repl.append(run_replicated(r))
        cpu = repl[-1][5]
        print(f"round {r}: alone {alone[-1][0]:.0f} req/s, 2 replicas {repl[-1][0]:.0f} req/s "
              f"(ratio {repl[-1][0] / alone[-1][0]:.2f}), lag max {repl[-1][1]} B median "
              f"{repl[-1][2]} B, catch-up {repl[-1][3]:.2f} s, stream {repl[-1][4]} B; "
              f"CPU s alone {alone[-1][1]:.2f}, primary {cpu[0]:.2f}, replicas "
              f"{cpu[1]:.2f} + {cpu[2]:.2f} (to the end of the catch-up)", flush=True)
    ratio = sum(x[0] for x in repl) / sum(x[0] for x in alone)
    print(f"total{' (PIN=1)' if PIN else ''}: alone {sum(x[0] for x in alone) / ROUNDS:.0f} "
          f"req/s, replicated {sum(x[0] for x in repl) / ROUNDS:.0f} req/s, ratio {ratio:.2f}")
    if not SYNC:
        raise SystemExit(0)
    du, files, sent, took, transfer, keys = full_sync()
    print(f"full sync of {KEYS} keys: primary dir {du} B, checkpoint {files} files {sent} B "
          f"({sent / max(du, 1):.2f} of the dir), replica start to link up {took:.2f} s "
          f"(transfer + swap {transfer:.2f} s), replica dbsize {keys}")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    shutil.rmtree(ROOT, ignore_errors=True)
