#!/usr/bin/env python3
"""Augur's Python package against plyvel (LevelDB), rocksdict (RocksDB) and lmdb.

Usage (in the venv that scripts/test.sh builds, with the peers installed from the
registry into it):

    target/py-venv/bin/pip install plyvel rocksdict lmdb
    target/py-venv/bin/python scripts/bench_python.py [--num 1000000] [--rounds 3] \
        [--dir /dev/shm/augur-pybench] [--json out.json] [--engines augur,plyvel,...]

Dataset: --num random 16-byte keys (seeded), 64-byte random values. Per engine and
round, in a fresh store:
  put         one put per key, keys in random order (no sync: each engine's default WAL or
              log without fsync; lmdb: one write transaction per put, sync=False)
  settle      flush and compact the whole key space (not a target; lmdb has none)
  get_hit     one lookup per key, in another random order
  get_miss    --num lookups of random keys not in the store
  iterate     every (key, value) pair in key order
  batch_put   in a second fresh store, the keys in batches of --batch puts
Engines alternate within each round (the starting engine rotates), and the report
gives the median over the rounds, because this machine is shared and noisy. Settings
are comparable: a 10-bit bloom filter, no compression, a 64 MiB write buffer (Augur's
memtable), each library's default cache. All stores live in --dir (tmpfs).
"""

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import sys
import time

OPS = ["put", "settle", "get_hit", "get_miss", "iterate", "batch_put"]
TARGET_OPS = ["put", "get_hit", "get_miss", "iterate", "batch_put"]
MIB = 1 << 20


class KvStore:
    """What the Augur, plyvel and rocksdict adapters share: a handle `db` with `put`, `get` and
    `close`, so the same put and lookup loops (the timed code) serve all three. A subclass
    opens `db` and gives `settle`, `pairs` (every pair in key order) and, unless its handle's
    `write_batch()` is a context manager with `put`, `batch_put`."""

    def put_all(self, keys, value):
        put = self.db.put
        for k in keys:
            put(k, value)

    def get_all(self, keys):
        get = self.db.get
        found = 0
        for k in keys:
            if get(k) is not None:
                found += 1
        return found

    def iterate(self):
        n = 0
        for _k, _v in self.pairs():
            n += 1
        return n

    def batch_put(self, keys, value, batch):
        db = self.db
        for i in range(0, len(keys), batch):
            with db.write_batch() as wb:
                put = wb.put
                for k in keys[i : i + batch]:
                    put(k, value)

    def close(self):
        self.db.close()


class Augur(KvStore):
    name = "augur"

    def __init__(self, path):
        import augur

        self.db = augur.open(path)

    def settle(self):
        self.db.compact()

    def pairs(self):
        return self.db.items()


class Plyvel(KvStore):
    name = "plyvel"

    def __init__(self, path):
        import plyvel

        self.db = plyvel.DB(
            path,
            create_if_missing=True,
            bloom_filter_bits=10,
            compression=None,
            write_buffer_size=64 * MIB,
        )

    def settle(self):
        self.db.compact_range()

    def pairs(self):
        return self.db.iterator()


class RocksDict(KvStore):
    name = "rocksdict"

    def __init__(self, path):
        from rocksdict import BlockBasedOptions, DBCompressionType, Options, Rdict

        opt = Options(raw_mode=True)
        opt.create_if_missing(True)
        opt.set_compression_type(DBCompressionType.none())
        opt.set_write_buffer_size(64 * MIB)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        opt.set_block_based_table_factory(table)
        self.db = Rdict(path, opt)

    def settle(self):
        self.db.flush()
        self.db.compact_range(None, None)

    def pairs(self):
        return self.db.items()

    def batch_put(self, keys, value, batch):
        from rocksdict import WriteBatch

        db = self.db
        for i in range(0, len(keys), batch):
            wb = WriteBatch(raw_mode=True)
            put = wb.put
            for k in keys[i : i + batch]:
                put(k, value)
            db.write(wb)


class Lmdb:
    name = "lmdb"

    def __init__(self, path):
        import lmdb

        self.env = lmdb.open(path, map_size=8 << 30, sync=False, metasync=False)

    def put_all(self, keys, value):
        begin = self.env.begin
        for k in keys:
            with begin(write=True) as txn:
                txn.put(k, value)

    def settle(self):
        pass

    def get_all(self, keys):
        # One read transaction for the whole phase, as lmdb code usually reads.
        found = 0
        with self.env.begin(buffers=False) as txn:
            get = txn.get
            for k in keys:
                if get(k) is not None:
                    found += 1
        return found

    def iterate(self):
        n = 0
        with self.env.begin() as txn:
            for _k, _v in txn.cursor():
                n += 1
        return n

    def batch_put(self, keys, value, batch):
        begin = self.env.begin
        for i in range(0, len(keys), batch):
            with begin(write=True) as txn:
                put = txn.put
                for k in keys[i : i + batch]:
                    put(k, value)

    def close(self):
        self.env.close()


