//! `augur.Db`: an open database, as a mapping from bytes to bytes with lazy range
//! iterators, atomic write batches and snapshots.
//!
//! There is no `len()`: an LSM tree does not know how many live keys it holds. Overwrites
//! and deletions are new entries that shadow older ones in other levels until compaction
//! merges them, so counting means scanning every entry (`sum(1 for _ in db.keys())`).

use crate::batch::WriteBatch;
use crate::bytes::BytesArg;
use crate::convert::json_to_py;
use crate::errors;
use crate::handle::Handle;
use crate::iter::{Mode, RangeIter};
use crate::snapshot::Snapshot;
use crate::view::{RangeArgs, View};
use augur::{WriteBatch as EngineBatch, WriteOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::sync::Arc;

/// An open Augur database (see `augur.open`). Thread-safe: any number of Python threads
/// may share it, and each engine call runs with the GIL released. Not usable in a process
/// forked from the one that opened it: every method raises `ForkedError` there (see
/// `fork.rs`); `path`, `read_only` and `repr()` still answer.
#[pyclass(module = "augur", name = "Db", frozen)]
pub(crate) struct Db {
    view: View,
}

impl Db {
    /// The Python object of a freshly opened database.
    pub(crate) fn new(handle: Handle) -> Self {
        Db {
            view: View {
                handle: Arc::new(handle),
                snapshot: None,
            },
        }
    }

    fn handle(&self) -> &Arc<Handle> {
        &self.view.handle
    }

    /// Applies a one-entry batch.
    fn write_one(&self, py: Python<'_>, batch: EngineBatch, sync: bool) -> PyResult<()> {
        let db = self.handle().writable_db()?;
        py.detach(|| db.write_opt(batch, WriteOptions { sync }))
            .map_err(errors::to_py)
    }
}

/// `seconds` (a non-negative, finite float) in whole milliseconds, rounded up; a
/// `ValueError` naming `what` otherwise.
fn seconds_to_ms(what: &str, seconds: f64) -> PyResult<u64> {
    if !seconds.is_finite() || seconds < 0.0 || seconds * 1000.0 >= u64::MAX as f64 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what} must be a finite number of seconds, not negative, got {seconds}"
        )));
    }
    Ok((seconds * 1000.0).ceil() as u64)
}

