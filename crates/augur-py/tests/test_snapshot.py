"""Snapshots: a fixed view of the database with the read methods of Db."""

import gc

import pytest

import augur


def test_snapshot_ignores_later_writes(db):
    db.put(b"a", b"1")
    db.put(b"b", b"2")
    with db.snapshot() as snap:
        db.put(b"a", b"changed")
        db.delete(b"b")
        db.put(b"c", b"new")
        assert snap[b"a"] == b"1"
        assert snap.get(b"b") == b"2"
        assert b"c" not in snap
        assert snap.get(b"c", b"dflt") == b"dflt"
        assert snap.multi_get([b"a", b"c"]) == [b"1", None]
        assert list(snap.items()) == [(b"a", b"1"), (b"b", b"2")]
        assert list(snap.keys(reverse=True)) == [b"b", b"a"]
        assert list(snap.values(start=b"b")) == [b"2"]
        assert list(snap) == [b"a", b"b"]
        with pytest.raises(KeyError):
            snap[b"c"]
    assert db[b"a"] == b"changed"


def test_snapshot_survives_flush_and_compaction(db):
    for i in range(3000):
        db.put(b"%06d" % i, b"old")
    snap = db.snapshot()
    for i in range(3000):
        db.put(b"%06d" % i, b"new")
    db.compact()
    assert snap[b"%06d" % 17] == b"old"
    assert all(v == b"old" for v in snap.values())
    snap.close()


def test_closed_snapshot_raises(db):
    snap = db.snapshot()
    snap.close()
    snap.close()  # idempotent
    with pytest.raises(augur.ClosedError):
        snap.get(b"a")
    with pytest.raises(augur.ClosedError):
        list(snap.items())


def test_iterator_outlives_its_snapshot_object(db):
    """An iterator keeps its view when the Snapshot object is garbage-collected unclosed."""
    db.put(b"a", b"1")
    it = db.snapshot().items()
    gc.collect()
    db.put(b"b", b"2")
    assert list(it) == [(b"a", b"1")]


@pytest.mark.parametrize("mode", ["items", "keys", "values"])
def test_snapshot_close_ends_its_iterators_at_once(db, mode):
    """snapshot.close() (or leaving its with block) ends the iterators made from it: next()
    raises ClosedError at once, not after the buffered batch. Other iterators go on."""
    for i in range(200):
        db.put(b"%03d" % i, b"v")
    snap = db.snapshot()
    started = getattr(snap, mode)()
    for _ in range(3):
        next(started)
    unstarted = getattr(snap, mode)()
    with db.snapshot() as other_snap:
        other = getattr(other_snap, mode)()
        next(other)
    on_db = getattr(db, mode)()
    next(on_db)
    survivor = db.snapshot()
    survivor_it = getattr(survivor, mode)()
    next(survivor_it)
    snap.close()
    for it in (started, unstarted, other):
        for _ in range(2):
            with pytest.raises(augur.ClosedError, match="snapshot"):
                next(it)
    assert len(list(on_db)) == 199
    assert len(list(survivor_it)) == 199
    survivor.close()
    with pytest.raises(augur.ClosedError):
        getattr(snap, mode)()
