"""Augur: an embedded LSM key-value store with learned indexes.

Open a database with :func:`open`; keys and values are bytes-like (``bytes``,
``bytearray``, ``memoryview``) and values come back as ``bytes``. Every engine call
that can block runs with the GIL released.

A database belongs to the process that opened it. In a process forked from that one
(``os.fork``, ``multiprocessing`` with the fork start method), every use of it, or of a
snapshot, iterator or batch made from it, raises :class:`ForkedError` (its ``repr()``,
``path`` and ``read_only`` still answer). Dropping those objects in the child, as at its
exit, is silent and touches no file. To use a database in a child, open it there: close
it in the parent before forking, since a child forked while it was open inherits the
descriptor holding its lock and cannot open it (``BusyError``) until it exits.
"""

from os import PathLike
from types import TracebackType
from typing import Dict, Iterable, NoReturn, Iterator as _Iterator, List, Mapping, Optional, Tuple, TypeVar, Union, final, overload

_Bytes = Union[bytes, bytearray, memoryview]
_T = TypeVar("_T")

__version__: str
__all__ = [
    "BusyError",
    "ClosedError",
    "CorruptionError",
    "Db",
    "Error",
    "ForkedError",
    "InvalidArgumentError",
    "Iterator",
    "PoisonedError",
    "ReadOnlyError",
    "ResourceLimitError",
    "Snapshot",
    "TaskPanickedError",
    "WriteBatch",
    "__version__",
    "_engine_defaults",
    "_raise_engine_error",
    "list_backups",
    "open",
    "purge_backups",
    "restore_backup",
    "verify_backup",
]

class Error(Exception):
    """Base class of every error the Augur engine reports."""

class CorruptionError(Error):
    """A file of the database is damaged or written by an unsupported format version."""

class BusyError(Error):
    """The database directory is locked by another process or another open handle."""

class ClosedError(Error):
    """The database, snapshot or iterator was used after it was closed."""

class ForkedError(Error):
    """The database, or a snapshot, iterator or batch made from it, was used in a process
    forked from the one that opened it.

    The child has none of the engine's background threads and the files are the
    parent's, so every use there raises this error, naming both processes. Open the
    database in the child instead, with the parent's handle closed before the fork.
    """

class InvalidArgumentError(Error, ValueError):
    """A bad argument or option; the message names it."""

class ReadOnlyError(Error):
    """A write, flush, compaction or garbage collection asked of a database opened with
    ``read_only=True``. Nothing was changed; open the database without ``read_only`` to
    change it."""

class ResourceLimitError(Error):
    """The work would pass a limit of the machine or the process (the kernel's mapping
    limit ``vm.max_map_count``, the open-files limit); the message names the limit and the
    options that avoid it (``max_open_files``, ``target_file_mb``, ``read_mode``)."""

class PoisonedError(Error):
    """An earlier write, sync or background job failed, so the database refuses writes
    until it is reopened (its state on disk is not known). The exception of that first
    failure is this one's ``__cause__``."""

class TaskPanickedError(Error):
    """A task the engine ran on a thread of its own (a sub-compaction) panicked: a bug in
    Augur. The work was abandoned; a background write poisons the database."""