#[pymethods]
impl Db {
    /// The value of `key` as bytes, or `default` when the key is absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: BytesArg<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.view.get_or(py, key, default)
    }

    /// `db[key]`: the value of `key`; `KeyError(key)` when it is absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.view.get_item(py, key)
    }

    /// `key in db`: whether `key` has a value.
    fn __contains__(&self, py: Python<'_>, key: BytesArg<'_>) -> PyResult<bool> {
        self.view.contains(py, key)
    }

    /// The values of `keys` in order, `None` for each absent key; one call into the engine.
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.view.multi_get(py, keys)
    }

    /// Stores `value` under `key`. With `sync=True`, returns once the write is durable.
    /// With `ttl` (seconds, a float) or `expire_at` (seconds since the Unix epoch), the key
    /// expires then: from that time on it reads as absent (older values included) and
    /// compaction drops it. A put without them clears an earlier expiry.
    #[pyo3(signature = (key, value, *, sync = false, ttl = None, expire_at = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: BytesArg<'_>,
        value: BytesArg<'_>,
        sync: bool,
        ttl: Option<f64>,
        expire_at: Option<f64>,
    ) -> PyResult<()> {
        let mut batch = EngineBatch::new();
        match (ttl, expire_at) {
            (None, None) => {
                batch.put(key, value);
            }
            (Some(_), Some(_)) => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "give ttl or expire_at, not both",
                ))
            }
            (Some(t), None) => {
                let now = self.handle().db()?.now_unix_ms();
                batch.put_expiring(key, value, now.saturating_add(seconds_to_ms("ttl", t)?));
            }
            (None, Some(at)) => {
                batch.put_expiring(key, value, seconds_to_ms("expire_at", at)?);
            }
        }
        self.write_one(py, batch, sync)
    }

    /// Seconds until `key` expires (a float), `None` when it has a value that never
    /// expires; `KeyError(key)` when it is absent.
    fn ttl(&self, py: Python<'_>, key: BytesArg<'_>) -> PyResult<Option<f64>> {
        let db = self.handle().db()?;
        let found = py
            .detach(|| db.get_with_expiry(key.as_ref()))
            .map_err(errors::to_py)?;
        let Some(found) = found else {
            return Err(pyo3::exceptions::PyKeyError::new_err(
                PyBytes::new(py, key.as_ref()).unbind(),
            ));
        };
        Ok(found
            .expire_at
            .map(|at| at.saturating_sub(db.now_unix_ms()) as f64 / 1000.0))
    }

    /// `db[key] = value`: `put` without sync.
    fn __setitem__(&self, py: Python<'_>, key: BytesArg<'_>, value: BytesArg<'_>) -> PyResult<()> {
        self.put(py, key, value, false, None, None)
    }

    /// Deletes `key` (whether or not it exists). With `sync=True`, returns once durable.
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: BytesArg<'_>, sync: bool) -> PyResult<()> {
        let mut batch = EngineBatch::new();
        batch.delete(key);
        self.write_one(py, batch, sync)
    }

    /// `del db[key]`: unlike a dict, no `KeyError` for an absent key (that would cost a
    /// lookup per delete); use `delete` or check `key in db` first.
    fn __delitem__(&self, py: Python<'_>, key: BytesArg<'_>) -> PyResult<()> {
        self.delete(py, key, false)
    }

    /// A batch of puts and deletes applied atomically by `write()`, or on leaving a `with`
    /// block without an exception (an exception discards it).
    #[pyo3(signature = (*, sync = false))]
    fn write_batch(&self, sync: bool) -> PyResult<WriteBatch> {
        self.handle().writable_db()?;
        Ok(WriteBatch::new(self.handle().clone(), sync))
    }

    /// A consistent read-only view of the current state; close it (or leave its `with`
    /// block) to let compaction drop what only it can see.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let db = self.handle().db()?;
        let snapshot = py.detach(|| db.snapshot());
        Ok(Snapshot::new(
            self.handle().clone(),
            self.handle().adopt(snapshot)?,
        ))
    }

    /// `(key, value)` pairs of `[start, stop)`, or of the keys starting with `prefix`, in key
    /// order (`reverse=True`: descending). Lazy; reads one snapshot taken now.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, prefix = None))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<BytesArg<'_>>,
        stop: Option<BytesArg<'_>>,
        reverse: bool,
        prefix: Option<BytesArg<'_>>,
    ) -> PyResult<RangeIter> {
        let range = RangeArgs {
            start,
            stop,
            reverse,
            prefix,
        };
        self.view.iter(py, range, Mode::Items)
    }

    /// The keys of `items()` with the same arguments.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, prefix = None))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<BytesArg<'_>>,
        stop: Option<BytesArg<'_>>,
        reverse: bool,
        prefix: Option<BytesArg<'_>>,
    ) -> PyResult<RangeIter> {
        let range = RangeArgs {
            start,
            stop,
            reverse,
            prefix,
        };
        self.view.iter(py, range, Mode::Keys)
    }

    /// The values of `items()` with the same arguments.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, prefix = None))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<BytesArg<'_>>,
        stop: Option<BytesArg<'_>>,
        reverse: bool,
        prefix: Option<BytesArg<'_>>,
    ) -> PyResult<RangeIter> {
        let range = RangeArgs {
            start,
            stop,
            reverse,
            prefix,
        };
        self.view.iter(py, range, Mode::Values)
    }

    /// Iterating over the database yields its keys, as iterating over a dict does.
    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIter> {
        let range = RangeArgs {
            start: None,
            stop: None,
            reverse: false,
            prefix: None,
        };
        self.view.iter(py, range, Mode::Keys)
    }

    /// The engine statistics as a dict with the fields of `augur stats --json`.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let db = self.handle().db()?;
        let json = py.detach(|| augur_frontend::stats_view::stats_json(&db.stats()));
        json_to_py(py, &json)
    }

    /// Writes the memtable to an SSTable and waits until every flush is done.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle().writable_db()?;
        py.detach(|| db.flush()).map_err(errors::to_py)
    }

    /// Flushes, then compacts the whole key space down the levels (as `augur compact`).
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle().writable_db()?;
        py.detach(|| {
            db.flush()?;
            db.compact_range(None, None)
        })
        .map_err(errors::to_py)
    }

    /// Makes a consistent, openable copy of the database in the directory `path`, which
    /// must not exist, while other threads keep writing: the memtable is flushed and the
    /// copy holds every write made before the call (and a prefix of those made during it).
    /// Tables and value-log segments are hard-linked where the file system allows (the same
    /// device) and copied otherwise, or always with `copy=True`. Returns a dict with `dir`,
    /// `seqno` (the copy holds the writes up to it), `linked_files`, `linked_bytes`,
    /// `copied_files` and `written_bytes`. Raises `InvalidArgumentError` when `path`
    /// exists and `ReadOnlyError` on a read-only database (it cannot flush).
    #[pyo3(signature = (path, *, copy = false))]
    fn checkpoint(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        copy: bool,
    ) -> PyResult<Py<PyAny>> {
        let db = self.handle().writable_db()?;
        crate::backup::checkpoint(py, &db, path, copy)
    }

    /// Backs the database up into the backup directory `backup_dir` (created if missing)
    /// as a new backup, copying only the files no earlier backup there holds. Returns a
    /// dict with the backup's `id`, `created_unix_ms`, `seqno`, `files`, `size_bytes`,
    /// `shared_bytes`, and what it added: `new_files`, `new_bytes`, `reused_files`. See
    /// `augur.list_backups`, `augur.verify_backup`, `augur.restore_backup`.
    fn backup(&self, py: Python<'_>, backup_dir: std::path::PathBuf) -> PyResult<Py<PyAny>> {
        let db = self.handle().writable_db()?;
        crate::backup::backup(py, &db, backup_dir)
    }

    /// Closes the database: stops background work, flushes buffered log bytes, ends every
    /// snapshot and iterator made from it and releases the directory lock. Idempotent;
    /// later calls on the database raise `ClosedError`. In a forked child it raises
    /// `ForkedError` and touches nothing (the parent's copy is the one to close).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let handle = self.handle();
        py.detach(|| handle.close())
    }

    /// True once `close()` was called.
    #[getter]
    fn closed(&self) -> PyResult<bool> {
        self.handle().is_closed()
    }

    /// True when opened with `read_only=True`.
    #[getter]
    fn read_only(&self) -> bool {
        self.handle().read_only()
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> String {
        self.handle().origin().path().to_string_lossy().into_owned()
    }

    /// `with` support: returns the object itself.
    fn __enter__(slf: Py<Self>) -> PyResult<Py<Self>> {
        slf.get().handle().check()?;
        Ok(slf)
    }

    /// Closes the database on leaving a `with` block; exceptions propagate.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// `<augur.Db "PATH" open|closed>`, or `<augur.Db "PATH" forked>` in a forked child
    /// (where it takes no lock and raises nothing).
    fn __repr__(&self) -> String {
        let state = match self.handle().is_closed() {
            Ok(true) => "closed",
            Ok(false) => "open",
            Err(_) => "forked",
        };
        let path = self.handle().origin().path().display().to_string();
        format!("<augur.Db {path:?} {state}>")
    }
}
