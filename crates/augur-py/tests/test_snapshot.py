"""Snapshots: a fixed view of the database with the read methods of Db."""

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
    db.put(b"a", b"1")
    snap = db.snapshot()
    it = snap.items()
    snap.close()
    db.put(b"b", b"2")
    assert list(it) == [(b"a", b"1")]
