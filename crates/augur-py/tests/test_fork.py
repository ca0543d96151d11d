"""A database used in a process forked from the one that opened it.

The `run()` tests run a script in a fresh interpreter (so that the forked child can exit
the normal way, finalizing the interpreter and garbage-collecting its objects, and so that
its stderr can be captured): the script opens a database, makes a snapshot, iterators and
a batch, forks, and lets the child do one thing. The parent waits for the child with a
deadline (a child that hangs is killed and reported as hung), then writes more, closes,
reopens and reports the keys it finds. The last two tests fork pytest itself, through
`multiprocessing`, as applications usually do.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import augur

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

#: Seconds a child may take before it counts as hung (each step takes milliseconds).
CHILD_DEADLINE_S = 30

SCRIPT = textwrap.dedent(
    r"""
    import json, os, signal, sys, time, warnings
    import augur

    # Python 3.12+ warns when a multi-threaded process forks (the engine has threads).
    warnings.simplefilter("ignore", DeprecationWarning)
    path, action, report, deadline_s = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

    db = augur.open(path)
    for i in range(100):
        db.put(b"parent-%03d" % i, b"p")
    started = db.items()
    next(started)  # a batch is buffered
    fresh = db.keys()  # not started
    snap = db.snapshot()
    snap_iter = snap.items()
    next(snap_iter)
    batch = db.write_batch()
    batch.put(b"child-batch", b"c")
    sys.stdout.flush()
    sys.stderr.flush()

    pid = os.fork()
    if pid == 0:
        fd = os.open(report + ".stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        log = open(report + ".child", "w", buffering=1)

        def attempt(name, call):
            log.write(json.dumps({"op": name}) + "\n")  # a hang leaves this line last
            t = time.monotonic()
            try:
                call()
                outcome = ["ok", ""]
            except BaseException as e:
                outcome = [type(e).__name__, str(e)]
            log.write(json.dumps({"op": name, "outcome": outcome, "s": time.monotonic() - t}) + "\n")

        def with_db():
            with db:
                pass

        ops = [
            ("db.get", lambda: db.get(b"parent-001")),
            ("db[key]", lambda: db[b"parent-001"]),
            ("key in db", lambda: b"parent-001" in db),
            ("db.multi_get", lambda: db.multi_get([b"parent-001"])),
            ("db.put", lambda: db.put(b"child-put", b"c" * 5000)),
            ("db.put(sync=True)", lambda: db.put(b"child-sync", b"c", sync=True)),
            ("db[key] = value", lambda: db.__setitem__(b"child-set", b"c")),
            ("db.delete", lambda: db.delete(b"parent-002")),
            ("del db[key]", lambda: db.__delitem__(b"parent-003")),
            ("db.write_batch", lambda: db.write_batch()),
            ("batch.put", lambda: batch.put(b"child-batch-2", b"c")),
            ("batch.write", lambda: batch.write()),
            ("batch.__exit__", lambda: batch.__exit__(None, None, None)),
            ("db.snapshot", lambda: db.snapshot()),
            ("db.items", lambda: db.items()),
            ("db.keys", lambda: db.keys()),
            ("db.values", lambda: db.values()),
            ("iter(db)", lambda: iter(db)),
            ("next(started iterator)", lambda: next(started)),
            ("next(unstarted iterator)", lambda: next(fresh)),
            ("iterator.close", lambda: started.close()),
            ("snapshot.get", lambda: snap.get(b"parent-001")),
            ("snapshot.items", lambda: snap.items()),
            ("next(snapshot iterator)", lambda: next(snap_iter)),
            ("snapshot.close", lambda: snap.close()),
            ("snapshot.__exit__", lambda: snap.__exit__(None, None, None)),
            ("db.stats", lambda: db.stats()),
            ("db.closed", lambda: db.closed),
            ("db.flush", lambda: db.flush()),
            ("db.compact", lambda: db.compact()),
            ("db.close", lambda: db.close()),
            ("with db", with_db),
        ]
        if action == "use":
            for name, call in ops:
                attempt(name, call)
        elif action == "open-own":
            def own():
                with augur.open(path + "-child") as mine:
                    mine.put(b"child", b"c")
                    assert mine[b"child"] == b"c"
                    assert [k for k in mine.keys()] == [b"child"]
                again = augur.open(path + "-child")  # left open: closed at exit
                again.put(b"child-2", b"c")
            attempt("open another database", own)
            attempt("open the parent's database", lambda: augur.open(path))
        # action "exit": nothing. In every case the child ends the normal way: the
        # interpreter finalizes and garbage-collects db, snap, the iterators and the batch.
        sys.exit(0)

    deadline = time.monotonic() + deadline_s
    status = None
    while True:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = "hung"
            break
        time.sleep(0.01)

    # The parent goes on, untouched by whatever the child did.
    db.put(b"parent-after", b"p")
    assert db[b"parent-001"] == b"p"
    assert next(started) == (b"parent-001", b"p")
    assert snap.get(b"parent-001") == b"p"
    batch.clear()
    snap.close()
    db.close()
    with augur.open(path) as again:
        keys = [k.decode() for k in again.keys()]
    child_keys = None
    if os.path.exists(path + "-child"):
        with augur.open(path + "-child") as theirs:
            child_keys = [k.decode() for k in theirs.keys()]
    child_log = []
    if os.path.exists(report + ".child"):
        with open(report + ".child") as f:
            child_log = [json.loads(line) for line in f]
    stderr = ""
    if os.path.exists(report + ".stderr"):
        with open(report + ".stderr") as f:
            stderr = f.read()
    with open(report, "w") as f:
        json.dump({"parent": os.getpid(), "child": pid, "status": status, "stderr": stderr,
                   "log": child_log, "keys": keys, "child_keys": child_keys}, f)
    """
)

PARENT_KEYS = ["parent-%03d" % i for i in range(100)] + ["parent-after"]


def run(tmp_path, action):
    """Runs the script with `action` in the child; returns the parent's report."""
    report = tmp_path / "report.json"
    script = tmp_path / "fork_script.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "db"), action, str(report), str(CHILD_DEADLINE_S)],
        capture_output=True,
        text=True,
        timeout=CHILD_DEADLINE_S + 120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == "", proc.stderr
    return json.loads(report.read_text())


def outcomes(report):
    """{op: [exception class name or "ok", message]} of the child's finished steps."""
    return {line["op"]: line["outcome"] for line in report["log"] if "outcome" in line}


def test_every_use_in_a_forked_child_raises_forked_error(tmp_path):
    report = run(tmp_path, "use")
    done = outcomes(report)
    started = [line["op"] for line in report["log"] if "outcome" not in line]
    assert report["status"] != "hung", f"the child hung in {started[-1]!r}; finished: {done}"
    wrong = {op: outcome for op, outcome in done.items() if outcome[0] != "ForkedError"}
    assert not wrong, wrong
    assert len(done) == 32
    for op, (_, message) in done.items():
        assert (
            f"opened in process {report['parent']} used in forked child {report['child']}; "
            "open it again in the child" in message
        ), (op, message)
    slow = {line["op"]: line["s"] for line in report["log"] if line.get("s", 0) > 1.0}
    assert not slow, slow
    assert report["stderr"] == ""
    assert report["status"] == 0
    # No write of the child reached the files; the parent's later write did.
    assert report["keys"] == PARENT_KEYS


def test_child_exiting_without_touching_the_database_is_silent(tmp_path):
    report = run(tmp_path, "exit")
    assert report["stderr"] == ""
    assert report["status"] == 0
    assert report["keys"] == PARENT_KEYS


def test_child_can_open_a_database_of_its_own(tmp_path):
    report = run(tmp_path, "open-own")
    assert outcomes(report)["open another database"] == ["ok", ""]
    busy, message = outcomes(report)["open the parent's database"]
    assert busy == "BusyError", message
    assert report["stderr"] == ""
    assert report["status"] == 0
    assert report["child_keys"] == ["child", "child-2"]
    assert report["keys"] == PARENT_KEYS


_POOL_DB = None


def _get_in_worker(key):
    return _POOL_DB.get(key)


def _open_and_get_in_worker(path, key):
    with augur.open(path) as db:
        return db.get(key)


def test_multiprocessing_fork_worker_gets_forked_error(db):
    """The usual way into this: a fork-started worker using a database of the parent."""
    import multiprocessing

    global _POOL_DB
    db.put(b"k", b"v")
    _POOL_DB = db
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            with pytest.raises(augur.ForkedError, match="open it again in the child"):
                pool.apply_async(_get_in_worker, (b"k",)).get(timeout=CHILD_DEADLINE_S)
    finally:
        _POOL_DB = None
    assert db[b"k"] == b"v"


def test_database_closed_before_the_fork_opens_in_the_child(path):
    """The way to use a database in a forked child: close it first, open it there."""
    import multiprocessing

    with augur.open(path) as db:
        db.put(b"k", b"v")
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_open_and_get_in_worker, (path, b"k")).get(timeout=CHILD_DEADLINE_S)
    assert got == b"v"
