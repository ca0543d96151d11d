"""Checkpoints and backups from Python (issue 44, item 1): ``db.checkpoint`` while another
thread writes holds a prefix of its writes and opens; ``db.backup`` shares files between
backups; ``augur.verify_backup`` finds damage; ``augur.restore_backup`` round-trips."""

import os
import threading

import pytest

import augur


def test_checkpoint_opens_with_the_data(db, tmp_path):
    for i in range(2000):
        db.put(b"k%05d" % i, b"v" * (10 if i % 2 else 3000))
    info = db.checkpoint(tmp_path / "cp")
    assert info["seqno"] == 2000
    assert info["linked_files"] > 0 and info["copied_files"] == 0
    copy = db.checkpoint(str(tmp_path / "cp2"), copy=True)
    assert copy["linked_files"] == 0 and copy["copied_files"] > 0
    for name in ("cp", "cp2"):
        with augur.open(str(tmp_path / name)) as c:
            assert c[b"k00001"] == b"v" * 10
            assert c[b"k00002"] == b"v" * 3000
            assert sum(1 for _ in c.keys()) == 2000
    with pytest.raises(augur.InvalidArgumentError, match="already exists"):
        db.checkpoint(tmp_path / "cp")


def test_checkpoint_while_a_thread_writes_holds_a_prefix(db, tmp_path):
    acked = [0]
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            db.put(b"w%08d" % i, b"x" * (i % 700))
            i += 1
            acked[0] = i

    t = threading.Thread(target=writer)
    t.start()
    try:
        while acked[0] < 3000:
            pass
        before = acked[0]
        info = db.checkpoint(tmp_path / "cp")
        after = acked[0]
    finally:
        stop.set()
        t.join()
    assert before <= info["seqno"] <= after + 1
    with augur.open(str(tmp_path / "cp")) as c:
        keys = list(c.keys())
    assert keys == [b"w%08d" % i for i in range(info["seqno"])]


def test_backups_share_files_verify_and_restore(db, tmp_path):
    backups = str(tmp_path / "backups")
    for i in range(5000):
        db.put(b"a%05d" % i, b"v%d" % i)
    first = db.backup(backups)
    db.put(b"later", b"1")
    second = db.backup(backups)
    assert (first["id"], second["id"]) == (1, 2)
    assert second["reused_files"] > 0 and second["new_bytes"] < first["new_bytes"]
    listed = augur.list_backups(backups)
    assert [b["id"] for b in listed] == [1, 2]
    assert listed[1]["shared_bytes"] > 0
    assert augur.verify_backup(backups, 2)["ok"]

    restored = augur.restore_backup(backups, 1, str(tmp_path / "r1"))
    assert restored["seqno"] == 5000
    with augur.open(str(tmp_path / "r1")) as r:
        assert b"later" not in r and r[b"a00042"] == b"v42"

    shared = os.path.join(backups, "shared")
    table = next(n for n in sorted(os.listdir(shared)) if n.endswith(".sst"))
    with open(os.path.join(shared, table), "r+b") as f:
        f.seek(20)
        byte = f.read(1)
        f.seek(20)
        f.write(bytes([byte[0] ^ 0xFF]))
    report = augur.verify_backup(backups, 1)
    assert not report["ok"] and "CRC32C" in report["problems"][0]["problem"]
    with pytest.raises(augur.CorruptionError):
        augur.restore_backup(backups, 1, str(tmp_path / "r2"))
    assert not os.path.exists(tmp_path / "r2")
    purged = augur.purge_backups(backups, 0)
    assert purged["deleted"] == [1, 2] and purged["files_removed"] > 0
    assert augur.list_backups(backups) == []


def test_read_only_database_cannot_checkpoint(path, tmp_path):
    with augur.open(path) as w:
        w.put(b"k", b"v")
    with augur.open(path, read_only=True) as r:
        with pytest.raises(augur.ReadOnlyError):
            r.checkpoint(tmp_path / "cp")
