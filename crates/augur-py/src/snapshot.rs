//! `augur.Snapshot`: the database as it was when the snapshot was taken, with the read
//! methods of `Db`. Holding it keeps the versions it can see alive through compaction, so
//! close it (or use it in a `with` block) when done.

use crate::bytes::BytesArg;
use crate::handle::{Cell, Handle, Owner};
use crate::iter::{Mode, RangeIter};
use crate::view::{RangeArgs, View};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::sync::Arc;

/// A consistent read-only view of the database at one point in time (see `Db.snapshot`).
/// Like its database, it raises `ForkedError` in a forked child.
#[pyclass(module = "augur", name = "Snapshot", frozen)]
pub(crate) struct Snapshot {
    view: View,
}

impl Snapshot {
    /// The Python object of the engine snapshot in `cell`.
    pub(crate) fn new(handle: Arc<Handle>, cell: Cell<augur::Snapshot>) -> Self {
        Snapshot {
            view: View {
                handle,
                snapshot: Some(cell),
            },
        }
    }
}

#[pymethods]
impl Snapshot {
    /// The value of `key` at the snapshot, or `default` when it was absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: BytesArg<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.view.get_or(py, key, default)
    }

    /// `snapshot[key]`: the value of `key`; `KeyError(key)` when it is absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.view.get_item(py, key)
    }

    /// `key in snapshot`: whether `key` has a value.
    fn __contains__(&self, py: Python<'_>, key: BytesArg<'_>) -> PyResult<bool> {
        self.view.contains(py, key)
    }

    /// The values of `keys` at the snapshot, `None` for each absent key.
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.view.multi_get(py, keys)
    }

    /// `(key, value)` pairs at the snapshot; the arguments of `Db.items`.
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

    /// Keys at the snapshot; the arguments of `Db.items`.
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

    /// Values at the snapshot; the arguments of `Db.items`.
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

    /// Iterating over a snapshot yields its keys.
    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIter> {
        let range = RangeArgs {
            start: None,
            stop: None,
            reverse: false,
            prefix: None,
        };
        self.view.iter(py, range, Mode::Keys)
    }

    /// Releases the snapshot and ends the iterators made from it: later reads through it,
    /// and `next()` on those iterators, raise `ClosedError`. Idempotent. (An iterator made
    /// from a snapshot that is garbage-collected without `close()` keeps its own view.)
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(cell) = &self.view.snapshot {
            cell.check()?;
            py.detach(|| cell.close(Owner::Snapshot));
        }
        Ok(())
    }

    /// `with` support: returns the object itself.
    fn __enter__(slf: Py<Self>) -> PyResult<Py<Self>> {
        slf.get().view.handle.check()?;
        Ok(slf)
    }

    /// Releases the snapshot on leaving a `with` block; exceptions propagate.
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
}
