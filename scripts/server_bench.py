#!/usr/bin/env python3
"""augur-server against Debian's redis-server 7.0, same run, loopback (issue 25).

  scripts/server_bench.py [--requests N] [--rounds R] [--keys K] [--out FILE.json]
                         [--phases LIST] [--loaded-tests get,set,incr,hset,hget] [--realtime]
                         [--port 6390 (augur-server's; redis-server's is the next one)]

Phases, each against both servers, alternating which goes first:
  1. redis-benchmark -t set,get,incr,mset -n N -r 10000000 -c 50 -P 16, then -P 1
     (augur-server --sync everysec; redis-server appendonly yes, appendfsync everysec, no
     RDB snapshots), R rounds;
  2. K keys (default 10M) of 100-byte values loaded through `redis-cli --pipe` (the keys
     redis-benchmark's -r draws: key:%012d, written in a scrambled order), each server's
     RSS (anonymous and file-backed pages separately: augur maps its tables), then
     the --loaded-tests (default get,set; incr, hset and hget too for issue 43's targets)
     with -P 16 and -P 1 over the loaded keys;
  3. restart: SHUTDOWN (augur: SAVE, its memtable flushed; redis: NOSAVE, the AOF kept) and
     the time from exec until the server answers PING with PONG (redis answers -LOADING
     while it replays its AOF);
  4. twemproxy: 3 augur-server shards behind nutcracker (scripts/cluster.sh) against one
     augur-server directly, -t set,get -P 16.

Prints one line per measurement and writes every figure to --out (JSON). Needs
redis-server, redis-tools and, for the proxy phase, nutcracker (apt-get install redis-server
redis-tools nutcracker). Environment: AUGUR_SERVER (default target/release/augur-server, built when
missing), BENCH_DIR (default /tmp/augur-server-bench; wiped at start).
"""
import argparse
import csv
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUGUR_PORT = 6390
REDIS_PORT = 6391
VALUE_BYTES = 100


def log(*args):
    print(*args, flush=True)


def ping(port):
    """The server's reply to PING, or None when nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(256)
    except OSError:
        return None


def wait_pong(port, proc=None, limit=3600):
    """Seconds until the server on `port` answers PONG."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"the server on port {port} exited with {proc.returncode}")
        if ping(port) == b"+PONG\r\n":
            return time.monotonic() - start
        time.sleep(0.01)
    raise SystemExit(f"no PONG from port {port} after {limit} s")


