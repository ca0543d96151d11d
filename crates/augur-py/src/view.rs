//! The read methods `Db` and `Snapshot` share: point lookups, `multi_get` and iterators,
//! either at the current state or at a snapshot. Every engine call runs with the GIL
//! released; the lookups of a `multi_get` are done in one such call.

use crate::bytes::BytesArg;
use crate::errors;
use crate::handle::{Cell, Handle};
use crate::iter::{Mode, RangeIter};
use augur::{KeyRange, ScanOptions};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::ops::Bound as KeyBound;
use std::sync::Arc;

/// A database read at the current state (`snapshot: None`) or at a snapshot.
pub(crate) struct View {
    pub(crate) handle: Arc<Handle>,
    pub(crate) snapshot: Option<Cell<augur::Snapshot>>,
}

impl View {
    /// The snapshot to read at, if any.
    ///
    /// # Errors
    /// `ClosedError` when the snapshot was closed.
    fn snapshot(&self) -> PyResult<Option<augur::Snapshot>> {
        match &self.snapshot {
            None => Ok(None),
            Some(cell) => cell
                .lock()
                .clone()
                .map(Some)
                .ok_or_else(|| errors::closed("the snapshot")),
        }
    }

    /// The value of `key`, or `None`.
    pub(crate) fn get(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        let db = self.handle.db()?;
        let snapshot = self.snapshot()?;
        py.detach(|| match &snapshot {
            Some(s) => db.get_at(key, s),
            None => db.get(key),
        })
        .map_err(errors::to_py)
    }

    /// `get(key, default)`: the value as `bytes`, or `default`.
    pub(crate) fn get_or<'py>(
        &self,
        py: Python<'py>,
        key: BytesArg<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.get(py, key.as_ref())? {
            Some(v) => PyBytes::new(py, &v).into_any(),
            None => default.unwrap_or_else(|| py.None().into_bound(py)),
        })
    }

    /// `view[key]`: the value, or `KeyError(key)`.
    pub(crate) fn get_item<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let k: BytesArg<'_> = key.extract()?;
        match self.get(py, k.as_ref())? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `key in view`.
    pub(crate) fn contains(&self, py: Python<'_>, key: BytesArg<'_>) -> PyResult<bool> {
        Ok(self.get(py, key.as_ref())?.is_some())
    }

    /// The values of `keys` (any iterable of bytes-like keys), `None` for absent ones.
    pub(crate) fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let objects: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
        let args: Vec<BytesArg<'_>> = objects
            .iter()
            .map(|o| o.extract())
            .collect::<PyResult<_>>()?;
        let db = self.handle.db()?;
        let snapshot = self.snapshot()?;
        let values = py
            .detach(|| {
                args.iter()
                    .map(|k| match &snapshot {
                        Some(s) => db.get_at(k, s),
                        None => db.get(k),
                    })
                    .collect::<augur::Result<Vec<_>>>()
            })
            .map_err(errors::to_py)?;
        let out = PyList::empty(py);
        for v in values {
            match v {
                Some(v) => out.append(PyBytes::new(py, &v))?,
                None => out.append(py.None())?,
            }
        }
        Ok(out)
    }

    /// An iterator over `[start, stop)` (or the keys starting with `prefix`), forward or
    /// reversed, yielding `mode`.
    ///
    /// # Errors
    /// `InvalidArgumentError` when `prefix` is given with `start` or `stop`.
    pub(crate) fn iter(
        &self,
        py: Python<'_>,
        bounds: RangeArgs<'_>,
        mode: Mode,
    ) -> PyResult<RangeIter> {
        let range = bounds.key_range()?;
        let db = self.handle.db()?;
        let options = ScanOptions {
            reverse: bounds.reverse,
            snapshot: self.snapshot()?,
            value_readahead: None,
            keys_only: false,
        };
        // Creating a scan registers a snapshot and captures the memtables and version.
        let scan = py.detach(|| db.scan_with(range, &options));
        let cell = self.handle.adopt(scan)?;
        if let Some(snapshot) = &self.snapshot {
            // Closing the snapshot ends the iterators made from it.
            snapshot.adopt(&cell)?;
        }
        Ok(RangeIter::new(cell, mode))
    }
}

/// The range arguments of `items()`, `keys()` and `values()`.
pub(crate) struct RangeArgs<'a> {
    /// First key (inclusive).
    pub(crate) start: Option<BytesArg<'a>>,
    /// End key (exclusive).
    pub(crate) stop: Option<BytesArg<'a>>,
    /// Iterate from the end of the range to its start.
    pub(crate) reverse: bool,
    /// Only the keys starting with these bytes.
    pub(crate) prefix: Option<BytesArg<'a>>,
}

impl RangeArgs<'_> {
    /// The engine range: `[start, stop)`, or the keys starting with `prefix`.
    fn key_range(&self) -> PyResult<KeyRange> {
        let owned = |b: &Option<BytesArg<'_>>| b.as_ref().map(|k| k.as_ref().to_vec());
        if let Some(prefix) = owned(&self.prefix) {
            if self.start.is_some() || self.stop.is_some() {
                return Err(errors::invalid_argument(
                    "prefix cannot be combined with start or stop",
                ));
            }
            let end = match prefix_successor(&prefix) {
                Some(end) => KeyBound::Excluded(end),
                None => KeyBound::Unbounded,
            };
            return Ok((KeyBound::Included(prefix), end));
        }
        let start = owned(&self.start).map_or(KeyBound::Unbounded, KeyBound::Included);
        let stop = owned(&self.stop).map_or(KeyBound::Unbounded, KeyBound::Excluded);
        Ok((start, stop))
    }
}

/// The smallest key greater than every key that starts with `prefix`, or `None` when there
/// is none (the prefix is empty or all `0xff`).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix.get(..=last)?.to_vec();
    if let Some(b) = end.last_mut() {
        *b += 1;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::prefix_successor;

    #[test]
    fn prefix_successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