ENGINES = {e.name: e for e in (Augur, Plyvel, RocksDict, Lmdb)}


def timed(fn, *args):
    gc.collect()
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def run_engine(cls, base, keys, hit_order, missing, value, batch):
    path = os.path.join(base, cls.name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    n = len(keys)
    secs = {}
    db = cls(path)
    secs["put"], _ = timed(db.put_all, keys, value)
    secs["settle"], _ = timed(db.settle)
    secs["get_hit"], found = timed(db.get_all, hit_order)
    assert found == n, f"{cls.name}: {found} of {n} keys found"
    secs["get_miss"], found = timed(db.get_all, missing)
    assert found == 0, f"{cls.name}: {found} missing keys found"
    secs["iterate"], count = timed(db.iterate)
    assert count == n, f"{cls.name}: iterated {count} of {n}"
    db.close()
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    db = cls(path)
    secs["batch_put"], _ = timed(db.batch_put, keys, value, batch)
    db.close()
    shutil.rmtree(path, ignore_errors=True)
    return {op: s / (1 if op == "settle" else n) * 1e6 for op, s in secs.items()}


def versions(names):
    out = {"python": platform.python_version()}
    for name, module in [
        ("augur", "augur"),
        ("plyvel", "plyvel"),
        ("rocksdict", "rocksdict"),
        ("lmdb", "lmdb"),
    ]:
        if name not in names:
            continue
        try:
            from importlib.metadata import version

            dist = {"augur": "augur-kv"}.get(name, name)
            out[name] = version(dist)
        except Exception:  # noqa: BLE001 - report what is known
            out[name] = getattr(__import__(module), "__version__", "?")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--value-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dir", default="/dev/shm/augur-pybench")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--json", help="write the raw and median figures here")
    args = ap.parse_args()
    names = [e.strip() for e in args.engines.split(",") if e.strip()]
    for name in names:
        if name not in ENGINES:
            sys.exit(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")

    rng = random.Random(args.seed)
    keyset = set()
    while len(keyset) < args.num:
        keyset.add(rng.randbytes(16))
    keys = list(keyset)
    rng.shuffle(keys)
    hit_order = keys[:]
    rng.shuffle(hit_order)
    missing = []
    while len(missing) < args.num:
        k = rng.randbytes(16)
        if k not in keyset:
            missing.append(k)
    del keyset
    value = rng.randbytes(args.value_size)
    os.makedirs(args.dir, exist_ok=True)

    raw = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            us = run_engine(ENGINES[name], args.dir, keys, hit_order, missing, value, args.batch)
            raw[name].append(us)
            cells = "  ".join(f"{op} {us[op]:.3f}" for op in OPS if op != "settle")
            print(f"round {r + 1} {name:<10} us/op: {cells}  settle {us['settle'] / 1e6:.2f} s", flush=True)

    median = {
        name: {op: statistics.median(run[op] for run in raw[name]) for op in OPS} for name in names
    }
    print()
    print(f"median of {args.rounds} rounds, microseconds per operation (settle: seconds)")
    print(f"{'op':<10}" + "".join(f"{n:>12}" for n in names))
    for op in OPS:
        scale = 1e-6 if op == "settle" else 1
        print(f"{op:<10}" + "".join(f"{median[n][op] * scale:>12.3f}" for n in names))
    if "augur" in names:
        print()
        print("Augur's speedup (peer time / Augur time; above 1 means Augur is faster)")
        peers = [n for n in names if n != "augur"]
        print(f"{'op':<10}" + "".join(f"{'vs ' + n:>14}" for n in peers))
        for op in TARGET_OPS:
            print(
                f"{op:<10}"
                + "".join(f"{median[n][op] / median['augur'][op]:>13.2f}x" for n in peers)
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "num": args.num,
                    "value_size": args.value_size,
                    "rounds": args.rounds,
                    "batch": args.batch,
                    "versions": versions(names),
                    "us_per_op_raw": raw,
                    "us_per_op_median": median,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
