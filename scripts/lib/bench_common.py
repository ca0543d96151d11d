"""Helpers shared by the Python benchmark scripts (scripts/flsm_bench.py, range_bench.py,
read_path_bench.py): running one `augur bench` process with a time limit and keeping its JSON
records and the commands run (across runs, in commands.json), medians of alternating rounds, number formatting, the machine line of a report, the
hand-written Findings section kept across renders, the bytes under a directory and a path as a
report shows it.

Import it with `sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))` from a
script in scripts/.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from json_tools import save_json


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchFailed(Exception):
    """One `augur bench` process that exited non-zero, timed out or wrote no JSON."""

    def __init__(self, cmd, reason, stderr_tail=""):
        self.cmd = cmd
        self.reason = reason
        self.stderr_tail = stderr_tail
        super().__init__(f"{reason}: {cmd}" + (f"\n{stderr_tail}" if stderr_tail else ""))

    def short(self):
        """One line for a report: the reason and the last non-empty stderr line."""
        lines = [l.strip() for l in self.stderr_tail.splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower()]
        last = (errors or lines)[-1:]
        return self.reason + (f" ({last[0]})" if last else "")


def run_bench(augur, args, *, raw_path, tag, timeout, commands=None, extra_raw=None):
    """Runs `augur bench --json=TMP ARGS` with stdout discarded and a time limit of `timeout`
    seconds (the process and its children are killed past it); returns its JSON records and
    appends each to `raw_path` (JSON lines: {"tag", "record", ...extra_raw}). The command (as
    `augur bench ARGS`) is appended to `commands`. Raises BenchFailed on a non-zero exit, a
    timeout or a missing/unreadable JSON file."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    os.unlink(path)
    cmd = [augur, "bench", f"--json={path}"] + list(args)
    shown = " ".join(["augur", "bench"] + list(args))
    if commands is not None:
        commands.append(shown)
    log(" ".join(cmd))
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            rc = None
        except BaseException:
            # Ctrl-C reaches only the foreground group, not the child's own session.
            _kill_group(proc)
            raise
        err.seek(0)
        tail = "\n".join(err.read().splitlines()[-15:])
    try:
        if rc is None:
            raise BenchFailed(shown, f"timed out after {timeout:.0f} s", tail)
        if rc != 0:
            raise BenchFailed(shown, f"exited with status {rc}", tail)
        try:
            with open(path) as f:
                records = json.load(f)
        except (OSError, ValueError) as e:
            raise BenchFailed(shown, f"no readable JSON ({e})", tail)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    with open(raw_path, "a") as f:
        for r in records:
            f.write(json.dumps(dict({"tag": tag, "record": r}, **(extra_raw or {}))) + "\n")
    return records


def save_commands(directory, commands):
    """Adds each command of `commands` not yet in `directory`/commands.json to its end (the
    commands of every run, in the order first run) and empties `commands`."""
    path = os.path.join(directory, "commands.json")
    prev = json.load(open(path)) if os.path.exists(path) else []
    for c in commands:
        if c not in prev:
            prev.append(c)
    save_json(directory, "commands.json", prev)
    commands.clear()


def _kill_group(proc):
    """Kills the process group led by `proc` (started with start_new_session) and reaps it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def last_record(records, bench_name):
    """The last record of `bench_name` (earlier ones of the same process are warm-ups)."""
    found = [r for r in records if r.get("benchmark") == bench_name]
    return found[-1] if found else None


def medians(rounds):
    """rounds: list of {key: value}; returns {key: [median, [values]]}."""
    out = {}
    for r in rounds:
        for k, v in r.items():
            if v is not None:
                out.setdefault(k, []).append(v)
    return {k: [statistics.median(v), v] for k, v in out.items()}


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(x, digits=3):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "-"


def human_bytes(n):
    if n is None:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,.0f} B"


def machine(root, paths=()):
    """CPU, cores, memory, commit and date; plus the file system of each of `paths`."""
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
        mem = [l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")]
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        text = (f"{len(cpu)} × {cpu[0]} (`nproc` = {os.cpu_count()}), "
                f"{int(mem[0]) / (1 << 20):.1f} GiB RAM, kernel {os.uname().release}, "
                f"commit {commit or '?'}, {time.strftime('%Y-%m-%d')}")
    except (OSError, IndexError, ValueError):
        text = "unknown"
    fs = []
    for p in paths:
        try:
            out = subprocess.run(["df", "-hT", p], capture_output=True, text=True).stdout.splitlines()
            f = out[-1].split()
            fs.append(f"`{p}`: {f[1]} ({f[2]} total)")
        except (OSError, IndexError):
            pass
    return text + ("; " + ", ".join(fs) if fs else "")


def kept_findings(report, next_heading="## Setup"):
    """The hand-written Findings of the existing report (kept across renders)."""
    try:
        text = open(report).read()
        start = text.index("## Findings") + len("## Findings")
        return text[start:text.index(next_heading, start)].strip()
    except (OSError, ValueError):
        return "<!-- findings: written by hand after a run -->"


def table(header, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def dir_bytes(path):
    """Bytes of every file under `path`, recursively (files that vanish meanwhile count 0)."""
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(d, f))
            except OSError:
                pass
    return total


def shown_path(p, root):
    """`p` relative to the repository `root` when inside it."""
    p = os.path.abspath(p)
    return os.path.relpath(p, root) if p.startswith(root + os.sep) else p
