"""Bad inputs, bad options, the exception classes, read-only handles and use after close."""

import ast
import inspect
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import augur

STUB = pathlib.Path(__file__).resolve().parent.parent / "augur.pyi"


KINDS = (
    augur.CorruptionError,
    augur.BusyError,
    augur.ClosedError,
    augur.ForkedError,
    augur.InvalidArgumentError,
    augur.ReadOnlyError,
    augur.ResourceLimitError,
    augur.PoisonedError,
    augur.TaskPanickedError,
)


def test_exception_hierarchy():
    for cls in KINDS:
        assert issubclass(cls, augur.Error)
        assert cls.__module__ == "augur"
    assert issubclass(augur.Error, Exception)
    assert issubclass(augur.InvalidArgumentError, ValueError)
    # Each kind is its own: none is another's subclass (a read-only handle is not a bad
    # argument, a machine's limit is not a bad option).
    for a in KINDS:
        for b in KINDS:
            assert a is b or not issubclass(a, b), (a, b)


@pytest.mark.parametrize(
    "kind,cls,text",
    [
        ("io", augur.Error, "disk gone"),
        ("corruption", augur.CorruptionError, "block checksum mismatch"),
        ("busy", augur.BusyError, "held by another process"),
        ("read_only", augur.ReadOnlyError, "open for reading only"),
        ("resource_limit", augur.ResourceLimitError, "vm.max_map_count"),
        ("task_panicked", augur.TaskPanickedError, "a sub-compaction panicked: boom"),
    ],
)
def test_each_engine_error_kind_raises_its_class(kind, cls, text):
    with pytest.raises(cls, match=text) as e:
        augur._raise_engine_error(kind)
    assert type(e.value) is cls


def test_poisoned_error_has_its_first_failure_as_cause():
    with pytest.raises(augur.PoisonedError, match="poisoned") as e:
        augur._raise_engine_error("poisoned")
    cause = e.value.__cause__
    assert type(cause) is augur.Error and "disk gone" in str(cause)
    with pytest.raises(augur.InvalidArgumentError):
        augur._raise_engine_error("no such kind")


@pytest.mark.parametrize("bad", ["text", 5, None, 1.5, [b"a"], object()])
def test_non_bytes_keys_and_values_are_type_errors(db, bad):
    with pytest.raises(TypeError, match="bytes, bytearray or memoryview"):
        db.put(bad, b"v")
    with pytest.raises(TypeError, match="bytes, bytearray or memoryview"):
        db.put(b"k", bad)
    with pytest.raises(TypeError):
        db.get(bad)
    with pytest.raises(TypeError):
        db[bad]
    with pytest.raises(TypeError):
        bad in db
    with pytest.raises(TypeError):
        db.delete(bad)
    with pytest.raises(TypeError):
        db.multi_get([b"ok", bad])


def test_str_error_says_to_encode(db):
    with pytest.raises(TypeError, match=r"not str \(encode it first"):
        db.put("key", b"v")


def test_oversized_key_is_invalid_argument(db):
    with pytest.raises(augur.InvalidArgumentError):
        db.put(b"k" * 70_000, b"v")


@pytest.mark.parametrize(
    "option,value",
    [
        ("index", "btree"),
        ("learning", "sometimes"),
        ("compaction", "tiered"),
        ("read_mode", "fancy"),
        ("rmi_root", "quadratic"),
        ("error_bound", -1),
        ("error_bound", 2_000_000),
        ("memtable_mb", 0),
        ("max_immutable_memtables", 0),
        ("compaction_nice", 20),
        ("compaction_nice", -1),
        ("level0_file_num_compaction_trigger", 0),
        ("level0_stop_writes_trigger", 1),
        ("bloom_bits", 65),
        ("radix_bits", 30),
        ("fiting_fanout", 1),
        ("flsm_top_level_bits", 0),
        ("flsm_level_size_runs", 100),
        ("max_sstables_per_guard", 1),
        ("parallel_seek_threads", 65),
        ("scan_readahead", 0),
        ("lazy_learning_reads", 0),
        ("lazy_learning_reads_per_key", float("nan")),
        ("value_log_gc_ratio", 0.0),
        ("level_merge_threshold", 1.0),
        ("error_bound_per_level", "L0"),
        ("error_bound_per_level", {99: 4}),
        ("error_bound_per_level", [1, 2]),
        ("model_memory_budget", "lots"),
        ("model_memory_budget", "-1"),
    ],
)
def test_bad_option_values_raise_value_error_naming_the_option(path, option, value):
    with pytest.raises(ValueError) as e:
        augur.open(path, **{option: value})
    assert isinstance(e.value, augur.InvalidArgumentError)
    assert str(e.value).startswith(option + ":"), str(e.value)
    assert not pathlib.Path(path).exists() or not any(pathlib.Path(path).iterdir())


def test_unknown_option_is_a_type_error(path):
    with pytest.raises(TypeError):
        augur.open(path, no_such_option=1)


