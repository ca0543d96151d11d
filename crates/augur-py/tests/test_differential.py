"""Differential test: random operations on Augur and on a dict must agree."""

import random

import pytest

import augur


def _key(rng):
    # A small key space so that overwrites, deletes of live keys and prefixes are common.
    n = rng.randrange(300)
    return b"k%03d" % n if n % 5 else bytes([n % 256]) * (1 + n % 3)


def _model_range(model, start=None, stop=None, prefix=None, reverse=False):
    keys = sorted(model)
    if prefix is not None:
        keys = [k for k in keys if k.startswith(prefix)]
    if start is not None:
        keys = [k for k in keys if k >= start]
    if stop is not None:
        keys = [k for k in keys if k < stop]
    if reverse:
        keys.reverse()
    return [(k, model[k]) for k in keys]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_match_a_dict(path, seed):
    rng = random.Random(seed)
    model = {}
    snapshots = []  # (augur snapshot, frozen copy of the model)
    db = augur.open(path, memtable_mb=1, target_file_mb=1)
    try:
        for step in range(4000):
            op = rng.random()
            k = _key(rng)
            if op < 0.35:
                v = rng.randbytes(rng.choice([0, 1, 8, 100, 2000]))  # 2000: the value log
                db[k] = v
                model[k] = v
            elif op < 0.45:
                db.delete(k)
                model.pop(k, None)
            elif op < 0.65:
                assert db.get(k) == model.get(k)
                assert (k in db) == (k in model)
            elif op < 0.72:
                ops = []
                with db.write_batch() as wb:
                    for _ in range(rng.randrange(1, 20)):
                        bk = _key(rng)
                        if rng.random() < 0.7:
                            bv = rng.randbytes(rng.randrange(50))
                            wb.put(bk, bv)
                            ops.append((bk, bv))
                        else:
                            wb.delete(bk)
                            ops.append((bk, None))
                for bk, bv in ops:
                    if bv is None:
                        model.pop(bk, None)
                    else:
                        model[bk] = bv
            elif op < 0.75:
                try:
                    with db.write_batch() as wb:
                        wb.put(_key(rng), b"never")
                        raise KeyError("abort")
                except KeyError:
                    pass
            elif op < 0.83:
                a, b = sorted([_key(rng), _key(rng)])
                reverse = rng.random() < 0.5
                if rng.random() < 0.3:
                    prefix = k[:1]
                    got = list(db.items(prefix=prefix, reverse=reverse))
                    assert got == _model_range(model, prefix=prefix, reverse=reverse)
                else:
                    start = a if rng.random() < 0.8 else None
                    stop = b if rng.random() < 0.8 else None
                    got = list(db.items(start, stop, reverse=reverse))
                    assert got == _model_range(model, start, stop, reverse=reverse)
            elif op < 0.86:
                keys = [_key(rng) for _ in range(10)]
                assert db.multi_get(keys) == [model.get(x) for x in keys]
            elif op < 0.88:
                if len(snapshots) < 4:
                    snapshots.append((db.snapshot(), dict(model)))
            elif op < 0.90 and snapshots:
                snap, frozen = snapshots.pop(rng.randrange(len(snapshots)))
                assert list(snap.items()) == _model_range(frozen)
                x = _key(rng)
                assert snap.get(x) == frozen.get(x)
                snap.close()
            elif op < 0.92:
                db.flush()
            elif op < 0.93:
                db.compact()
            elif op < 0.94:
                for snap, _ in snapshots:
                    snap.close()
                snapshots.clear()
                db.close()
                db = augur.open(path, memtable_mb=1, target_file_mb=1)
            if step % 500 == 0:
                assert list(db.items()) == _model_range(model)
        assert list(db.items()) == _model_range(model)
        assert list(db.keys(reverse=True)) == sorted(model, reverse=True)
        for snap, frozen in snapshots:
            assert list(snap.items()) == _model_range(frozen)
    finally:
        db.close()