def rss_kib(pid):
    """(anonymous, file-backed) resident KiB of a process."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    kib = lambda name: int(fields.get(name, "0 kB").split()[0])  # noqa: E731
    return kib("RssAnon"), kib("RssFile") + kib("RssShmem")


class Server:
    """One server process of a kind ('augur' or 'redis') over its own directory."""

    def __init__(self, kind, base, server_bin):
        self.kind = kind
        self.port = AUGUR_PORT if kind == "augur" else REDIS_PORT
        self.dir = os.path.join(base, kind)
        self.server_bin = server_bin
        self.proc = None

    def command(self):
        if self.kind == "augur":
            return [self.server_bin, "--db", self.dir, "--port", str(self.port),
                    "--sync", "everysec"]
        return ["redis-server", "--port", str(self.port), "--dir", self.dir,
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                "--daemonize", "no", "--logfile", os.path.join(self.dir, "redis.log")]

    def start(self):
        """Starts the server; returns seconds until it answered PONG."""
        if ping(self.port) is not None:  # else the PONG would come from another process
            raise SystemExit(f"port {self.port} already answers: another server runs there")
        os.makedirs(self.dir, exist_ok=True)
        logf = open(os.path.join(os.path.dirname(self.dir), f"{self.kind}.out"), "ab")
        start = time.monotonic()
        self.proc = subprocess.Popen(RUN_PREFIX + self.command(), stdout=logf, stderr=logf)
        waited = wait_pong(self.port, self.proc)
        return max(waited, time.monotonic() - start)

    def stop(self):
        """SHUTDOWN (augur: SAVE; redis: NOSAVE, the AOF kept) and wait for the exit."""
        how = "SAVE" if self.kind == "augur" else "NOSAVE"
        subprocess.run(["redis-cli", "-p", str(self.port), "SHUTDOWN", how],
                       capture_output=True, check=False)
        try:
            self.proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def rss(self):
        return rss_kib(self.proc.pid)


# Set by --realtime: every server, load and benchmark process runs under `chrt -f 50`
# (SCHED_FIFO; root or CAP_SYS_NICE), which steadies ratios on a machine busy with other work.
RUN_PREFIX = []

# Tests redis-benchmark has no -t name for, run as custom commands: name -> arguments.
CUSTOM_TESTS = {"HGET": ["HGET", "myhash", "element:__rand_int__"]}


def redis_benchmark(port, tests, requests, pipeline, keyspace=10_000_000):
    """redis-benchmark's CSV rows: {test: {rps, avg, p50, p99, ...}}.

    `tests` is a comma-separated list of -t names and CUSTOM_TESTS names (upper case)."""
    names = tests.split(",")
    builtin = [t for t in names if t.upper() not in CUSTOM_TESTS]
    runs = [["-t", ",".join(builtin)]] if builtin else []
    runs += [CUSTOM_TESTS[t.upper()] for t in names if t.upper() in CUSTOM_TESTS]
    out = ""
    for run in runs:
        cmd = RUN_PREFIX + [
            "redis-benchmark", "-p", str(port), "-n", str(requests), "-r", str(keyspace),
            "-c", "50", "-P", str(pipeline), "-d", str(VALUE_BYTES), "--csv",
            "--precision", "3"] + run
        text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        out += text if not out else text.split("\n", 1)[1]
    rows = {}
    for row in csv.DictReader(io.StringIO(out)):
        name = row["test"].split(" ")[0].upper()
        rows[name] = {
            "rps": float(row["rps"]),
            "avg_ms": float(row["avg_latency_ms"]),
            "p50_ms": float(row["p50_latency_ms"]),
            "p99_ms": float(row["p99_latency_ms"]),
        }
    return rows


def key_order(n):
    """0..n-1 in a scrambled order (a multiplicative permutation: keys arrive unsorted)."""
    step = 7_919
    while n % step == 0 or any(n % p == 0 and step % p == 0 for p in (2, 5)):
        step += 2
    return ((i * step + 12_345) % n for i in range(n))


def load(port, n):
    """Writes n keys key:%012d with 100-byte values through redis-cli --pipe."""
    proc = subprocess.Popen(RUN_PREFIX + ["redis-cli", "-p", str(port), "--pipe"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)
    pad = b"v" * VALUE_BYTES
    chunk = []
    for i in key_order(n):
        key = b"key:%012d" % i
        value = (b"%d:" % i + pad)[:VALUE_BYTES]
        chunk.append(b"*3\r\n$3\r\nSET\r\n$16\r\n%s\r\n$%d\r\n%s\r\n" % (key, len(value), value))
        if len(chunk) == 10_000:
            proc.stdin.write(b"".join(chunk))
            chunk.clear()
    proc.stdin.write(b"".join(chunk))
    proc.stdin.close()
    out = proc.stdout.read().decode(errors="replace")
    if proc.wait() != 0 or "errors: 0," not in out:
        raise SystemExit(f"loading port {port} failed: {out}")


def ratio_line(what, augur, redis):
    log(f"{what:<34} augur {augur:>12,.0f}  redis {redis:>12,.0f}  ratio {augur / redis:.2f}")


def phase_throughput(servers, args, results):
    """Phase 1: the four tests at -P 16 and -P 1, R rounds, alternating the order."""
    for rnd in range(args.rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        for pipeline in (16, 1):
            for s in order:
                rows = redis_benchmark(s.port, "set,get,incr,mset", args.requests, pipeline)
                results["throughput"].append(
                    {"round": rnd, "server": s.kind, "pipeline": pipeline, "rows": rows})
                log(f"round {rnd} {s.kind:<5} -P {pipeline:<2} " + "  ".join(
                    f"{t} {r['rps']:,.0f}/s p50 {r['p50_ms']}ms p99 {r['p99_ms']}ms"
                    for t, r in rows.items()))


def phase_loaded(servers, args, results):
    """Phase 2: K keys loaded, RSS, then GET/SET over them."""
    for s in servers:
        start = time.monotonic()
        load(s.port, args.keys)
        secs = time.monotonic() - start
        anon, file_kib = s.rss()
        results["load"][s.kind] = {"seconds": secs, "rss_anon_kib": anon,
                                   "rss_file_kib": file_kib}
        log(f"{s.kind}: loaded {args.keys:,} keys in {secs:.1f} s; "
            f"RSS anon {anon / 1024:,.0f} MiB, file {file_kib / 1024:,.0f} MiB")
    for rnd in range(args.rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        for pipeline in (16, 1):
            for s in order:
                rows = redis_benchmark(s.port, args.loaded_tests, args.requests, pipeline,
                                       keyspace=args.keys)
                results["loaded"].append(
                    {"round": rnd, "server": s.kind, "pipeline": pipeline, "rows": rows})
                log(f"loaded round {rnd} {s.kind:<5} -P {pipeline:<2} " + "  ".join(
                    f"{t} {r['rps']:,.0f}/s p50 {r['p50_ms']}ms p99 {r['p99_ms']}ms"
                    for t, r in rows.items()))
    for s in servers:
        anon, file_kib = s.rss()
        results["load"][s.kind].update(
            {"rss_anon_kib_after_bench": anon, "rss_file_kib_after_bench": file_kib})
        log(f"{s.kind}: after the loaded runs RSS anon {anon / 1024:,.0f} MiB, "
            f"file {file_kib / 1024:,.0f} MiB")


def phase_restart(servers, results):
    """Phase 3: stop and restart each server; seconds until PONG."""
    for s in servers:
        s.stop()
        secs = s.start()
        results["restart"][s.kind] = secs
        log(f"{s.kind}: restarted with the loaded keys, PONG after {secs:.2f} s")


def phase_proxy(args, server_bin, results):
    """Phase 4: 3 shards behind twemproxy against one augur-server directly."""
    env = dict(os.environ, CLUSTER_DIR=os.path.join(args.dir, "cluster"),
               AUGUR_SERVER=server_bin, SERVER_FLAGS="--sync everysec")
    cluster = os.path.join(ROOT, "scripts", "cluster.sh")
    subprocess.run([cluster, "up", "3"], env=env, check=True, capture_output=True)
    try:
        proxy = redis_benchmark(22121, "set,get", args.requests, 16)
        direct = redis_benchmark(7001, "set,get", args.requests, 16)
    finally:
        subprocess.run([cluster, "down"], env=env, check=False, capture_output=True)
    results["proxy"] = {"through_twemproxy": proxy, "one_shard_directly": direct}
    for t in ("SET", "GET"):
        log(f"{t} -P 16: twemproxy + 3 shards {proxy[t]['rps']:,.0f}/s, "
            f"one shard directly {direct[t]['rps']:,.0f}/s "
            f"(ratio {proxy[t]['rps'] / direct[t]['rps']:.2f})")


def summary(results):
    """Median ratio augur/redis per (phase, pipeline, test) over the rounds."""
    out = {}
    for phase in ("throughput", "loaded"):
        cells = {}
        for entry in results[phase]:
            for test, row in entry["rows"].items():
                cells.setdefault((entry["pipeline"], test, entry["round"]), {})[
                    entry["server"]] = row["rps"]
        ratios = {}
        for (pipeline, test, _), pair in cells.items():
            if len(pair) == 2:
                ratios.setdefault(f"P{pipeline} {test}", []).append(pair["augur"] / pair["redis"])
        out[phase] = {k: statistics.median(v) for k, v in ratios.items()}
        for k, v in sorted(out[phase].items()):
            log(f"{phase}: {k} augur/redis median ratio {v:.2f} over {len(ratios[k])} rounds")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--out", default=os.path.join(ROOT, "target", "server_bench.json"))
    parser.add_argument("--dir", default=os.environ.get("BENCH_DIR", "/tmp/augur-server-bench"))
    parser.add_argument("--phases", default="throughput,loaded,restart,proxy")
    parser.add_argument("--loaded-tests", default="get,set",
                        help="tests over the loaded keys (-t names, and HGET)")
    parser.add_argument("--port", type=int, default=AUGUR_PORT,
                        help="augur-server's port; redis-server's is the next one")
    parser.add_argument("--realtime", action="store_true",
                        help="run servers and clients under chrt -f 50 (root)")
    args = parser.parse_args()
    if args.realtime:
        RUN_PREFIX.extend(["chrt", "-f", "50"])
    phases = args.phases.split(",")
    tools = ["redis-server", "redis-benchmark", "redis-cli"]
    tools += ["nutcracker"] if "proxy" in phases else []
    for tool in tools:
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (apt-get install redis-server "
                             "redis-tools nutcracker)")
    server_bin = os.environ.get("AUGUR_SERVER",
                                os.path.join(ROOT, "target", "release", "augur-server"))
    if "AUGUR_SERVER" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "augur-server"],
                       cwd=ROOT, check=True)
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    redis_version = subprocess.run(["redis-server", "--version"], capture_output=True,
                                   text=True, check=False).stdout.strip()
    results = {"requests": args.requests, "rounds": args.rounds, "keys": args.keys,
               "commit": commit, "redis_server": redis_version,
               "machine": os.uname().nodename, "cpus": os.cpu_count(),
               "throughput": [], "loaded": [], "load": {}, "restart": {}}
    servers = [Server("augur", args.dir, server_bin), Server("redis", args.dir, server_bin)]
    servers[0].port, servers[1].port = args.port, args.port + 1
    try:
        for s in servers:
            s.start()
        if "throughput" in phases:
            phase_throughput(servers, args, results)
        if "loaded" in phases:
            phase_loaded(servers, args, results)
        if "restart" in phases:
            phase_restart(servers, results)
    finally:
        for s in servers:
            if s.proc and s.proc.poll() is None:
                s.stop()
    if "proxy" in phases:
        phase_proxy(args, server_bin, results)
    results["summary"] = summary(results)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