def open(
    path: Union[str, "PathLike[str]"],
    *,
    create: bool = True,
    read_only: bool = False,
    value_separation_threshold: int = 1024,
    memtable_mb: int = 64,
    read_mode: str = "mmap",
    cache_mb: int = 64,
    max_open_files: Optional[int] = None,
    bloom_bits: int = 10,
    compression: str = "none",
    no_compress_keys: bool = False,
    slot_head_bytes: Optional[int] = None,
    no_block_prefixes: bool = False,
    target_file_mb: int = 32,
    static_level_sizes: bool = False,
    max_subcompactions: Optional[int] = None,
    delayed_write_mb: int = 16,
    max_immutable_memtables: int = 2,
    compaction_nice: int = 10,
    level0_file_num_compaction_trigger: int = 4,
    level0_slowdown_writes_trigger: int = 8,
    level0_stop_writes_trigger: int = 12,
    index: str = "plr",
    compaction: Optional[str] = None,
    flsm_top_level_bits: int = 20,
    flsm_bit_decrement: int = 2,
    max_sstables_per_guard: int = 4,
    flsm_level_size_runs: int = 4,
    seek_compaction_threshold: int = 10,
    parallel_seek_threads: int = 0,
    learning: str = "at-build",
    learning_wait_ms: int = 50,
    lazy_learning_reads: int = 1,
    lazy_learning_reads_per_key: float = 0.5,
    error_bound: int = 8,
    error_bound_per_level: Union[None, str, Mapping[int, int]] = None,
    model_memory_budget: str = "fence",
    pgm_recursive_error: int = 4,
    radix_bits: int = 18,
    rmi_leaves: int = 0,
    rmi_root: str = "linear",
    fiting_fanout: int = 16,
    string_run_limit: int = 16,
    value_log_gc_ratio: float = 0.5,
    no_level_merge: bool = False,
    level_merge_threshold: float = 0.1,
    level_models: bool = False,
    accept_wal_loss: bool = False,
    scan_readahead: int = 64,
    scan_fetch_threads: int = 0,
) -> Db:
    """Open (by default create) the database in the directory ``path``.

    The keyword arguments are the engine options of the ``augur`` CLI with the same
    names and defaults: ``index`` is one of fence, plr, pgm, rs, rmi, fiting, plex,
    string (the string tree, for keys whose distinguishing bytes sit deep such as paths
    and URLs; ``string_run_limit`` is its redirect threshold), auto (the model chooser,
    within ``model_memory_budget``: "fence", "unlimited" or bytes per key such as "0.5");
    ``learning`` one of never, at-build, always, cost-benefit, lazy, offline;
    ``compaction`` leveled or flsm (``None``, the default: the style the database was
    created with, leveled for a new one; a conflicting style raises); ``read_mode`` mmap,
    pread or direct (O_DIRECT through a page cache of ``cache_mb`` MiB; under every mode
    ``cache_mb`` also bounds the cache of decompressed value chunks of compressed values);
    ``max_open_files`` bounds the table files held open (``None``: all); ``rmi_root`` linear or cubic; ``compression`` none, lz4, zstd or
    zstd:LEVEL (values compressed as written; files of any setting stay readable);
    ``no_compress_keys`` compresses values only (by default, with ``compression``, each
    SSTable block's keys are compressed with the same codec where that saves an eighth);
    ``slot_head_bytes`` the SSTable slot's key-head width, 0 to 65535 (``None``: chosen per
    file; key bytes past the head are read from the block's suffix chunk when heads tie, so
    0 and other narrow heads trade speed for size); ``no_block_prefixes`` stores every key
    past the file's prefix only, as before format 5 (by default each SSTable block's shared
    key prefix is stored once where that narrows the slots; for comparisons);
    ``static_level_sizes`` LevelDB's fixed level sizes instead of dynamic ones;
    ``max_subcompactions`` threads one compaction may use (``None``: the engine's default,
    the cores up to 4); ``delayed_write_mb`` MiB/s writes may ingest once L0 reaches its
    slowdown trigger (0: never slowed); ``max_immutable_memtables`` full memtables that
    may wait for their flush before writes stop; ``compaction_nice`` the nice value a leveled
    database's compaction thread adds to its CPU priority on Linux (writers and flushes run
    first; 0 keeps the process's); ``level0_file_num_compaction_trigger``,
    ``level0_slowdown_writes_trigger`` and ``level0_stop_writes_trigger`` the L0 file counts
    that start a compaction, slow writes down and stop them; ``no_level_merge`` leaves separated values where
    they are when compactions reach the last level (level merge rewrites the ones out of
    key order once more than ``level_merge_threshold`` of a merge's are). A bad value raises
    :class:`InvalidArgumentError` (a ``ValueError``) naming the option.
    ``create=False`` refuses to create a missing database. ``read_only=True`` opens for
    reading only: the open writes nothing and takes no lock, so it works beside a process
    that has the database open for writing, and it sees the database as of the open;
    writes raise :class:`ReadOnlyError`, and it never creates. Raises :class:`BusyError`
    when another process has the database open for writing, :class:`CorruptionError` when
    a file is damaged and :class:`ResourceLimitError` when it holds more tables than the
    machine's mapping or open-files limit lets it open (see ``max_open_files``).
    """

def list_backups(backup_dir: Union[str, "PathLike[str]"]) -> List[Dict[str, int]]:
    """The backups in ``backup_dir``, oldest first: dicts with ``id``, ``created_unix_ms``,
    ``seqno``, ``files``, ``size_bytes`` and ``shared_bytes``."""

def verify_backup(backup_dir: Union[str, "PathLike[str]"], id: int) -> Dict[str, object]:
    """Check every file of backup ``id`` (size and CRC32C): ``ok``, ``files_checked``,
    ``bytes_checked`` and ``problems`` (dicts with ``file``, ``path``, ``problem``)."""

def restore_backup(
    backup_dir: Union[str, "PathLike[str]"], id: int, target: Union[str, "PathLike[str]"]
) -> Dict[str, object]:
    """Restore backup ``id`` into ``target`` (missing or empty): ``id``, ``dir``, ``seqno``,
    ``files``, ``bytes``. Raises :class:`CorruptionError` for a damaged backup."""

def purge_backups(backup_dir: Union[str, "PathLike[str]"], keep: int) -> Dict[str, object]:
    """Delete all backups but the newest ``keep`` and the files no remaining one holds:
    ``deleted`` (ids), ``files_removed``, ``bytes_removed``."""

def _engine_defaults() -> Dict[str, object]:
    """The engine's default of each ``open()`` keyword (for tests)."""

def _raise_engine_error(kind: str) -> NoReturn:
    """Raises the exception an engine error of ``kind`` becomes (for tests)."""

@final
class Iterator(_Iterator[_T]):
    """A lazy iterator over a key range, reading one snapshot in batches.

    Once its database, or the snapshot it was made from, is closed, ``next()`` raises
    :class:`ClosedError` at once, even with entries still buffered.
    """

    def __iter__(self) -> "Iterator[_T]": ...
    def __next__(self) -> _T:
        """The next entry; ``ClosedError`` once the database or snapshot is closed."""
    def close(self) -> None:
        """Stop early and release the iterator's snapshot."""

