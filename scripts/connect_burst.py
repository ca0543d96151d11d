#!/usr/bin/env python3
"""Sequential short connections against augur-server and redis-server, timed (issue 43).

  scripts/connect_burst.py AUGUR_BINARY [--connects 3000] [--rounds 3] [--idle 10000]
                           [--redis redis-server]

Starts augur-server (a fresh database, a free loopback port) and redis-server (no
persistence, a free port), then, alternating between them for --rounds rounds, times two
kinds of burst of --connects connections opened one after another:
- held: each connection stays open and sends nothing (a pool filling up). The server must
  accept them as fast as they come: past its listen backlog the kernel drops the
  handshakes, and each dropped one costs the client a SYN retransmission (1 s). This is
  issue 43's case: 14-20 s against Redis's 1.2 s with a backlog of 128.
- short: each connection sends PING, reads +PONG and closes (a client that connects per
  request).
Prints each round's seconds and the ratio of the medians (augur / redis) for each kind. Then, with --idle N, opens N connections to each server that
each send one PING and stay open, and prints each server's RSS before, with them open, and
2 s after they closed (the open-file limit must allow N sockets in this process and in each
server).
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_augur(binary, tmp):
    p = subprocess.Popen([binary, "--db", os.path.join(tmp, "db"), "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"ready on (\S+):(\d+)", p.stdout.readline())
    assert m, "augur-server did not start"
    return p, int(m.group(2))


def start_redis(binary, tmp):
    port = free_port()
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", tmp],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return p, port
        except OSError:
            time.sleep(0.02)
    raise SystemExit("redis-server did not start")


def held(port, n):
    t = time.perf_counter()
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    secs = time.perf_counter() - t
    for s in conns:
        s.close()
    time.sleep(1)  # let the server see them go
    return secs


def short(port, n):
    t = time.perf_counter()
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        got = b""
        while not got.endswith(b"\r\n"):
            chunk = s.recv(64)
            if not chunk:
                raise SystemExit("connection closed before the reply")
            got += chunk
        assert got == b"+PONG\r\n", got
        s.close()
    return time.perf_counter() - t


def idle_connections(name, pid, port, n):
    before = rss_mib(pid)
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        assert s.recv(64) == b"+PONG\r\n"
        conns.append(s)
    held = rss_mib(pid)
    for s in conns:
        s.close()
    time.sleep(2)
    after = rss_mib(pid)
    print(f"{name}: RSS {before:.1f} MiB, {held:.1f} MiB with {n} idle connections, "
          f"{after:.1f} MiB 2 s after they closed")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("augur")
    ap.add_argument("--connects", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=int, default=0)
    ap.add_argument("--redis", default=shutil.which("redis-server") or "redis-server")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    augur, augur_port = start_augur(args.augur, tmp)
    redis, redis_port = start_redis(args.redis, tmp)
    try:
        for kind, burst in (("held", held), ("short", short)):
            times = {"augur": [], "redis": []}
            for r in range(args.rounds):
                for name, port in (("augur", augur_port), ("redis", redis_port)):
                    secs = burst(port, args.connects)
                    times[name].append(secs)
                    print(f"{kind} round {r + 1}: {name} {args.connects} connects in {secs:.3f} s")
            a, b = statistics.median(times["augur"]), statistics.median(times["redis"])
            print(f"{kind} median: augur {a:.3f} s, redis {b:.3f} s, ratio {a / b:.2f}")
        print(f"RSS: augur {rss_mib(augur.pid):.1f} MiB, redis {rss_mib(redis.pid):.1f} MiB")
        if args.idle:
            for name, p, port in (("augur", augur, augur_port), ("redis", redis, redis_port)):
                idle_connections(name, p.pid, port, args.idle)
    finally:
        for p in (augur, redis):
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
