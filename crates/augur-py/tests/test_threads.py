"""The GIL is released during engine calls, and threads may share a database.

No timing ratios: on a shared 2-core machine they flake. Instead, the GIL test checks
*whether* another Python thread ran while one engine call was in progress. If the call
held the GIL, no Python bytecode of the other thread could run between the call's start
and end (bar the few microseconds before it takes effect), so none of the other thread's
timestamps could fall in the middle of the call's interval.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import augur

N_KEYS = 20_000


def _fill(db):
    with db.write_batch() as wb:
        for i in range(N_KEYS):
            wb.put(b"key%08d" % i, b"v%d" % i)
    db.flush()


def _long_multi_get_keys(db):
    """Enough keys for one multi_get call to take at least 0.3 s on this machine."""
    keys = [b"key%08d" % (i % N_KEYS) for i in range(N_KEYS)]
    while True:
        start = time.perf_counter()
        db.multi_get(keys)
        if time.perf_counter() - start >= 0.3:
            return keys
        keys = keys * 2


def test_a_blocking_engine_call_does_not_block_other_python_threads(db):
    _fill(db)
    keys = _long_multi_get_keys(db)
    stamps = []
    done = threading.Event()

    def other_thread():
        while not done.is_set():
            stamps.append(time.perf_counter())  # pure Python: needs the GIL
            time.sleep(0.0005)  # bounds the list; waking up needs the GIL too

    t = threading.Thread(target=other_thread)
    t.start()
    try:
        time.sleep(0.01)
        begin = time.perf_counter()
        values = db.multi_get(keys)  # one engine call with the GIL released
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    assert values[0] == b"v0"
    span = end - begin
    middle = [s for s in stamps if begin + 0.25 * span <= s <= begin + 0.75 * span]
    assert middle, f"no Python bytecode ran during a {span:.3f} s engine call: the GIL was held"


def test_threads_share_a_database(db):
    _fill(db)

    def reader(seed):
        found = 0
        for i in range(seed, N_KEYS, 7):
            if db.get(b"key%08d" % i) == b"v%d" % i:
                found += 1
        return found

    def writer(t):
        for i in range(2000):
            db.put(b"w%d-%06d" % (t, i), b"x")
        return 2000

    with ThreadPoolExecutor(max_workers=4) as pool:
        reads = [pool.submit(reader, s) for s in range(7)]
        writes = [pool.submit(writer, t) for t in range(3)]
        assert sum(f.result() for f in reads) == N_KEYS
        assert sum(f.result() for f in writes) == 6000
    for t in range(3):
        assert sum(1 for _ in db.keys(prefix=b"w%d-" % t)) == 2000


def test_iterating_in_one_thread_while_another_writes(db):
    _fill(db)
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            db.put(b"zz%08d" % i, b"x")
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(3):
            assert sum(1 for _ in db.keys(prefix=b"key")) == N_KEYS
    finally:
        stop.set()
        t.join()


def test_close_while_another_thread_iterates(path):
    db = augur.open(path)
    _fill(db)
    errors = []
    started = threading.Event()

    def iterate():
        try:
            for _ in range(50):
                for n, _ in enumerate(db.items()):
                    if n == 100:
                        started.set()
        except augur.ClosedError:
            pass
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=iterate)
    t.start()
    started.wait(30)
    db.close()
    t.join()
    assert not errors
    with augur.open(path) as again:  # the lock was released
        assert again[b"key00000001"] == b"v1"