def test_every_option_value_accepted(tmp_path):
    kinds = {
        "index": ["fence", "plr", "pgm", "rs", "rmi", "fiting", "plex", "auto"],
        "learning": ["never", "at-build", "always", "cost-benefit", "lazy", "offline"],
        "compaction": ["leveled", "flsm"],
        "read_mode": ["mmap", "pread", "direct"],
        "rmi_root": ["linear", "cubic"],
    }
    n = 0
    for option, values in kinds.items():
        for value in values:
            n += 1
            with augur.open(str(tmp_path / str(n)), **{option: value}) as db:
                db.put(b"k", b"v")
                db.flush()
                assert db[b"k"] == b"v"
    with augur.open(str(tmp_path / "lv"), error_bound_per_level={0: 4, 1: 16}) as db:
        db.put(b"k", b"v")
    with augur.open(str(tmp_path / "lv2"), error_bound_per_level="L0:4,L1:16") as db:
        db.put(b"k", b"v")
    for budget in ("fence", "unlimited", "0.5"):
        with augur.open(str(tmp_path / ("auto-" + budget)), index="auto", model_memory_budget=budget) as db:
            for i in range(2000):
                db.put(b"%06d" % i, b"v")
            db.flush()
            assert db[b"000042"] == b"v"


def test_open_defaults_are_the_engine_defaults():
    """open()'s keywords are the CLI's engine options, with the engine's defaults."""
    params = inspect.signature(augur.open).parameters
    defaults = {n: p.default for n, p in params.items() if n != "path"}
    assert defaults == augur._engine_defaults()
    # The signature is built from those defaults around the compiled open(), which must
    # take exactly these keywords.
    compiled = inspect.signature(augur.open.__wrapped__).parameters
    assert set(compiled) == set(params)
    assert all(p.default is inspect.Parameter.empty for p in compiled.values())
    assert params["read_only"].default is False
    assert params["compaction"].default is None


def test_stub_matches_the_runtime_signature():
    tree = ast.parse(STUB.read_text())
    (stub_open,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "open"]
    stub = {a.arg: ast.literal_eval(d) for a, d in zip(stub_open.args.kwonlyargs, stub_open.args.kw_defaults)}
    runtime = {n: p.default for n, p in inspect.signature(augur.open).parameters.items() if n != "path"}
    assert stub == runtime


def test_create_false_refuses_a_missing_database(path):
    with pytest.raises(augur.InvalidArgumentError):
        augur.open(path, create=False)


def test_read_only_refuses_writes(path):
    with pytest.raises(augur.Error):
        augur.open(path, read_only=True)  # never creates
    with augur.open(path) as db:
        db.put(b"k", b"v")
    with augur.open(path, read_only=True) as db:
        assert db.read_only
        assert db[b"k"] == b"v"
        assert list(db.items()) == [(b"k", b"v")]
        for write in (
            lambda: db.put(b"a", b"b"),
            lambda: db.__setitem__(b"a", b"b"),
            lambda: db.delete(b"k"),
            lambda: db.write_batch(),
            lambda: db.flush(),
            lambda: db.compact(),
        ):
            with pytest.raises(augur.ReadOnlyError, match="read_only"):
                write()
        assert db[b"k"] == b"v"


def _listing(path):
    return sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(path))


def test_read_only_changes_nothing_on_disk_and_works_beside_a_writer(path):
    writer = augur.open(path, value_separation_threshold=0)
    for i in range(100):
        writer.put(b"k%03d" % i, b"v%d" % i)
    writer.flush()
    writer.put(b"unflushed", b"in the WAL")
    before = _listing(path)
    with augur.open(path, read_only=True) as reader:
        assert reader[b"k042"] == b"v42"
        assert reader[b"unflushed"] == b"in the WAL"
        assert len(list(reader.keys())) == 101
        with pytest.raises(augur.ReadOnlyError, match="read_only"):
            reader.put(b"x", b"y")
        assert _listing(path) == before, "the read-only open changed the directory"
        # The writer goes on; the reader sees the database as of its open.
        writer.put(b"later", b"write")
        assert reader.get(b"later") is None
    writer.close()
    with augur.open(path, read_only=True) as reader:
        assert reader[b"later"] == b"write"


def test_compaction_style_comes_from_the_database(path):
    with augur.open(path, compaction="flsm") as db:
        db.put(b"k", b"v")
    with augur.open(path) as db:
        assert db.stats()["compaction_style"] == "flsm"
        assert db[b"k"] == b"v"
    with pytest.raises(augur.InvalidArgumentError, match="compaction"):
        augur.open(path, compaction="leveled")
    with augur.open(path, compaction="flsm") as db:
        assert db[b"k"] == b"v"


