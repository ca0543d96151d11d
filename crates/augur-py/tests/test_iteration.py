"""Range iteration: bounds, reverse, prefix, laziness and batching."""

import pytest

import augur

KEYS = [b"a", b"ab", b"abc", b"b", b"ba", b"c", b"\xff", b"\xff\xff\x01"]


@pytest.fixture
def filled(db):
    for k in KEYS:
        db.put(k, k.upper())
    return db


def test_items_in_key_order(filled):
    assert list(filled.items()) == [(k, k.upper()) for k in KEYS]
    assert list(filled.keys()) == KEYS
    assert list(filled.values()) == [k.upper() for k in KEYS]


@pytest.mark.parametrize(
    "start,stop,expected",
    [
        (b"ab", b"b", [b"ab", b"abc"]),
        (b"ab", None, [b"ab", b"abc", b"b", b"ba", b"c", b"\xff", b"\xff\xff\x01"]),
        (None, b"ab", [b"a"]),
        (b"aa", b"bz", [b"ab", b"abc", b"b", b"ba"]),
        (b"c", b"c", []),
        (b"z", b"a", []),
    ],
)
def test_bounds_start_inclusive_stop_exclusive(filled, start, stop, expected):
    assert list(filled.keys(start, stop)) == expected
    assert list(filled.keys(start=start, stop=stop, reverse=True)) == expected[::-1]


@pytest.mark.parametrize(
    "prefix,expected",
    [
        (b"a", [b"a", b"ab", b"abc"]),
        (b"ab", [b"ab", b"abc"]),
        (b"b", [b"b", b"ba"]),
        (b"\xff", [b"\xff", b"\xff\xff\x01"]),
        (b"\xff\xff", [b"\xff\xff\x01"]),
        (b"", KEYS),
        (b"zz", []),
    ],
)
def test_prefix(filled, prefix, expected):
    assert list(filled.keys(prefix=prefix)) == expected
    assert list(filled.items(prefix=prefix, reverse=True)) == [(k, k.upper()) for k in expected[::-1]]


def test_prefix_with_bounds_is_refused(filled):
    with pytest.raises(augur.InvalidArgumentError):
        filled.items(b"a", prefix=b"a")
    with pytest.raises(ValueError):
        filled.keys(stop=b"a", prefix=b"a")


def test_bounds_accept_bytes_like(filled):
    assert list(filled.keys(bytearray(b"b"), memoryview(b"c"))) == [b"b", b"ba"]
    with pytest.raises(TypeError):
        filled.keys("a")


def test_iterator_reads_one_snapshot(db):
    for i in range(100):
        db.put(b"%03d" % i, b"v")
    it = db.keys()
    first = next(it)
    db.delete(b"050")
    db.put(b"500", b"late")
    rest = list(it)
    assert [first] + rest == [b"%03d" % i for i in range(100)]


def test_many_items_cross_batch_boundaries(db):
    n = 5000
    with db.write_batch() as wb:
        for i in range(n):
            wb.put(b"%06d" % i, b"%d" % i)
    db.flush()
    for i in range(n, n + 100):
        db.put(b"%06d" % i, b"%d" % i)  # some in the memtable, some in tables
    got = list(db.items())
    assert len(got) == n + 100
    assert got[1234] == (b"%06d" % 1234, b"1234")
    assert [k for k, _ in db.items(reverse=True)] == [k for k, _ in got][::-1]
    assert list(db.keys(b"%06d" % 4990, b"%06d" % 5010)) == [b"%06d" % i for i in range(4990, 5010)]


def test_iterator_close_and_exhaustion(db):
    db.put(b"a", b"1")
    db.put(b"b", b"2")
    it = db.items()
    assert next(it) == (b"a", b"1")
    it.close()
    assert list(it) == []
    it = db.keys()
    assert list(it) == [b"a", b"b"]
    with pytest.raises(StopIteration):
        next(it)


def test_iterator_is_its_own_iterator(db):
    it = db.keys()
    assert iter(it) is it


@pytest.mark.parametrize("mode", ["items", "keys", "values"])
@pytest.mark.parametrize("reverse", [False, True])
def test_close_ends_iterators_at_once(db, mode, reverse):
    """After db.close(), next() raises ClosedError at once, not after the buffered batch."""
    with db.write_batch() as wb:
        for i in range(3000):
            wb.put(b"%05d" % i, b"v")
    early = getattr(db, mode)(reverse=reverse)
    for _ in range(3):
        next(early)  # inside the first batch
    late = getattr(db, mode)(reverse=reverse)
    for _ in range(100):
        next(late)  # inside the third batch
    unstarted = getattr(db, mode)(reverse=reverse)
    db.close()
    for it in (early, late, unstarted):
        for _ in range(2):  # and on every later call
            with pytest.raises(augur.ClosedError, match="database"):
                next(it)


def test_close_after_exhaustion_or_iterator_close_yields_nothing(db):
    db.put(b"a", b"1")
    done = db.keys()
    assert list(done) == [b"a"]
    stopped = db.keys()
    stopped.close()
    db.close()
    assert list(done) == []
    assert list(stopped) == []
