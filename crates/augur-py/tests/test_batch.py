"""Write batches: atomic commit, rollback on exception, reuse."""

import pytest

import augur


def test_batch_commits_on_exit(db):
    db.put(b"gone", b"x")
    with db.write_batch() as wb:
        wb.put(b"a", b"1")
        wb.put(b"b", b"2")
        wb.delete(b"gone")
        assert len(wb) == 3
        # Nothing is visible before the block ends.
        assert db.get(b"a") is None
        assert db[b"gone"] == b"x"
    assert db[b"a"] == b"1" and db[b"b"] == b"2"
    assert db.get(b"gone") is None


def test_batch_discarded_on_exception(db):
    db.put(b"keep", b"old")
    with pytest.raises(RuntimeError, match="boom"):
        with db.write_batch() as wb:
            wb.put(b"keep", b"new")
            wb.put(b"other", b"1")
            raise RuntimeError("boom")
    assert db[b"keep"] == b"old"
    assert db.get(b"other") is None


def test_batch_later_operation_wins(db):
    with db.write_batch() as wb:
        wb.put(b"k", b"1")
        wb.delete(b"k")
        wb.put(b"j", b"1")
        wb.put(b"j", b"2")
    assert db.get(b"k") is None
    assert db[b"j"] == b"2"


def test_explicit_write_clear_and_reuse(db):
    wb = db.write_batch()
    wb.put(b"a", b"1")
    wb.clear()
    assert len(wb) == 0
    wb.put(b"b", b"2")
    wb.write()
    assert len(wb) == 0
    assert db.get(b"a") is None and db[b"b"] == b"2"
    wb.put(b"c", b"3")
    wb.write()
    assert db[b"c"] == b"3"
    wb.write()  # empty: nothing to do


def test_batch_is_atomic_for_readers(db):
    """A snapshot sees all of a batch or none of it."""
    keys = [b"k%04d" % i for i in range(2000)]
    before = db.snapshot()
    with db.write_batch() as wb:
        for k in keys:
            wb.put(k, b"v")
    after = db.snapshot()
    assert sum(1 for _ in before.keys()) == 0
    assert sum(1 for _ in after.keys()) == len(keys)


def test_batch_rejects_str(db):
    wb = db.write_batch()
    with pytest.raises(TypeError, match="not str"):
        wb.put("k", b"v")
    with pytest.raises(TypeError, match="not str"):
        wb.delete("k")


def test_batch_after_close(db):
    wb = db.write_batch()
    wb.put(b"a", b"1")
    db.close()
    with pytest.raises(augur.ClosedError):
        wb.write()
