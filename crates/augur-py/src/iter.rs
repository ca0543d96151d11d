//! Lazy iterators over a key range (`items()`, `keys()`, `values()`): each holds a zero-copy
//! engine scan on a snapshot and copies its pairs into a batch buffer with the GIL released,
//! so the per-item cost seen by Python is building the `bytes` objects and nothing else.
//!
//! Batches start small (a short range, or an iterator abandoned after a few items, reads
//! little ahead) and double up to [`MAX_BATCH_ITEMS`] entries or [`MAX_BATCH_BYTES`] bytes.
//! An engine error after some pairs of a batch is raised once those pairs have been
//! yielded; the iterator is then finished. Once the database or the snapshot it reads is
//! closed, `next()` raises `ClosedError` at once, whatever is still buffered: the buffer
//! is an implementation detail, not a view that outlives its source.

use crate::errors;
use crate::handle::{Cell, Owner};
use augur::Scan;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

/// Entries of the first batch.
const FIRST_BATCH_ITEMS: usize = 16;
/// Most entries per batch.
const MAX_BATCH_ITEMS: usize = 1024;
/// A batch stops growing past this many bytes of keys and values.
const MAX_BATCH_BYTES: usize = 512 << 10;

/// What an iterator yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `(key, value)` tuples.
    Items,
    /// Keys.
    Keys,
    /// Values.
    Values,
}

impl Mode {
    /// Byte strings per entry.
    fn pieces(self) -> usize {
        match self {
            Mode::Items => 2,
            Mode::Keys | Mode::Values => 1,
        }
    }
}

/// Byte strings copied out of the scan: piece `i` is `data[ends[i-1]..ends[i]]`.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    ends: Vec<usize>,
    /// The next piece to hand out.
    pos: usize,
}

impl Batch {
    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.pos = 0;
    }

    fn push(&mut self, piece: &[u8]) {
        self.data.extend_from_slice(piece);
        self.ends.push(self.data.len());
    }

    fn is_drained(&self) -> bool {
        self.pos >= self.ends.len()
    }

    /// The next piece (REQUIRES: not drained).
    fn take(&mut self) -> &[u8] {
        let start = match self.pos.checked_sub(1) {
            Some(prev) => self.ends.get(prev).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(self.pos).copied().unwrap_or(start);
        self.pos += 1;
        self.data.get(start..end).unwrap_or_default()
    }

    /// Copies up to `max_items` entries of `scan` in. Returns false when the scan is over.
    fn fill(&mut self, scan: &mut Scan, mode: Mode, max_items: usize) -> augur::Result<bool> {
        self.clear();
        for _ in 0..max_items {
            let Some((key, value)) = scan.next()? else {
                return Ok(false);
            };
            match mode {
                Mode::Items => {
                    self.push(key);
                    self.push(value);
                }
                Mode::Keys => self.push(key),
                Mode::Values => self.push(value),
            }
            if self.data.len() >= MAX_BATCH_BYTES {
                break;
            }
        }
        Ok(true)
    }
}

/// A lazy iterator over a range of the database (or of a snapshot), in key order or its
/// reverse. It reads one consistent state: writes made after it was created are not seen.
/// Not meant to be shared between threads; raises `ForkedError` in a forked child.
#[pyclass(module = "augur", name = "Iterator")]
pub(crate) struct RangeIter {
    /// The engine scan; `None` once finished or when its database or snapshot was closed
    /// (which `scan.closed_by()` then names).
    scan: Cell<Scan>,
    mode: Mode,
    batch: Batch,
    /// Entries to read into the next batch.
    next_items: usize,
    /// The scan has nothing left (after the current batch).
    finished: bool,
    /// An error to raise once the current batch is drained.
    error: Option<augur::Error>,
}

impl RangeIter {
    /// An iterator yielding `mode` from `scan`.
    pub(crate) fn new(scan: Cell<Scan>, mode: Mode) -> Self {
        RangeIter {
            scan,
            mode,
            batch: Batch::default(),
            next_items: FIRST_BATCH_ITEMS,
            finished: false,
            error: None,
        }
    }

    /// Reads the next batch with the GIL released.
    fn refill(&mut self, py: Python<'_>) -> PyResult<()> {
        let (scan, batch, mode, items) = (&self.scan, &mut self.batch, self.mode, self.next_items);
        let filled = py.detach(|| {
            let mut guard = scan.lock();
            let s = guard.as_mut()?;
            let result = batch.fill(s, mode, items);
            if !matches!(result, Ok(true)) {
                // Over (or failed): let go of the snapshot now, not when Python drops us.
                guard.take();
            }
            Some(result)
        });
        self.next_items = (self.next_items * 2).min(MAX_BATCH_ITEMS);
        match filled {
            None => {
                self.finished = true;
                Err(self.closed_error(self.scan.closed_by().unwrap_or(Owner::Database)))
            }
            Some(Ok(more)) => {
                self.finished = !more;
                Ok(())
            }
            Some(Err(e)) => {
                self.finished = true;
                self.error = Some(e);
                Ok(())
            }
        }
    }

    /// The `ClosedError` of an iterator whose database or snapshot was closed.
    fn closed_error(&self, owner: Owner) -> PyErr {
        errors::closed(&format!("the {} of this iterator", owner.name()))
    }
}

#[pymethods]
impl RangeIter {
    /// An iterator is its own iterator.
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next item; `StopIteration` at the end of the range (or after `close()`);
    /// `ClosedError` once the database or the snapshot it reads is closed, even with
    /// entries buffered.
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.scan.check()?;
        if self.finished && self.batch.is_drained() && self.error.is_none() {
            // Exhausted, or stopped by `close()`: nothing is read, so nothing to check.
            return Ok(None);
        }
        // Checked before each buffered entry too (an atomic load): the entries were read
        // from a snapshot that closing has just released.
        if let Some(owner) = self.scan.closed_by() {
            self.batch = Batch::default();
            return Err(self.closed_error(owner));
        }
        if self.batch.is_drained() {
            if let Some(e) = self.error.take() {
                return Err(errors::to_py(e));
            }
            if self.finished {
                return Ok(None);
            }
            self.refill(py)?;
            if self.batch.is_drained() {
                return match self.error.take() {
                    Some(e) => Err(errors::to_py(e)),
                    None => Ok(None),
                };
            }
        }
        let first = PyBytes::new(py, self.batch.take());
        if self.mode.pieces() == 1 {
            return Ok(Some(first.into_any()));
        }
        let second = PyBytes::new(py, self.batch.take());
        Ok(Some(PyTuple::new(py, [first, second])?.into_any()))
    }

    /// Stops the iteration early and lets go of its snapshot; later calls yield nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        self.scan.check()?;
        self.batch.clear();
        self.finished = true;
        self.error = None;
        let scan = &self.scan;
        py.detach(|| drop(scan.lock().take()));
        Ok(())
    }
}
