//! `augur.WriteBatch`: puts and deletes collected in memory and applied atomically, in one
//! engine write with the GIL released. Used as a context manager, it commits when the block
//! ends normally and discards everything when it raises.

use crate::bytes::BytesArg;
use crate::errors;
use crate::handle::Handle;
use augur::WriteOptions;
use pyo3::prelude::*;
use std::sync::Arc;

/// An atomic group of writes (see `Db.write_batch`). Not meant to be shared between threads;
/// like its database, it raises `ForkedError` in a forked child.
#[pyclass(module = "augur", name = "WriteBatch")]
pub(crate) struct WriteBatch {
    handle: Arc<Handle>,
    batch: augur::WriteBatch,
    sync: bool,
}

impl WriteBatch {
    /// An empty batch for the database of `handle`.
    pub(crate) fn new(handle: Arc<Handle>, sync: bool) -> Self {
        WriteBatch {
            handle,
            batch: augur::WriteBatch::new(),
            sync,
        }
    }
}

#[pymethods]
impl WriteBatch {
    /// Adds a put of `value` under `key`; later operations on the same key win.
    fn put(&mut self, key: BytesArg<'_>, value: BytesArg<'_>) -> PyResult<()> {
        self.handle.check()?;
        self.batch.put(key, value);
        Ok(())
    }

    /// Adds a delete of `key`.
    fn delete(&mut self, key: BytesArg<'_>) -> PyResult<()> {
        self.handle.check()?;
        self.batch.delete(key);
        Ok(())
    }

    /// Drops every operation added so far.
    fn clear(&mut self) -> PyResult<()> {
        self.handle.check()?;
        self.batch.clear();
        Ok(())
    }

    /// The number of operations added.
    fn __len__(&self) -> PyResult<usize> {
        self.handle.check()?;
        Ok(self.batch.len())
    }

    /// Applies the operations atomically, then empties the batch (it can be reused).
    fn write(&mut self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle.writable_db()?;
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let options = WriteOptions { sync: self.sync };
        py.detach(|| db.write_opt(batch, options))
            .map_err(errors::to_py)
    }

    /// `with` support: returns the object itself.
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.try_borrow()?.handle.check()?;
        Ok(slf)
    }

    /// Writes the batch when the block ended normally; discards it when it raised. The
    /// exception, if any, propagates.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.handle.check()?;
        if exc_type.is_some() {
            self.batch.clear();
        } else {
            self.write(py)?;
        }
        Ok(false)
    }
}
