"""Point reads and writes: bytes-like keys and values, mapping protocol, persistence."""

import os

import pytest

import augur


def test_put_get_delete(db):
    db.put(b"k", b"v")
    assert db.get(b"k") == b"v"
    assert db[b"k"] == b"v"
    assert b"k" in db
    db.delete(b"k")
    assert db.get(b"k") is None
    assert b"k" not in db


def test_mapping_protocol(db):
    db[b"a"] = b"1"
    assert db[b"a"] == b"1"
    del db[b"a"]
    with pytest.raises(KeyError) as e:
        db[b"a"]
    assert e.value.args == (b"a",)
    del db[b"never-there"]  # deleting an absent key is not an error


def test_get_default(db):
    sentinel = object()
    assert db.get(b"missing") is None
    assert db.get(b"missing", sentinel) is sentinel
    assert db.get(b"missing", default=b"d") == b"d"


def test_bytes_like_keys_and_values(db):
    db.put(bytearray(b"ba"), memoryview(b"mv"))
    db.put(memoryview(b"xmvx")[1:3], bytearray(b"ba-value"))
    assert db[b"ba"] == b"mv"
    assert db[bytearray(b"mv")] == b"ba-value"
    assert db.get(memoryview(b"ba")) == b"mv"
    assert isinstance(db[b"ba"], bytes)


def test_non_contiguous_memoryview_is_flattened(db):
    db.put(memoryview(b"a-b-c")[::2], b"v")
    assert db[b"abc"] == b"v"


def test_empty_key_and_value(db):
    db.put(b"", b"")
    assert db.get(b"") == b""
    assert b"" in db


def test_binary_and_large_values(db):
    inline = bytes(range(256))
    separated = os.urandom(100_000)  # over value_separation_threshold: the value log
    db.put(b"\x00\xff", inline)
    db.put(b"big", separated)
    assert db[b"\x00\xff"] == inline
    assert db[b"big"] == separated
    db.flush()
    assert db[b"big"] == separated


def test_overwrite(db):
    for i in range(10):
        db.put(b"k", str(i).encode())
    assert db[b"k"] == b"9"


def test_multi_get(db):
    db.put(b"a", b"1")
    db.put(b"c", b"3")
    assert db.multi_get([b"a", b"b", b"c"]) == [b"1", None, b"3"]
    assert db.multi_get(k for k in [b"c"]) == [b"3"]
    assert db.multi_get([]) == []


def test_persistence_across_reopen(path):
    with augur.open(path) as db:
        for i in range(1000):
            db.put(b"key%05d" % i, b"value%d" % i)
        db.delete(b"key00007")
    with augur.open(path) as db:
        assert db[b"key00999"] == b"value999"
        assert db.get(b"key00007") is None
        db.flush()
    with augur.open(path) as db:
        assert db[b"key00000"] == b"value0"


def test_sync_writes(db):
    db.put(b"k", b"v", sync=True)
    db.delete(b"k", sync=True)
    with db.write_batch(sync=True) as wb:
        wb.put(b"k2", b"v2")
    assert db.get(b"k") is None and db[b"k2"] == b"v2"


def test_flush_and_compact_keep_data(db):
    for i in range(5000):
        db.put(b"%08d" % i, b"v%d" % i)
    db.flush()
    for i in range(0, 5000, 2):
        db.delete(b"%08d" % i)
    db.compact()
    assert db.get(b"%08d" % 2) is None
    assert db[b"%08d" % 3] == b"v3"
    assert sum(1 for _ in db.keys()) == 2500


def test_no_len(db):
    with pytest.raises(TypeError):
        len(db)


def test_iterating_the_db_yields_keys(db):
    db.put(b"b", b"2")
    db.put(b"a", b"1")
    assert list(db) == [b"a", b"b"]


def test_repr_path_and_flags(db, path):
    assert path in repr(db) and "open" in repr(db)
    assert db.path == path
    assert not db.closed and not db.read_only


def test_open_accepts_path_like(tmp_path):
    with augur.open(tmp_path / "db") as db:
        db.put(b"k", b"v")
        assert db.path == str(tmp_path / "db")


def test_put_with_ttl_expires_and_ttl_reports_it(tmp_path):
    import time

    db = augur.open(str(tmp_path / "db"))
    db.put(b"short", b"1", ttl=0.05)
    db.put(b"long", b"2", ttl=3600)
    db.put(b"plain", b"3")
    assert 3599 < db.ttl(b"long") <= 3600
    assert db.ttl(b"plain") is None
    with pytest.raises(KeyError):
        db.ttl(b"absent")
    time.sleep(0.1)
    assert db.get(b"short") is None
    assert b"short" not in db
    assert [k for k, _ in db.items()] == [b"long", b"plain"]
    db.put(b"past", b"4", expire_at=1.0)
    assert db.get(b"past") is None
    with pytest.raises(ValueError):
        db.put(b"k", b"v", ttl=-1)
    with pytest.raises(ValueError):
        db.put(b"k", b"v", ttl=1, expire_at=2)
    db.close()