def test_use_after_close(db):
    db.put(b"k", b"v")
    snap = db.snapshot()
    it = db.items()
    db.close()
    db.close()  # idempotent
    assert db.closed and "closed" in repr(db)
    calls = [
        lambda: db.get(b"k"),
        lambda: db[b"k"],
        lambda: b"k" in db,
        lambda: db.put(b"k", b"v"),
        lambda: db.__setitem__(b"k", b"v"),
        lambda: db.delete(b"k"),
        lambda: db.__delitem__(b"k"),
        lambda: db.multi_get([b"k"]),
        lambda: db.write_batch(),
        lambda: db.snapshot(),
        lambda: db.items(),
        lambda: db.keys(),
        lambda: db.values(),
        lambda: iter(db),
        lambda: db.stats(),
        lambda: db.flush(),
        lambda: db.compact(),
        lambda: snap.get(b"k"),
        lambda: snap.items(),
        lambda: next(it),
    ]
    for call in calls:
        with pytest.raises(augur.ClosedError):
            call()


def test_close_releases_the_lock_even_with_live_children(path):
    db = augur.open(path)
    db.put(b"k", b"v")
    snap = db.snapshot()  # noqa: F841 - kept alive on purpose
    it = db.items()  # noqa: F841
    db.close()
    with augur.open(path) as again:
        assert again[b"k"] == b"v"


def test_context_manager_closes(path):
    with augur.open(path) as db:
        db.put(b"k", b"v")
    assert db.closed
    with pytest.raises(augur.ClosedError):
        db.get(b"k")


def _run_child(path):
    code = textwrap.dedent(
        f"""
        import sys, augur
        try:
            db = augur.open({path!r})
        except augur.BusyError as e:
            print("busy:", e)
            sys.exit(3)
        print("value:", db[b"k"])
        db.close()
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_second_process_gets_busy_error(path):
    with augur.open(path) as db:
        db.put(b"k", b"v")
        child = _run_child(path)
        assert child.returncode == 3, child.stdout + child.stderr
        assert "busy:" in child.stdout and "LOCK" in child.stdout
    child = _run_child(path)
    assert child.returncode == 0, child.stdout + child.stderr
    assert "value: b'v'" in child.stdout


def test_same_process_second_open_is_busy(db, path):
    with pytest.raises(augur.BusyError):
        augur.open(path)


def test_not_a_database_directory(tmp_path):
    (tmp_path / "stranger.txt").write_text("not augur")
    with pytest.raises(augur.Error):
        augur.open(str(tmp_path))


def test_corruption_error(path):
    with augur.open(path) as db:
        for i in range(2000):
            db.put(b"%06d" % i, b"v" * 100)
        db.flush()
    tables = [p for p in pathlib.Path(path).iterdir() if p.suffix == ".sst"]
    assert tables, sorted(p.name for p in pathlib.Path(path).iterdir())
    for table in tables:
        data = bytearray(table.read_bytes())
        data[-8:] = b"\x00" * 8  # the footer (its magic)
        table.write_bytes(bytes(data))
    with pytest.raises(augur.CorruptionError):
        with augur.open(path) as db:
            db.get(b"000001")


def test_direct_reads_with_a_small_cache_and_few_open_files(path):
    with augur.open(path, read_mode="direct", cache_mb=1, max_open_files=2, target_file_mb=1,
                    memtable_mb=1) as db:
        for i in range(20000):
            db.put(b"key%06d" % i, b"value %d " % i * 8)
        db.compact()
        for i in range(0, 20000, 7):
            assert db[b"key%06d" % i] == b"value %d " % i * 8
        stats = db.stats()
    assert stats["reads"]["cache"]["capacity_bytes"] == 1 << 20
    assert stats["reads"]["cache"]["misses"] > 0
    assert stats["reads"]["open_files"]["limit"] == 2
    with pytest.raises(augur.InvalidArgumentError, match="max_open_files"):
        augur.open(path, max_open_files=0)


def test_compression_keyword_writes_readable_files_and_refuses_bad_codecs(path):
    with pytest.raises(augur.InvalidArgumentError, match="compression"):
        augur.open(path, compression="snappy")
    with augur.open(path, compression="zstd:3", slot_head_bytes=4) as db:
        for i in range(2000):
            db.put(b"key%06d" % i, b"value %d " % i * 8)
        db.flush()
    with augur.open(path) as db:
        assert db[b"key001234"] == b"value 1234 " * 8
        assert len(list(db.items())) == 2000


def test_missing_current_beside_a_wal_is_a_corruption_error_not_an_empty_database(path):
    # Issue 40, finding 1: a database that never flushed keeps every write in its WAL; with
    # CURRENT lost, open() must refuse rather than start an empty database over it.
    with augur.open(path) as db:
        for i in range(1000):
            db.put(b"%06d" % i, b"v%d" % i)
    assert not any(p.suffix == ".sst" for p in pathlib.Path(path).iterdir())
    current = pathlib.Path(path) / "CURRENT"
    saved = current.read_bytes()
    current.unlink()
    with pytest.raises(augur.CorruptionError, match="CURRENT is missing"):
        augur.open(path)
    with pytest.raises(augur.CorruptionError, match="CURRENT is missing"):
        augur.open(path, create=False)
    current.write_bytes(saved)
    with augur.open(path) as db:
        assert db[b"000999"] == b"v999"