@final
class WriteBatch:
    """Puts and deletes applied atomically by :meth:`write` or on leaving ``with``."""

    def put(self, key: _Bytes, value: _Bytes) -> None:
        """Add a put of ``value`` under ``key``."""
    def delete(self, key: _Bytes) -> None:
        """Add a delete of ``key``."""
    def clear(self) -> None:
        """Drop every operation added so far."""
    def write(self) -> None:
        """Apply the operations atomically, then empty the batch."""
    def __len__(self) -> int: ...
    def __enter__(self) -> "WriteBatch": ...
    def __exit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        """Write the batch if the block ended normally, discard it if it raised."""

@final
class Snapshot:
    """A consistent read-only view of the database at one point in time."""

    @overload
    def get(self, key: _Bytes) -> Optional[bytes]: ...
    @overload
    def get(self, key: _Bytes, default: _T) -> Union[bytes, _T]: ...
    def __getitem__(self, key: _Bytes, /) -> bytes: ...
    def __contains__(self, key: _Bytes, /) -> bool: ...
    def multi_get(self, keys: Iterable[_Bytes]) -> List[Optional[bytes]]: ...
    def items(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        *,
        reverse: bool = False,
        prefix: Optional[_Bytes] = None,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    def keys(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        *,
        reverse: bool = False,
        prefix: Optional[_Bytes] = None,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        *,
        reverse: bool = False,
        prefix: Optional[_Bytes] = None,
    ) -> Iterator[bytes]: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None:
        """Release the snapshot and end the iterators made from it.

        Later reads through it, and ``next()`` on those iterators, raise ClosedError.
        """
    def __enter__(self) -> "Snapshot": ...
    def __exit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

@final
class Db:
    """An open Augur database: a mapping of bytes to bytes, ordered by key.

    There is no ``len()``: an LSM tree does not know its number of live keys without
    scanning every entry (overwrites and deletes shadow older entries until compaction).
    """

    @property
    def closed(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @overload
    def get(self, key: _Bytes) -> Optional[bytes]: ...
    @overload
    def get(self, key: _Bytes, default: _T) -> Union[bytes, _T]: ...
    def __getitem__(self, key: _Bytes, /) -> bytes:
        """The value of ``key``; ``KeyError`` when it is absent."""
    def __contains__(self, key: _Bytes, /) -> bool: ...
    def multi_get(self, keys: Iterable[_Bytes]) -> List[Optional[bytes]]:
        """The values of ``keys`` in order, ``None`` for absent keys."""
    def put(
        self,
        key: _Bytes,
        value: _Bytes,
        *,
        sync: bool = False,
        ttl: Optional[float] = None,
        expire_at: Optional[float] = None,
    ) -> None:
        """Store ``value`` under ``key``; with ``ttl`` (seconds) or ``expire_at`` (seconds
        since the Unix epoch) the key reads as absent from then on."""
    def ttl(self, key: _Bytes) -> Optional[float]:
        """Seconds until ``key`` expires, ``None`` if it never does; ``KeyError`` if absent."""
    def __setitem__(self, key: _Bytes, value: _Bytes, /) -> None: ...
    def delete(self, key: _Bytes, *, sync: bool = False) -> None: ...
    def __delitem__(self, key: _Bytes, /) -> None:
        """Delete ``key``; no ``KeyError`` when it is absent."""
    def write_batch(self, *, sync: bool = False) -> WriteBatch: ...
    def snapshot(self) -> Snapshot: ...
    def items(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        *,
        reverse: bool = False,
        prefix: Optional[_Bytes] = None,
    ) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs of ``[start, stop)`` or of ``prefix``, lazily."""
    def keys(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        *,
        reverse: bool = False,
        prefix: Optional[_Bytes] = None,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        *,
        reverse: bool = False,
        prefix: Optional[_Bytes] = None,
    ) -> Iterator[bytes]: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def stats(self) -> Dict[str, object]:
        """Engine statistics: the fields of ``augur stats --json``."""
    def flush(self) -> None: ...
    def compact(self) -> None: ...
    def checkpoint(
        self, path: Union[str, "PathLike[str]"], *, copy: bool = False
    ) -> Dict[str, object]:
        """A consistent, openable copy in the new directory ``path`` (hard links where
        possible, copies with ``copy=True``): ``dir``, ``seqno``, ``linked_files``,
        ``linked_bytes``, ``copied_files``, ``written_bytes``."""
    def backup(self, backup_dir: Union[str, "PathLike[str]"]) -> Dict[str, int]:
        """A new incremental backup in ``backup_dir``: its listing (see
        :func:`list_backups`) plus ``new_files``, ``new_bytes``, ``reused_files``."""
    def close(self) -> None:
        """Stop background work, flush the logs, end every snapshot and iterator made from
        the database and release its lock. Idempotent. In a forked child it raises
        :class:`ForkedError` and touches nothing."""
    def __enter__(self) -> "Db": ...
    def __exit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
